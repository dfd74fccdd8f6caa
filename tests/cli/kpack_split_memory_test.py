"""split of a HIP library whose bundles are CCOBs (clang --offload-compress;
ROCm 6.x libraries ship them) keeps memory flat (issue 33): a 128 KB library
holding two compressed bundles that decompress to 1.1 GiB (three 192 MiB code
objects each) is split under an address-space limit of 512 MiB, with
`--compress none` and `--compress zstd`, and within a resident budget. (It
held the decoded bundles in memory until the archives were written: out of
memory under the limit, 1.2 GB resident.) Each archive's code objects are
those LLVM 19's clang-offload-bundler unbundles from the library's bundles,
byte for byte (zstd frames decoded with python3-zstandard)."""
import hashlib
import os
import resource
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data', 'kpack'))
import harness  # noqa: E402
from harness import OT, check  # noqa: E402
import generate  # noqa: E402  Debian's python3-msgpack and python3-zstandard
import synthetic_ccob  # noqa: E402

ARCHES = ('gfx906', 'gfx90a', 'gfx1100')
BIG = 192 << 20          # each code object's bytes
LIMIT = 512 << 20        # the address-space limit: below one bundle's decompressed size (576 MiB)


def ccob(bundle):
    """The CCOB of a bundle of the host entry and one code object of BIG bytes
    per architecture (synthetic_ccob), each seeded by its bundle and arch."""
    return synthetic_ccob.ccob([b'hipv4-amdgcn-amd-amdhsa--' + a.encode() for a in ARCHES],
                               [synthetic_ccob.code_object(b'%d %s' % (bundle, a.encode()), BIG) for a in ARCHES])


ASM = synthetic_ccob.hip_library_asm(['b0.ccob', 'b1.ccob'])


def archive_blobs(path, zstd):
    """{binary key: sha256 of its code object} of the archive at `path`."""
    msgpack, zstandard = generate.msgpack, generate.zstandard
    with open(path, 'rb') as f:
        data = f.read(64)
        toc_at = struct.unpack_from('<Q', data, 8)[0]
        f.seek(toc_at)
        toc = msgpack.unpackb(f.read(), raw=False, strict_map_key=False)
        ((arch, _),) = {a: 0 for keys in toc['toc'].values() for a in keys}.items()
        out = {}
        if zstd:
            f.seek(toc['zstd_offset'])
            count = struct.unpack('<I', f.read(4))[0]
            frames = []
            for _ in range(count):
                size = struct.unpack('<I', f.read(4))[0]
                frames.append((f.tell(), size))
                f.seek(size, 1)
        for key, per_arch in toc['toc'].items():
            entry = per_arch[arch]
            h = hashlib.sha256()
            if zstd:
                at, size = frames[entry['ordinal']]
                f.seek(at)
                reader = zstandard.ZstdDecompressor().stream_reader(f.read(size))
                while True:
                    b = reader.read(16 << 20)
                    if not b:
                        break
                    h.update(b)
            else:
                blob = toc['blobs'][entry['ordinal']]
                f.seek(blob['offset'])
                left = blob['size']
                while left:
                    b = f.read(min(left, 16 << 20))
                    h.update(b)
                    left -= len(b)
            out[key] = h.hexdigest()
        return arch, out


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        while True:
            b = f.read(16 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)


def bomb():
    """A CCOB (v2, zstd) declaring 3 GiB of 'A's (RLE blocks): no bundle."""
    size = 3 << 30
    frame = struct.pack('<I', 0xFD2FB528) + bytes([0xC0, (27 - 10) << 3]) + struct.pack('<Q', size)
    left = size
    while left:
        k = min(1 << 17, left)
        left -= k
        frame += struct.pack('<I', (left == 0) | (1 << 1) | (k << 3))[:3] + b'A'
    return b'CCOB' + struct.pack('<HHIIQ', 2, 1, 24 + len(frame), size, 0) + frame


def refused(root):
    """A library whose CCOB declares 3 GiB of no bundle is refused from its
    first bytes: one line, no output, no 3 GiB scratch file written first."""
    d = harness.Folder(root, files={'b0.ccob': bomb(), 'b1.ccob': bomb(), 'big.s': ASM.encode()})
    r = harness.run([harness.CLANG, '-shared', '-fPIC', '-nostdlib', '-o', 'libbomb.so', 'big.s'], cwd=d.dir)
    check('the bomb library links', r.returncode == 0, r.stderr)
    rc, kib = harness.peak_resident_kib([OT, 'split', 'libbomb.so', '-o', 'out'], cwd=d.dir)
    r = harness.run([OT, 'split', 'libbomb.so', '-o', 'out'], cwd=d.dir, env={'TMPDIR': d.dir}, timeout=60)
    want = 'offloadtool split: error: libbomb.so: the compressed bundle holds no binary offload bundle, at offset 0x1000\n'
    check('split of a library whose CCOB declares 3 GiB of no bundle: refused with one line',
          r.returncode == 1 and r.stderr.decode() == want, 'rc=%s\n%s' % (r.returncode, r.stderr.decode()))
    check('... nothing written', sorted(os.listdir(d.dir)) == ['b0.ccob', 'b1.ccob', 'big.s', 'libbomb.so'],
          str(sorted(os.listdir(d.dir))))
    check('... within 64 MiB of the start', rc == 1 and kib <= harness.resident_budget_kib(64), '%d KiB' % kib)


def body(root):
    refused(root)
    d = harness.Folder(root, files={'b0.ccob': ccob(0), 'b1.ccob': ccob(1), 'big.s': ASM.encode()})
    r = harness.run([harness.CLANG, '-shared', '-fPIC', '-nostdlib', '-o', 'libbig.so', 'big.s'], cwd=d.dir)
    check('the library links', r.returncode == 0, r.stderr)
    # What LLVM 19 unbundles from each bundle: the reference.
    want = {}
    ids = ['hipv4-amdgcn-amd-amdhsa--' + a for a in ARCHES]
    for b in (0, 1):
        outs = ['ref-%d-%s.co' % (b, a) for a in ARCHES]
        r = harness.run([harness.LLVM_BUNDLER, '-unbundle', '-type=o', '-input=b%d.ccob' % b,
                         '-targets=' + ','.join(ids)] + ['-output=' + o for o in outs], cwd=d.dir)
        check('clang-offload-bundler unbundles bundle %d' % b, r.returncode == 0, r.stderr)
        for a, o in zip(ARCHES, outs):
            want.setdefault(a, {})['libbig.so#%d' % b] = sha256_file(d.path(o))
            os.unlink(d.path(o))
    with open(OT, 'rb') as fh:
        sanitized = b'__asan_init' in fh.read()
    # Flat, not small: the frame's 128 MiB window in the decoder.
    budget = harness.resident_budget_kib(224)
    for scheme in ('none', 'zstd'):
        what = 'split --compress %s of a 128 KB library of two CCOBs holding 1.1 GiB' % scheme
        out = 'out-' + scheme
        argv = [OT, 'split', '--compress', scheme, 'libbig.so', '-o', out]
        if not sanitized:  # (AddressSanitizer reserves terabytes of address space)
            p = subprocess.run(argv, cwd=d.dir, capture_output=True,
                               preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT)))
            check(what + ': under a %d MiB address-space limit' % (LIMIT >> 20), p.returncode == 0,
                  p.stderr.decode('utf-8', 'replace'))
            harness.run(['rm', '-rf', out], cwd=d.dir)
        rc, kib = harness.peak_resident_kib(argv, cwd=d.dir)
        check(what + ': within the memory budget', rc == 0 and kib <= budget,
              'rc=%s, %d KiB (budget %d KiB)' % (rc, kib, budget))
        if rc != 0:
            continue
        for a in ARCHES:
            path = d.path('%s/.kpack/libbig_%s.kpack' % (out, a))
            arch, got = archive_blobs(path, scheme == 'zstd')
            check(what + ': the %s archive holds what LLVM 19 unbundles' % a, arch == a and got == want[a],
                  '%s %s\nwant %s' % (arch, got, want[a]))
        check(what + ': leaves no scratch file', sorted(os.listdir(d.dir)) ==
              sorted(['b0.ccob', 'b1.ccob', 'big.s', 'libbig.so', 'out-none'] + (['out-zstd'] if scheme == 'zstd' else [])),
              str(sorted(os.listdir(d.dir))))


if __name__ == '__main__':
    sys.exit(harness.run_suite('kpack-split-memory', body,
                               needs=[harness.CLANG, harness.LLVM_BUNDLER]))
