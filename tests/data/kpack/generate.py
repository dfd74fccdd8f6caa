#!/usr/bin/env python3
"""Writes test_noop.kpack and test_zstd.kpack: AMD's kpack test archives
(ROCm/rocm-kpack runtime/tests/generate_test_data.py at e3483286, whose inputs
are copied below), laid out as AMD's Python writer lays them out, with
Debian's python3-msgpack and python3-zstandard -- independently of offloadtool.

The layout (docs/kpack.md): "KPAK", u32 1, u64 TOC offset, zeros to 64, the
blobs (scheme none: code objects back to back; zstd-per-kernel: u32 count,
then per kernel u32 size + one level-3 zstd frame), then the TOC, a msgpack map
in the writer's key order, smallest encodings (use_bin_type=True: str8).

  generate.py OUTDIR          write both archives into OUTDIR
  generate.py --check DIR     exit 1 unless DIR's archives are what this writes and
                              what AMD committed (AMD_SHA256, checked in session
                              against the files at e3483286)
"""
import hashlib
import os
import struct
import sys

try:
    import msgpack
    import zstandard
except ImportError:
    sys.path.append('/usr/lib/python3/dist-packages')
    import msgpack  # noqa: E402  Debian's python3-msgpack (scripts/install-deps)
    import zstandard  # noqa: E402  Debian's python3-zstandard

# sha256 of AMD's runtime/tests/test_assets/test_{noop,zstd}.kpack at e3483286 (903 and 518 bytes).
AMD_SHA256 = {
    'test_noop.kpack': 'cf69e89680656e7cd41f8e9df4c73ffffbff9f4237074f6a562d8ec88f172181',
    'test_zstd.kpack': '05e9edfecb1c5357824d1bd37e3dab6e5023bf1736653692aa646f15d14c89fd',
}

# (binary key, arch, code object[, metadata]), in add_kernel order.
NOOP = ('test', 'gfx900X', ['gfx900', 'gfx906'], [
    ('lib/libtest.so#0', 'gfx900', b'KERNEL1_GFX900_DATA' + b'\x00' * 100),
    ('lib/libtest.so#0', 'gfx906', b'KERNEL2_GFX906_DATA' + b'\x00' * 200),
    ('bin/testapp#0', 'gfx900', b'KERNEL3_APP_GFX900' + b'\xff' * 150),
])
ZSTD = ('test', 'gfx110X', ['gfx1100', 'gfx1101'], [
    ('lib/libhip.so#0', 'gfx1100', b'HIP_KERNEL_GFX1100_' + b'A' * 500 + b'B' * 500),
    ('lib/libhip.so#0', 'gfx1101', b'HIP_KERNEL_GFX1101_' + b'X' * 300 + b'Y' * 300),
    ('bin/hiptest#0', 'gfx1100', b'TEST_APP_KERNEL___' + b'\x42' * 1000),
])


def kpack(spec, zstd):
    group, family, arches, kernels = spec
    area = bytearray()
    toc = {}
    blobs = []
    if zstd:
        area += struct.pack('<I', len(kernels))
    for ordinal, (binary, arch, data, *metadata) in enumerate(kernels):
        if zstd:
            frame = zstandard.ZstdCompressor(level=3).compress(data)
            area += struct.pack('<I', len(frame)) + frame
        else:
            blobs.append({'offset': 64 + len(area), 'size': len(data)})
            area += data
        toc.setdefault(binary, {})[arch] = {'type': 'hsaco', 'ordinal': ordinal, 'original_size': len(data)}
        if metadata:  # the splitter's {target, source_prefix}
            toc[binary][arch]['metadata'] = metadata[0]
    top = {'format_version': 1, 'group_name': group, 'gfx_arch_family': family, 'gfx_arches': arches, 'toc': toc}
    if zstd:
        top.update({'compression_scheme': 'zstd-per-kernel', 'zstd_offset': 64, 'zstd_size': len(area)})
    else:
        top.update({'compression_scheme': 'none', 'blobs': blobs})
    head = b'KPAK' + struct.pack('<IQ', 1, 64 + len(area)) + bytes(48)
    return head + bytes(area) + msgpack.packb(top, use_bin_type=True)


def archives():
    return {'test_noop.kpack': kpack(NOOP, False), 'test_zstd.kpack': kpack(ZSTD, True)}


def main(argv):
    if len(argv) == 3 and argv[1] == '--check':
        bad = 0
        for name, data in archives().items():
            with open(os.path.join(argv[2], name), 'rb') as f:
                committed = f.read()
            if committed != data:
                print('%s: the committed file differs from what generate.py writes' % name)
                bad = 1
            if hashlib.sha256(data).hexdigest() != AMD_SHA256[name]:
                print('%s: generate.py no longer writes AMD\'s bytes (sha256 %s)' % (name, hashlib.sha256(data).hexdigest()))
                bad = 1
        return bad
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    for name, data in archives().items():
        with open(os.path.join(argv[1], name), 'wb') as f:
            f.write(data)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
