"""AMD's splitter for Windows PE images, reproduced in Python for the kpack
PE suites (kpack_join_pe_test.py, kpack_split_pe_test.py): `kpack` rewrites
an image as rocm-kpack's coff/kpack_transform.py (e3483286) does, by the
rules of docs/kpack.md ("Splitting", PE): a .kpackrf section holding the
MessagePack marker appended (its header after the section table, raw data
and address after every other section's), each record of .hipFatB made HIPK
with its index and the marker's address, the whole pages of .hip_fat cut out
of its raw data (the tail left, as AMD's leaves it), the raw data after it
moved down, CheckSum left as it was; and writes the per-architecture
archives as AMD's writer does (tests/data/kpack/generate.py) from the code
objects LLVM's clang-offload-bundler unbundles, each with the metadata AMD's
splitter gives it. Independent of offloadtool.
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, os.path.join(HERE, '..', 'data', 'kpack'))
import harness  # noqa: E402
import generate  # noqa: E402  (AMD's archive writer, reproduced)
from harness import read, write  # noqa: E402

BUNDLER = harness.LLVM_BUNDLER
SECTION = 40


def u16(d, o):
    return struct.unpack_from('<H', d, o)[0]


def u32(d, o):
    return struct.unpack_from('<I', d, o)[0]


def headers(d):
    """(offset of the COFF header, of the optional header, of the section table, the sections)."""
    coff = u32(d, 0x3c) + 4
    opt = coff + 20
    table = opt + u16(d, coff + 16)
    secs = []
    for i in range(u16(d, coff + 2)):
        at = table + i * SECTION
        name = d[at:at + 8].rstrip(b'\0').decode()
        vs, va, raw, ptr = struct.unpack_from('<IIII', d, at + 8)
        secs.append({'name': name, 'at': at, 'vs': vs, 'va': va, 'raw': raw, 'ptr': ptr})
    return coff, opt, table, secs


def unbundle(blob, folder):
    """[{id: code object}] per bundle (host entries: b'')."""
    return harness.unbundle_hip_fatbin(blob, folder, BUNDLER)


def kpack(image, tree, rel, work, name='t', source_prefix=''):
    """Writes `image` kpack'd to tree/rel and its archives to tree/.kpack/<name>_<arch>.kpack (AMD's
    rules, see above; `source_prefix`: the metadata's, AMD's artifact prefix)."""
    d = bytearray(read(image))
    coff, opt, table, secs = headers(d)
    fa, sa, base = u32(d, opt + 36), u32(d, opt + 32), struct.unpack_from('<Q', d, opt + 24)[0]
    fat = next(s for s in secs if s['name'] == '.hip_fat')
    rec = next(s for s in secs if s['name'] == '.hipFatB')
    # The archives: per architecture, its code objects in bundle order, keyed "<rel>#<n>".
    per_arch = {}
    for objs in unbundle(bytes(d[fat['ptr']:fat['ptr'] + fat['vs']]), work):
        for t, co in objs.items():
            if not t.startswith('host-'):
                arch = t.split('--')[-1]
                n = len(per_arch.setdefault(arch, []))
                per_arch[arch].append(('%s#%d' % (rel, n), arch, co,
                                       {'target': t, 'source_prefix': source_prefix}))
    os.makedirs(os.path.join(tree, '.kpack'))
    for arch, kernels in per_arch.items():
        write(os.path.join(tree, '.kpack', '%s_%s.kpack' % (name, arch)),
              generate.kpack((name, arch, [arch], kernels), False))
    marker = generate.msgpack.packb({'kpack_search_paths': ['../' * rel.count('/') + '.kpack/%s_@GFXARCH@.kpack' % name],
                                     'kernel_name': rel}, use_bin_type=True)
    # .kpackrf: a section header below SizeOfHeaders, raw data at the end, the next address.
    n = len(secs)
    assert table + (n + 1) * SECTION <= u32(d, opt + 60), 'no room for a section header'
    va = max(-(-(s['va'] + max(s['vs'], s['raw'])) // sa) * sa for s in secs)
    # Records: HIPK, the marker's address, the index.
    for i in range(rec['vs'] // 24):
        at = rec['ptr'] + 24 * i
        struct.pack_into('<IIQQ', d, at, 0x4B504948, 1, base + va, i)
    # Zero-paging: the whole pages of .hip_fat's contents cut from its raw data, the tail left.
    cut = fat['vs'] // 4096 * 4096
    tail = bytes(d[fat['ptr'] + cut:fat['ptr'] + fat['vs']])
    new_raw = -(-len(tail) // fa) * fa
    lost = fat['raw'] - new_raw
    body = bytes(d[:fat['ptr']]) + tail + bytes(new_raw - len(tail)) + bytes(d[fat['ptr'] + fat['raw']:])
    d = bytearray(body)
    struct.pack_into('<I', d, fat['at'] + 16, new_raw)
    for s in secs:
        if s['raw'] and s['ptr'] > fat['ptr']:
            struct.pack_into('<I', d, s['at'] + 20, s['ptr'] - lost)
    ptr = -(-len(d) // fa) * fa
    raw = -(-len(marker) // fa) * fa
    d += bytes(ptr - len(d)) + marker + bytes(raw - len(marker))
    header = b'.kpackrf' + struct.pack('<IIIIIIHHI', len(marker), va, raw, ptr, 0, 0, 0, 0, 0x40000040)
    d[table + n * SECTION:table + (n + 1) * SECTION] = header
    struct.pack_into('<H', d, coff + 2, n + 1)
    struct.pack_into('<I', d, opt + 56, -(-(va + len(marker)) // sa) * sa)
    write(os.path.join(tree, rel), bytes(d))
