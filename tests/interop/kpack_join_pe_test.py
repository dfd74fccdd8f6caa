#!/usr/bin/env python3
"""`offloadtool join` of kpack'd Windows PE images (DLLs, EXEs).

The images are pe_image_test.py's: two HIP translation units built by clang
for x86_64-pc-windows-msvc, linked by lld-link, kpack'd as AMD's splitter
does by kpack_pe.py (independent of offloadtool; kpack_split_pe_test.py
checks `offloadtool split` against it; rocm-kpack coff/kpack_transform.py,
docs/kpack.md): a .kpackrf section
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
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import pe_image_test as pe  # noqa: E402  (its builds and readers)
from harness import OT, check, read, run  # noqa: E402
from kpack_pe import BUNDLER, kpack, unbundle  # noqa: E402  (AMD's PE splitter and archive writer, reproduced)



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
