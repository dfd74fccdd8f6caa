"""Bare device code files as entries: AMDGPU code objects (.co, .hsaco), PTX.

ROCm's Tensile libraries and PyTorch's wheels ship thousands of per-GPU code
objects as files of their own (TensileLibrary_gfx90a.co); `list`, `size`,
`unbundle --extract-dir` and `compat` read each as one entry, the whole file.
The code objects and PTX are made here by clang (`--cuda-device-only
--no-gpu-bundle-output`, `-S`) of the release under test; the references:
  * the target ID each code object is for: llvm-readelf -h's "Flags" line
    (processor, then xnack/sramecc: "xnack-" off, "xnack+" on, "xnack" any),
    and the --offload-arch clang was given;
  * a PTX file's target: its own ".target" directive, as clang wrote it;
  * sizes: the file's size on disk; extraction: the file's bytes (cmp);
  * a text bundle of PTX stays a text bundle: LLVM's `clang-offload-bundler
    -list` names its entries, and we list the same ones.
Bare cubins are checked against cuobjdump in tests/real/cuda_test.py.
"""
import json
import os
import sys
import tarfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import OT, check  # noqa: E402

KERNEL = b'extern "C" __attribute__((global)) void k(int *p) { p[0] = 1; }\n'
CUDA_KERNEL = b'extern "C" __attribute__((global)) void k(int *p) { p[0] = 1; }\n'
# --offload-arch as given -> the file name; every one of them clang 19 and 22 build.
ARCHS = ['gfx906', 'gfx908:xnack-', 'gfx90a:xnack+', 'gfx90a', 'gfx942:sramecc+:xnack-', 'gfx1030', 'gfx1100']
PTX_ARCHS = ['sm_70', 'sm_80', 'sm_90a']


def readelf_target(path):
    """The target ID llvm-readelf -h's Flags line names: 'Flags: 0x63F, gfx90a, xnack-, sramecc'."""
    r = harness.run([harness.llvm('llvm-readelf'), '-h', path], text=True, check=True)
    line = next(l for l in r.stdout.splitlines() if l.strip().startswith('Flags:'))
    parts = [p.strip() for p in line.split(':', 1)[1].split(',')]
    proc, features = parts[1], parts[2:]
    tid = proc
    for f in sorted(features, key=lambda f: f.rstrip('+-')):  # target IDs order features by name
        if f.endswith('+') or f.endswith('-'):
            tid += ':' + f
    return tid


def list_json(args, cwd):
    r = harness.run([OT, 'list', '--json'] + args, cwd=cwd, text=True)
    if r.returncode != 0:
        raise RuntimeError(f'offloadtool list {args}: {r.stderr}')
    return json.loads(r.stdout)


def cases(root):
    src = os.path.join(root, 'k.hip')
    harness.write(src, KERNEL)
    files = {}
    for arch in ARCHS:
        name = 'k-' + arch.replace(':', '_') + ('.hsaco' if 'gfx1' in arch else '.co')
        out = os.path.join(root, name)
        harness.run([harness.CLANGXX, '-x', 'hip', '--cuda-device-only', '--no-gpu-bundle-output',
                     f'--offload-arch={arch}', '-nogpuinc', '-nogpulib', '-O1', '-c', src, '-o', out], check=True)
        files[name] = arch

    # list: one entry per file, the header's target ID.
    for name, arch in files.items():
        ref = readelf_target(os.path.join(root, name))
        got = list_json([name], root)['entries']
        check(f'list {name}: one entry', len(got) == 1, got)
        if len(got) != 1:
            continue
        e = got[0]
        check(f'list {name}: target ID {ref} as llvm-readelf reads the header', e['id'] == ref and e['processor'] == ref,
              e)
        check(f'list {name}: the offload-arch clang was given ({arch}) is what it names',
              e['id'] == arch or arch == 'gfx942:sramecc+:xnack-' and e['id'] == ref, e)
        check(f'list {name}: the whole file, at offset 0', e['offset'] == 0 and e['size'] == os.path.getsize(
            os.path.join(root, name)) and e['path'] == [name, 'AMDGPU code object'], e)

    # size: the files' bytes, one entry each.
    names = sorted(files)
    r = harness.run([OT, 'size', '--json', '--bytes'] + names, cwd=root, text=True)
    total = sum(os.path.getsize(os.path.join(root, n)) for n in names)
    ok = r.returncode == 0 and json.loads(r.stdout)['file_bytes'] == total and json.loads(r.stdout)['entries'] == len(names)
    check('size: every code object counted whole', ok, r.stdout + r.stderr)

    # unbundle --extract-dir: the file itself, under its own name.
    for name in names[:2]:
        out = os.path.join(root, 'x-' + name)
        r = harness.run([OT, 'unbundle', '--extract-dir', out, name], cwd=root)
        got = sorted(os.listdir(out)) if os.path.isdir(out) else []
        check(f'extract {name}: written under its own name', r.returncode == 0 and got == [name], (got, r.stderr))
        if got == [name]:
            check(f'extract {name}: the same bytes', harness.same_file(os.path.join(out, name), os.path.join(root, name)))

    # In a tarball and an ar archive: the member is the entry.
    tpath = os.path.join(root, 'lib.tar')
    with tarfile.open(tpath, 'w', format=tarfile.GNU_FORMAT) as t:
        for n in names:
            t.add(os.path.join(root, n), arcname='library/' + n)
    got = list_json(['lib.tar'], root)['entries']
    want = [('library/' + n, readelf_target(os.path.join(root, n))) for n in names]
    check('list lib.tar: each member is one entry with its target ID',
          [(e['path'][1], e['id']) for e in got] == want, got)
    harness.run([harness.llvm('llvm-ar'), 'rc', 'lib.a'] + names, cwd=root, check=True)
    got = list_json(['lib.a'], root)['entries']
    check('list lib.a: each member is one entry', [(e['path'][1], e['id']) for e in got] ==
          [(n, readelf_target(os.path.join(root, n))) for n in names], got)
    r = harness.run([OT, 'unbundle', '--extract-dir', 'xt', 'lib.tar'], cwd=root)
    check('extract lib.tar: the members under their own names', r.returncode == 0 and
          sorted(os.listdir(os.path.join(root, 'xt'))) == names, r.stderr)

    # compat select reads the code object's target.
    r = harness.run([OT, 'compat', 'select', '--target', 'gfx90a:xnack+', 'lib.tar'], cwd=root, text=True)
    check('compat select: of the tarball\'s code objects, the gfx90a:xnack+ one for a gfx90a:xnack+ GPU',
          r.returncode == 0 and 'library/k-gfx90a_xnack+.co' in r.stdout.splitlines()[0], r.stdout + r.stderr)

    # prune of one code object alone says what it is.
    r = harness.run([OT, 'prune', '--keep', 'gfx90a', 'k-gfx1030.hsaco', '-o', 'p.co'], cwd=root, text=True)
    check('prune of a bare code object alone: refused, naming what it is',
          r.returncode == 1 and r.stderr == 'offloadtool prune: error: k-gfx1030.hsaco: the file is one AMDGPU code '
          'object (gfx1030): it stays or goes whole, as prune does with the files of a directory or package it is '
          'in, at offset 0x0\n' and not os.path.exists(os.path.join(root, 'p.co')), r.stderr)

    # PTX made by clang: the .target it wrote names the entry.
    cu = os.path.join(root, 'k.cu')
    harness.write(cu, CUDA_KERNEL)
    for sm in PTX_ARCHS:
        ptx = os.path.join(root, f'k-{sm}.ptx')
        harness.run([harness.CLANGXX, '-x', 'cuda', '--cuda-device-only', '-S', f'--cuda-gpu-arch={sm}', '-nocudainc',
                     '-nocudalib', cu, '-o', ptx], check=True)
        target = next(l.split()[1] for l in open(ptx).read().splitlines() if l.startswith('.target'))
        got = list_json([os.path.basename(ptx)], root)['entries']
        check(f'list k-{sm}.ptx: one PTX entry named after its .target {target}',
              len(got) == 1 and got[0]['id'] == 'compute_' + target[3:] and got[0]['kind'] == 'ptx' and
              got[0]['size'] == os.path.getsize(ptx), got)

    # prune of a folder of them: each stays or goes whole (AMDGPU by target ID, PTX by the CUDA driver's rules).
    tree = os.path.join(root, 'tree')
    os.makedirs(os.path.join(tree, 'library'))
    for n in names + [f'k-{sm}.ptx' for sm in PTX_ARCHS]:
        harness.write(os.path.join(tree, 'library', n), harness.read(os.path.join(root, n)))
    for keep, stays in (('gfx90a', [n for n in names if files[n].startswith('gfx90a')]),
                        # an sm_80 GPU JIT-compiles compute_70 and compute_80 PTX; not sm_90a's
                        ('sm_80', ['k-sm_70.ptx', 'k-sm_80.ptx'])):
        out = os.path.join(root, 'slim-' + keep)
        r = harness.run([OT, 'prune', '--keep', keep, '--json', 'tree', '-o', out], cwd=root, text=True)
        got = sorted(os.listdir(os.path.join(out, 'library'))) if r.returncode == 0 else r.stderr
        check(f'prune --keep {keep} of a folder of bare files: those the target loads stay, byte for byte',
              got == sorted(stays) and all(harness.same_file(os.path.join(out, 'library', n), os.path.join(root, n))
                                           for n in stays), got)
        if r.returncode == 0:
            rep = json.loads(r.stdout)
            removed = sorted(f['path'].split('/')[-1] for f in rep['files'] if f['action'] == 'remove')
            check(f'prune --keep {keep}: the report names every other file removed',
                  removed == sorted(set(names + [f'k-{sm}.ptx' for sm in PTX_ARCHS]) - set(stays)), rep['files'])

    # unbundle --extract-dir of the folder takes the options it takes for a file.
    r = harness.run([OT, 'unbundle', '--extract-dir', 'none.d', '-t', 'hipv4-amdgcn-amd-amdhsa--gfx1010',
                     '--allow-missing', 'tree'], cwd=root, text=True)
    check('extract a folder with --allow-missing: a target finding nothing is no error, and nothing is written',
          r.returncode == 0 and os.listdir(os.path.join(root, 'none.d')) == [], (r.returncode, r.stderr))
    r = harness.run([OT, 'unbundle', '--extract-dir', 'hip.d', '-t', 'openmp-amdgcn-amd-amdhsa--gfx906',
                     '--hip-openmp-compatible', 'tree'], cwd=root, text=True)
    check('extract a folder with --hip-openmp-compatible: an openmp ID selects the HIP code object',
          r.returncode == 0 and os.listdir(os.path.join(root, 'hip.d')) == ['k-gfx906.co'], (r.returncode, r.stderr))

    # A text bundle of PTX is a text bundle, not a bare PTX file.
    harness.write(os.path.join(root, 'host.s'), b'// host\n')
    r = harness.run([harness.LLVM_BUNDLER, '-type=s', '-targets=host-x86_64-unknown-linux-gnu,openmp-nvptx64-nvidia-cuda-sm_80',
                     '-input=host.s', '-input=k-sm_80.ptx', '-output=tb.s'], cwd=root, text=True)
    ref = harness.run([harness.LLVM_BUNDLER, '-list', '-type=s', '-input=tb.s'], cwd=root, text=True)
    got = list_json(['tb.s'], root)['entries'] if r.returncode == 0 else []
    check('a text bundle of PTX lists the entries LLVM lists, as a text bundle',
          r.returncode == 0 and sorted(e['id'] for e in got) == sorted(ref.stdout.split()) and
          all(e['path'][-1].startswith('text bundle') for e in got), (got, ref.stdout, r.stderr))


if __name__ == '__main__':
    sys.exit(harness.run_suite('bare-code', cases,
                               needs=[harness.CLANGXX, harness.llvm('llvm-readelf'), harness.llvm('llvm-ar'),
                                      harness.LLVM_BUNDLER]))
