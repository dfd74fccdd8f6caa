#!/usr/bin/env python3
"""Makes the container fixtures of tests/unit/contents/walker_test.cpp (run it
from anywhere; it writes beside itself). Standard library only: the bundle and
the code objects are laid out here by hand (not by offloadtool), the archives
by tarfile / zipfile / gzip / lzma / bz2, cpio (newc) and ar by hand.

  gfx906.co, gfx90a.co   64-byte AMDGPU ELF headers + a tail: the payloads
  b.bundle               binary bundle: host (empty), gfx906, gfx90a:xnack+
  pkg.tar.gz .tar.xz .tar.bz2   ./README (skipped), ./lib/b.bundle
  pkg.zip                dir/a.txt, dir/b.bundle (deflated)
  pkg.cpio               newc: README, lib/b.bundle
  pkg.deb                ar: debian-binary, control.tar.xz, data.tar.xz (./usr/lib/b.bundle)
  pkg.rpm                lead, empty signature and main headers, cpio.gz payload (the layout
                         rpm(5) gives; libarchive's rpm filter skips the headers)
  nested.zip             inner.tar.gz -> lib.a (ar) -> b.bundle
  truncated.tar.gz       a member cut off in the middle of the compressed stream
"""
import bz2, gzip, io, lzma, os, random, struct, sys, tarfile, zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from harness import cpio_newc  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
IDS = ['host-x86_64-unknown-linux-gnu-', 'hip-amdgcn-amd-amdhsa--gfx906', 'hip-amdgcn-amd-amdhsa--gfx90a:xnack+']


def amdgpu_elf(e_flags, abi, tail):
    ident = b'\x7fELF' + bytes([2, 1, 1, 64, abi]) + b'\0' * 7   # ELFCLASS64, LSB, EV_CURRENT, OSABI AMDGPU_HSA
    hdr = ident + struct.pack('<HHIQQQIHHHHHH', 3, 224, 1, 0, 0, 0, e_flags, 64, 56, 0, 64, 0, 0)
    assert len(hdr) == 64
    return hdr + tail


GFX906 = amdgpu_elf(0x2f, 2, b'gfx906 code object' * 3)           # v4, xnack/sramecc unsupported-any
GFX90A = amdgpu_elf(0x3f | 0x300, 2, b'gfx90a:xnack+ code object' * 2)  # v4, xnack on


def bundle(ids, payloads, align=4096):
    header = b'__CLANG_OFFLOAD_BUNDLE__' + struct.pack('<Q', len(ids))
    size = len(header) + sum(24 + len(i) for i in ids)
    offsets, at = [], size
    for p in payloads:
        at = (at + align - 1) // align * align if p else at
        offsets.append(at)
        at += len(p)
    for i, p, o in zip(ids, payloads, offsets):
        header += struct.pack('<QQQ', o, len(p), len(i)) + i.encode()
    out = bytearray(header)
    for p, o in zip(payloads, offsets):
        out += b'\0' * (o - len(out)) + p
    return bytes(out)


BUNDLE = bundle(IDS, [b'', GFX906, GFX90A])


def tar(members, mode='w'):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode, format=tarfile.GNU_FORMAT) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def ar(members):
    out = b'!<arch>\n'
    for name, data in members:
        out += ('%-16s%-12d%-6d%-6d%-8o%-10d`\n' % (name + '/', 0, 0, 0, 0o644, len(data))).encode()
        out += data + (b'\n' if len(data) % 2 else b'')
    return out


def rpm(payload):
    lead = (b'\xed\xab\xee\xdb' + bytes([3, 0]) + struct.pack('>HH', 0, 1) + b'pkg-1.0'.ljust(66, b'\0') +
            struct.pack('>HH', 1, 5) + b'\0' * 16)
    header = b'\x8e\xad\xe8\x01' + b'\0' * 4 + struct.pack('>II', 0, 0)  # no index entries, no data
    return lead + header + header + payload


def gz(data):
    return gzip.compress(data, mtime=0)


def write(name, data):
    with open(os.path.join(HERE, name), 'wb') as f:
        f.write(data)


def main():
    write('gfx906.co', GFX906)
    write('gfx90a.co', GFX90A)
    write('b.bundle', BUNDLE)
    members = [('./README', b'no device code here\n'), ('./lib/b.bundle', BUNDLE)]
    plain = tar(members)
    write('pkg.tar.gz', gz(plain))
    write('pkg.tar.xz', lzma.compress(plain, format=lzma.FORMAT_XZ))
    write('pkg.tar.bz2', bz2.compress(plain))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w', zipfile.ZIP_DEFLATED) as z:
        for name, data in (('dir/a.txt', b'text\n'), ('dir/b.bundle', BUNDLE)):
            z.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
    write('pkg.zip', buf.getvalue())
    write('pkg.cpio', cpio_newc([('README', b'no device code\n'), ('lib/b.bundle', BUNDLE)]))
    write('pkg.rpm', rpm(gz(cpio_newc([('./README', b'x\n'), ('./usr/lib/b.bundle', BUNDLE)]))))
    control = lzma.compress(tar([('./control', b'Package: x\n')]), format=lzma.FORMAT_XZ)
    data = lzma.compress(tar([('./usr/lib/b.bundle', BUNDLE)]), format=lzma.FORMAT_XZ)
    write('pkg.deb', ar([('debian-binary', b'2.0\n'), ('control.tar.xz', control), ('data.tar.xz', data)]))
    inner = gz(tar([('lib.a', ar([('b.bundle', BUNDLE)]))]))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w', zipfile.ZIP_STORED) as z:
        z.writestr(zipfile.ZipInfo('inner.tar.gz', (1980, 1, 1, 0, 0, 0)), inner)
    write('nested.zip', buf.getvalue())
    noise = random.Random(12).randbytes(1 << 16)
    whole = gz(tar([('./big.bundle', BUNDLE[:4096] + noise)]))
    write('truncated.tar.gz', whole[:len(whole) // 2])


if __name__ == '__main__':
    main()
