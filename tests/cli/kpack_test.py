"""AMD's kpack (docs/kpack.md): archives and kpack'd host binaries, read by
list, size and unbundle --extract-dir through the one walker.

The install is made here, without offloadtool and without ROCm:
  * clang 19 builds a HIP shared library of two translation units (two
    records in .hipFatBinSegment, two bundles in .hip_fatbin) for gfx906 and
    gfx1100;
  * LLVM's clang-offload-bundler-19 -unbundle extracts each TU's code objects
    (the reference bytes);
  * the library is kpack'd as AMD's splitter does it, minimally (reference
    section 2): objcopy adds the .rocm_kpack_ref marker (msgpack, Debian's
    python3-msgpack), the records get the magic HIPK, a zero pointer and their
    index, .hip_fatbin becomes NOBITS;
  * the archives .kpack/k_gfx906.kpack (scheme none) and k_gfx1100.kpack
    (zstd-per-kernel) are written by tests/data/kpack/generate.py's writer
    (python3-msgpack, python3-zstandard; it reproduces AMD's test archives
    byte for byte) with keys "lib/libk.so.1#0" and "#1".
Then every code object offloadtool lists is compared with LLVM's, and hostile
archives and records must fail with one line naming the file and offset.
"""
import json
import os
import shutil
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data', 'kpack'))
import harness  # noqa: E402
from harness import OT, check, run  # noqa: E402
import generate  # noqa: E402  the test-side kpack writer (python3-msgpack, python3-zstandard)

msgpack = generate.msgpack
ARCHS = ['gfx906', 'gfx1100']
TUS = ['a', 'b']
KERNEL_NAME = 'lib/libk.so.1'
NOBITS = 8


def build(work):
    """libk.so.1 and LLVM's code objects {(tu, arch): bytes}."""
    harness.write(os.path.join(work, 'a.hip'), harness.HIP_PRELUDE + b'__global__ void ka(int *p) { p[0] = 1; }\n')
    harness.write(os.path.join(work, 'b.hip'), harness.HIP_PRELUDE + b'__global__ void kb(float *p) { p[1] = 2.0f; }\n')
    code = {}
    for t in TUS:
        run([harness.CLANGXX, '-x', 'hip'] + ['--offload-arch=' + a for a in ARCHS]
            + ['-nogpulib', '-nogpuinc', '-fPIC', '-c', t + '.hip', '-o', t + '.o'], cwd=work, check=True)
        run(['objcopy', '-O', 'binary', '--only-section=.hip_fatbin', t + '.o', t + '.fatbin'], cwd=work, check=True)
        run([harness.LLVM_BUNDLER, '-unbundle', '-type=o', '-input=' + t + '.fatbin',
             '-targets=' + ','.join('hipv4-amdgcn-amd-amdhsa--' + a for a in ARCHS)]
            + ['-output=%s-%s.co' % (t, a) for a in ARCHS], cwd=work, check=True)
        for a in ARCHS:
            code[(t, a)] = harness.read(os.path.join(work, '%s-%s.co' % (t, a)))
    run([harness.CLANGXX, '-shared', 'a.o', 'b.o', '-o', 'libk.so.1'], cwd=work, check=True)
    return code


def marker(paths, name=KERNEL_NAME):
    return msgpack.packb({'kpack_search_paths': paths, 'kernel_name': name}, use_bin_type=True)


def kpack_binary(src, dst, marker_bytes, indices=None):
    """`src` kpack'd into `dst` (reference section 2, minimally)."""
    work = os.path.dirname(dst)
    harness.write(dst + '.marker', marker_bytes)
    run(['objcopy', '--add-section', '.rocm_kpack_ref=' + dst + '.marker', src, dst], cwd=work, check=True)
    os.unlink(dst + '.marker')
    secs = {s['name']: s for s in harness.elf64_sections(dst)}
    seg = secs['.hipFatBinSegment']
    data = bytearray(harness.read(dst))
    n = seg['size'] // 24
    for i in range(n):
        at = seg['offset'] + 24 * i
        assert data[at:at + 4] == b'FPIH'
        struct.pack_into('<4sIQQ', data, at, b'HIPK', 1, 0, i if indices is None else indices[i])
    # .hip_fatbin NOBITS: its sh_type in the section header table.
    shoff, = struct.unpack_from('<Q', data, 0x28)
    shentsize, = struct.unpack_from('<H', data, 0x3a)
    index = [s['name'] for s in harness.elf64_sections(dst)].index('.hip_fatbin')
    struct.pack_into('<I', data, shoff + index * shentsize + 4, NOBITS)
    harness.write(dst, bytes(data))
    return n


def archive(arch, code, zstd):
    kernels = [('%s#%d' % (KERNEL_NAME, i), arch, code[(t, arch)]) for i, t in enumerate(TUS)]
    return generate.kpack(('k', arch, [arch], kernels), zstd)


def ot(args, cwd, env=None):
    return run([OT] + args, cwd=cwd, text=True, env=env)


def cases(root):
    work = os.path.join(root, 'build')
    os.makedirs(work)
    code = build(work)
    inst = os.path.join(root, 'inst')
    os.makedirs(os.path.join(inst, 'lib'))
    os.makedirs(os.path.join(inst, '.kpack'))
    records = kpack_binary(os.path.join(work, 'libk.so.1'), os.path.join(inst, 'lib', 'libk.so.1'),
                           marker(['../.kpack/k_@GFXARCH@.kpack', '../.kpack-elsewhere/k_@GFXARCH@.kpack']))
    check('the library has one record per TU', records == 2, records)
    archives = {'gfx906': archive('gfx906', code, False), 'gfx1100': archive('gfx1100', code, True)}
    for a, data in archives.items():
        harness.write(os.path.join(inst, '.kpack', 'k_%s.kpack' % a), data)
    lib = os.path.join(inst, 'lib', 'libk.so.1')
    kp = {a: os.path.join(inst, '.kpack', 'k_%s.kpack' % a) for a in ARCHS}

    # --- An archive on its own: its entries, their bytes where they lie.
    r = ot(['list', '--json', kp['gfx906']], root)
    check('list --json of an archive: exit 0', r.returncode == 0, r.stderr)
    if r.returncode == 0:
        entries = json.loads(r.stdout)['entries']
        got = [(e['kpack']['binary'], e['kpack']['arch'], e['processor'], e['size'], e['compressed']) for e in entries]
        want = [('%s#%d' % (KERNEL_NAME, i), 'gfx906', 'gfx906', len(code[(t, 'gfx906')]), False)
                for i, t in enumerate(TUS)]
        check('list --json of an archive: binary keys, arch, processor, sizes', got == want, (got, want))
        data = archives['gfx906']
        same = [data[e['offset']:e['offset'] + e['size']] == code[(t, 'gfx906')] for e, t in zip(entries, TUS)]
        check('list --json of an archive: the bytes at each offset are LLVM\'s code object', all(same), same)
        check('list --json of an archive: the archive path in each entry',
              all(e['kpack']['archive'] == kp['gfx906'] for e in entries), entries)
    r = ot(['list', '--json', kp['gfx1100']], root)
    check('list --json of a zstd archive: exit 0', r.returncode == 0, r.stderr)
    if r.returncode == 0:
        entries = json.loads(r.stdout)['entries']
        got = [(e['kpack']['binary'], e['processor'], e['uncompressed_size'], e['compressed']) for e in entries]
        want = [('%s#%d' % (KERNEL_NAME, i), 'gfx1100', len(code[(t, 'gfx1100')]), True) for i, t in enumerate(TUS)]
        check('list --json of a zstd archive: keys, processor read through the frame, sizes', got == want, (got, want))

    # --- The kpack'd library: per record, the entries each archive holds.
    r = ot(['list', '--json', lib], root)
    check('list --json of a kpack\'d library: exit 0', r.returncode == 0, r.stderr)
    if r.returncode == 0:
        entries = json.loads(r.stdout)['entries']
        got = sorted((e['kpack']['binary'], e['kpack']['arch'], os.path.realpath(e['kpack']['archive']),
                      e['processor'], e['uncompressed_size'], e['offset']) for e in entries)
        want = sorted(('%s#%d' % (KERNEL_NAME, i), a, os.path.realpath(kp[a]), a, len(code[(t, a)]), None)
                      for i, t in enumerate(TUS) for a in ARCHS)
        check('list --json of a kpack\'d library: every record\'s code objects, from both archives', got == want,
              (got, want))
    r = ot(['list', '--json', lib], root)
    missing = json.loads(r.stdout)['files'][0].get('kpack_missing') if r.returncode == 0 else None
    check('list --json of a kpack\'d library: files[].kpack_missing names the path without archives',
          missing == ['%s/.kpack-elsewhere/k_@GFXARCH@.kpack' % os.path.realpath(inst)], (missing, r.stderr))
    r = ot(['list', lib], root)
    check('list of a kpack\'d library names the search path that has no archive',
          r.returncode == 0 and 'no kpack archive found at %s/.kpack-elsewhere/k_@GFXARCH@.kpack' % inst in r.stdout,
          r.stdout + r.stderr)
    check('list of a kpack\'d library shows records 0 and 1 with their keys',
          "record 0 (HIPK, 'lib/libk.so.1#0')" in r.stdout and "record 1 (HIPK, 'lib/libk.so.1#1')" in r.stdout,
          r.stdout)

    # --- The loader's environment.
    r = ot(['list', '--json', lib], root, env={'ROCM_KPACK_PATH': kp['gfx1100']})
    ok = r.returncode == 0 and {e['kpack']['arch'] for e in json.loads(r.stdout)['entries']} == {'gfx1100'}
    check('ROCM_KPACK_PATH: its files are the only candidates', ok, r.stdout + r.stderr)
    r = ot(['list', lib], root, env={'ROCM_KPACK_DISABLE': '1'})
    check('ROCM_KPACK_DISABLE: no archive looked up, said so, exit 0',
          r.returncode == 0 and 'archives not looked up: ROCM_KPACK_DISABLE is set' in r.stdout, r.stdout + r.stderr)
    r = ot(['list', lib], root, env={'ROCM_KPACK_DISABLE': '0'})
    check('ROCM_KPACK_DISABLE=0 is not set (the loader\'s rule)', r.returncode == 0 and 'k_gfx906.kpack' in r.stdout,
          r.stdout + r.stderr)
    prefix = os.path.join(root, 'prefix')
    os.makedirs(prefix)
    shutil.copyfile(kp['gfx906'], os.path.join(prefix, 'p_gfx906.kpack'))
    r = ot(['list', '--json', lib], root, env={'ROCM_KPACK_PATH_PREFIX': os.path.join(prefix, 'p_@GFXARCH@.kpack')})
    ok = r.returncode == 0 and json.loads(r.stdout)['entries'][0]['kpack']['archive'] == os.path.join(prefix, 'p_gfx906.kpack')
    check('ROCM_KPACK_PATH_PREFIX: its archives come first', ok, r.stdout + r.stderr)

    # --- size: per target, the code objects' sizes.
    r = ot(['size', kp['gfx906']], root)
    check('size of an archive: exit 0, names gfx906', r.returncode == 0 and 'gfx906' in r.stdout, r.stdout + r.stderr)

    # --- unbundle --extract-dir: LLVM's code objects, named by binary, index and arch.
    out = os.path.join(root, 'extracted')
    r = ot(['unbundle', '--extract-dir', out, lib], root)
    check('unbundle --extract-dir of a kpack\'d library: exit 0', r.returncode == 0, r.stderr)
    if r.returncode == 0:
        names = sorted(os.listdir(out))
        want = sorted('libk.so.1#%d-%s.co' % (i, a) for i in range(2) for a in ARCHS)
        check('unbundle --extract-dir: one file per record and arch', names == want, (names, want))
        same = all(harness.read(os.path.join(out, 'libk.so.1#%d-%s.co' % (i, a))) == code[(t, a)]
                   for i, t in enumerate(TUS) for a in ARCHS if os.path.exists(os.path.join(out, 'libk.so.1#%d-%s.co' % (i, a))))
        check('unbundle --extract-dir: the files are LLVM\'s code objects (zstd ones decoded)', same, names)

    # --- compat select: AMD's loader order (reference section 3.2): for each string of
    # [target ID with its feature subsets, most specific first] + [the same for its generic
    # target], the archives in search order listing it in gfx_arches; an archive listing the
    # string without the record's key is passed (rocm-systems #9953).
    r = ot(['compat', 'select', lib, '--target', 'gfx1100'], root)
    check('compat select gfx1100: both records from k_gfx1100.kpack, exit 0',
          r.returncode == 0 and r.stdout.count('selected gfx1100') == 2 and 'k_gfx1100.kpack' in r.stdout, r.stdout + r.stderr)
    r = ot(['compat', 'select', lib, '--target', 'gfx1103'], root)
    check('compat select gfx1103 with no gfx1103 or gfx11-generic archive: nothing fits, exit 1',
          r.returncode == 1 and r.stdout.count('nothing fits gfx1103') == 2, r.stdout + r.stderr)
    table = os.path.join(root, 'table')
    os.makedirs(os.path.join(table, 'lib'))
    os.makedirs(os.path.join(table, '.kpack'))
    shutil.copyfile(lib, os.path.join(table, 'lib', 'libk.so.1'))
    co = code[('a', 'gfx1100')]
    def put(arch, keys):
        kernels = [('%s#%d' % (KERNEL_NAME, i), arch, co) for i in keys]
        harness.write(os.path.join(table, '.kpack', 'k_%s.kpack' % arch), generate.kpack(('k', arch, [arch], kernels), False))
    put('gfx11-generic', [0, 1])
    put('gfx1103', [0])            # a stub: lists gfx1103, holds only record 0
    put('gfx90a', [0, 1])
    put('gfx90a:xnack+', [0, 1])
    put('gfx90a:xnack-', [1])      # a stub for record 0
    tlib = os.path.join(table, 'lib', 'libk.so.1')
    def picks(target):
        r = ot(['compat', 'select', '--json', tlib, '--target', target], root)
        if r.returncode not in (0, 1):
            return r.stderr
        out = []
        for rec in json.loads(r.stdout)['records']:
            sel = rec['selected']
            out.append(None if sel is None else os.path.basename(rec['entries'][sel]['archive']))
        return out
    # target -> per record, the archive the loader takes (facts from the reference's rules).
    expected = {
        'gfx1103': ['k_gfx1103.kpack', 'k_gfx11-generic.kpack'],   # record 1 falls through the stub
        'gfx1101': ['k_gfx11-generic.kpack', 'k_gfx11-generic.kpack'],  # no gfx1100 fallback, the generic
        'gfx90a': ['k_gfx90a.kpack', 'k_gfx90a.kpack'],             # no features: just the processor
        'gfx90a:xnack+': ['k_gfx90a:xnack+.kpack', 'k_gfx90a:xnack+.kpack'],
        'gfx90a:xnack-': ['k_gfx90a.kpack', 'k_gfx90a:xnack-.kpack'],  # record 0 passes the stub
        'gfx906': [None, None],
    }
    for target, want in expected.items():
        got = picks(target)
        check('compat select --target %s: the loader\'s archive per record' % target, got == want, (got, want))

    # --- prune of a tree holding a fat library and archives (kpack_prune_test.py tests more):
    # the archive of gfx906 stays as it is, that of gfx1100 goes.
    mixed = os.path.join(root, 'mixed')
    os.makedirs(os.path.join(mixed, 'lib'))
    shutil.copyfile(os.path.join(work, 'libk.so.1'), os.path.join(mixed, 'lib', 'libfat.so.1'))
    shutil.copytree(os.path.join(inst, '.kpack'), os.path.join(mixed, '.kpack'))
    r = ot(['prune', '--keep', 'gfx906', mixed, '-o', os.path.join(root, 'mixed-out')], root)
    ok = (r.returncode == 0 and harness.read(os.path.join(root, 'mixed-out', '.kpack', 'k_gfx906.kpack')) == archives['gfx906']
          and not os.path.exists(os.path.join(root, 'mixed-out', '.kpack', 'k_gfx1100.kpack')))
    check('prune of a tree: the kept arch\'s archive copied unchanged, the dropped one left out', ok, r.stdout + r.stderr)

    # --- Hostile archives and records: one line, the file and offset, exit 1.
    bad = os.path.join(root, 'bad')
    os.makedirs(bad)
    data = bytearray(archives['gfx906'])
    struct.pack_into('<Q', data, 8, len(data) + 100)
    harness.write(os.path.join(bad, 'toc.kpack'), bytes(data))
    r = ot(['list', 'toc.kpack'], bad)
    check('an archive whose TOC offset lies outside the file: exit 1, one line with file and offset',
          r.returncode == 1 and r.stderr.count('\n') == 1 and 'toc.kpack: the TOC offset' in r.stderr
          and 'at offset 0x8' in r.stderr, r.stderr)
    toc_at, = struct.unpack_from('<Q', archives['gfx906'], 8)
    harness.write(os.path.join(bad, 'cut.kpack'), archives['gfx906'][:toc_at + 20])
    r = ot(['list', 'cut.kpack'], bad)
    check('an archive whose TOC is cut short: exit 1', r.returncode == 1 and 'is truncated' in r.stderr, r.stderr)
    evil = generate.kpack(('k', 'gfx906', ['gfx906'], [('../../etc/x#0', 'gfx906', code[('a', 'gfx906')])]), False)
    harness.write(os.path.join(bad, 'evil.kpack'), evil)
    r = ot(['unbundle', '--extract-dir', 'out', 'evil.kpack'], bad)
    check('a binary key with ../: refused, nothing written',
          r.returncode == 1 and "has a '..' path component" in r.stderr and not os.path.exists(os.path.join(bad, 'out')),
          r.stderr)
    os.makedirs(os.path.join(bad, 'lib'))
    kpack_binary(os.path.join(work, 'libk.so.1'), os.path.join(bad, 'lib', 'liar.so'), marker(['x_@GFXARCH@.kpack']),
                 indices=[0, 7])
    r = ot(['list', 'lib/liar.so'], bad)
    check('a HIPK record whose index lies: exit 1, the record\'s offset',
          r.returncode == 1 and 'has the index 7, past its 2 records, at offset 0x' in r.stderr, r.stderr)
    kpack_binary(os.path.join(work, 'libk.so.1'), os.path.join(bad, 'lib', 'nomap.so'), b'\x92\x01\x02')
    r = ot(['list', 'lib/nomap.so'], bad)
    check('a marker that is not a map: exit 1', r.returncode == 1 and 'the kpack marker is an array, not a map' in r.stderr,
          r.stderr)


if __name__ == '__main__':
    sys.exit(harness.run_suite('kpack', cases, needs=[harness.CLANGXX, harness.LLVM_BUNDLER, 'objcopy']))
