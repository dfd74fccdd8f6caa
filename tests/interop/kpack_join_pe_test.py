#!/usr/bin/env python3
"""`offloadtool join` of kpack'd Windows PE images (DLLs, EXEs).

The images are pe_image_test.py's: two HIP translation units built by clang
for x86_64-pc-windows-msvc, linked by lld-link. `offloadtool split` writes no
PE images, so this test kpacks them itself, as AMD's splitter does
(rocm-kpack coff/kpack_transform.py, docs/kpack.md): a .kpackrf section
holding the MessagePack marker appended (raw data and address after every
other section), each record of .hipFatB made HIPK with its index and the
marker's address, the whole pages of .hip_fat cut out of its raw data (the
tail left, as AMD's leaves it), the raw data after it moved down; and writes
the per-architecture archives as AMD's writer does (tests/data/kpack/
generate.py) from the code objects LLVM 19's clang-offload-bundler unbundles.
References:
  * join gives back the image lld-link wrote, byte for byte (CheckSum
    included: the split left it stale, join computes it again);
  * join --keep gfx90a: llvm-readobj and llvm-objdump read the image without
    a warning, and clang-offload-bundler lists and unbundles from each bundle
    the host entry and the original gfx90a code object only;
  * a directory: the joined image, without .kpack/.
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'data', 'kpack'))
import harness  # noqa: E402
import pe_image_test as pe  # noqa: E402  (its builds and readers)
import generate  # noqa: E402  (AMD's archive writer, reproduced)
from harness import OT, check, read, run, write  # noqa: E402

BUNDLER = harness.LLVM_BUNDLER
MAGIC = b'__CLANG_OFFLOAD_BUNDLE__'
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


def bundles(blob):
    starts = [p for p in range(0, len(blob)) if blob[p:p + len(MAGIC)] == MAGIC and p % 4096 == 0]
    return [blob[a:b] for a, b in zip(starts, starts[1:] + [len(blob)])]


def unbundle(blob, folder):
    """[{id: code object}] per bundle (host entries: b'')."""
    out = []
    for i, b in enumerate(bundles(blob)):
        path = os.path.join(folder, 'b%d' % i)
        write(path, b)
        objs = {}
        for t in run([BUNDLER, '--list', '--type=o', '--input=' + path], text=True, check=True).stdout.split():
            if t.startswith('host-'):
                objs[t] = b''
                continue
            run([BUNDLER, '--unbundle', '--type=o', '--input=' + path, '--targets=' + t, '--output=' + path + '.co'],
                check=True)
            objs[t] = read(path + '.co')
        out.append(objs)
    return out


def kpack(image, tree, rel, work):
    """Writes `image` kpack'd to tree/rel and its archives to tree/.kpack (AMD's rules, see above)."""
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
                per_arch[arch].append(('%s#%d' % (rel, n), arch, co))
    os.makedirs(os.path.join(tree, '.kpack'))
    for arch, kernels in per_arch.items():
        write(os.path.join(tree, '.kpack', 't_%s.kpack' % arch), generate.kpack(('t', arch, [arch], kernels), False))
    marker = generate.msgpack.packb({'kpack_search_paths': ['../' * rel.count('/') + '.kpack/t_@GFXARCH@.kpack'],
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


def case(root, d, name):
    image = d.path(name)
    base = os.path.join(root, name)
    tree = os.path.join(base, 'kpacked')
    os.makedirs(os.path.join(tree, 'bin'))
    work = os.path.join(base, 'work')
    os.makedirs(work)
    kpack(image, tree, 'bin/' + name, work)
    kpacked = os.path.join(tree, 'bin', name)
    r = run([OT, 'list', kpacked], text=True)
    check('%s: offloadtool reads the kpack\'d image as such' % name,
          r.returncode == 0 and 'HIPK' in r.stdout and 'kpack archive' in r.stdout, r.stdout + r.stderr)

    out = os.path.join(base, 'joined-' + name)
    r = run([OT, 'join', kpacked, '-o', out], text=True)
    check('%s: join gives back the image lld-link wrote, byte for byte' % name,
          r.returncode == 0 and not r.stderr and read(out) == read(image), r.stderr)

    kept = os.path.join(base, 'kept-' + name)
    r = run([OT, 'join', '--keep', 'gfx90a', kpacked, '-o', kept], text=True)
    if check('%s: join --keep gfx90a writes the image' % name, r.returncode == 0, r.stderr):
        for flags in (['--sections', '--file-headers', '--coff-basereloc'],):
            rc, _, err = pe.readobj(kept, *flags)
            check('%s: llvm-readobj reads the --keep gfx90a image without a warning' % name, rc == 0 and not err, err)
        rr = run([pe.OBJDUMP, '-p', kept], text=True)
        check('%s: llvm-objdump -p reads it without a warning' % name, rr.returncode == 0 and not rr.stderr, rr.stderr)
        os.makedirs(os.path.join(work, 'o'))
        os.makedirs(os.path.join(work, 'k'))
        orig = unbundle(pe.dump_section(image, '.hip_fat', os.path.join(work, 'orig.fat')), os.path.join(work, 'o'))
        mine = unbundle(pe.dump_section(kept, '.hip_fat', os.path.join(work, 'kept.fat')), os.path.join(work, 'k'))
        want = [{k: v for k, v in b.items() if k.startswith('host-') or '--gfx90a' in k} for b in orig]
        check('%s: clang-offload-bundler finds the host entry and the original gfx90a code object only, per bundle'
              % name, mine == want, [sorted(b) for b in mine])
        a, b = pe.sections(image), pe.sections(kept)
        check('%s: every section keeps its address and virtual size' % name,
              [(x['Name'], x['VirtualAddress'], x['VirtualSize']) for x in a]
              == [(x['Name'], x['VirtualAddress'], x['VirtualSize']) for x in b], b)

    joined_tree = os.path.join(base, 'joined-tree')
    r = run([OT, 'join', tree, '-o', joined_tree], text=True)
    files = sorted(os.path.relpath(os.path.join(p, f), joined_tree) for p, _, fs in os.walk(joined_tree) for f in fs)
    check('%s: join of the folder writes the image back, without .kpack' % name,
          r.returncode == 0 and files == ['bin/' + name] and read(os.path.join(joined_tree, 'bin', name)) == read(image),
          (files, r.stderr))


def body(root):
    d = pe.build(os.path.join(root, 'x64'), 'x86_64-pc-windows-msvc', 'x64')
    for name in ('k.dll', 'k.exe'):
        case(root, d, name)


if __name__ == '__main__':
    sys.exit(harness.run_suite('kpack-join-pe', body, needs=[pe.LLD_LINK, pe.READOBJ, pe.OBJCOPY, pe.OBJDUMP, BUNDLER]))
