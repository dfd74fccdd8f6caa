#!/usr/bin/env python3
"""offloadtool as the packager the suite's clang runs: clang 19's
clang-offload-packager, and as packager-interop-22 (OT_LLVM_RELEASE=22) clang
22's llvm-offload-binary.

offloadtool gets no setting: OFFLOADTOOL_LLVM is removed from the driver's
environment, so the release comes from the clang that runs it. Each object is
built twice, with `-B <dir>` where <dir>/<packager> is a symlink once to
LLVM's packager and once to offloadtool; the -B folder and the working folder
have the same paths in both runs (the symlink is re-pointed, the object renamed
afterwards), as tests/interop/hip_driver_test.py does for HIP.

1. clang -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -c (-### shows clang
   really runs the packager in <dir>): the objects are byte-identical; the real
   clang-linker-wrapper of the release links the program and its target
   regions run on libomptarget's host (x86_64) device with the right results
   (OMP_TARGET_OFFLOAD=MANDATORY).
2. The same identity for --offload-arch=gfx906,gfx90a -nogpulib and
   --offload-arch=sm_80 -nogpulib, and for HIP with --offload-new-driver
   -fgpu-rdc (compile only; the kind=hip number differs between 19 and 22).
3. llvm-objdump --offloading reads our objects; each tool extracts from the
   other's objects the same images; llvm-ar accepts our --archive outputs
   (and llvm-nm lists the same archive map).

clang 22 takes its omp.h from scripts/fetch-libomp22 (harness.OMP22_INCLUDE);
libomp.so is libomp5-19's for both releases.

As packager-interop-23: clang 23, its llvm-offload-binary (OffloadBinary
version 2, 23's key order), clang-linker-wrapper 23 and libomptarget 23, all
Debian sid's in scripts/fetch-llvm23's chroot. offloadtool runs inside it
(the static build), where clang 23 runs it; the programs run there too
(harness.in_llvm23_chroot), and each prints what the program linked from
LLVM's object prints. Extracting as LLVM 23 is not implemented (docs/llvm23.md):
offloadtool's refusal is checked instead, and LLVM 23 extracts from our objects.
Environment: OFFLOADTOOL = the offloadtool binary. Prints "N passed, M failed";
exits 1 on failure, and when clang, its tools or libomptarget are missing.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import CLANG, LLVM_BIN as LLVM, OT, check, read  # noqa: E402

R = harness.RELEASE
R23 = R == '23'
# The name the release's clang looks the packager up by.
PACKAGER_NAME = 'clang-offload-packager' if R == '19' else 'llvm-offload-binary'
LLVM_PACKAGER = harness.llvm(PACKAGER_NAME)
LIBDIR = f'/usr/lib/llvm-{R}/lib'  # libomptarget
OMPLIB = LIBDIR if R23 else '/usr/lib/llvm-19/lib'  # libomp.so (23: libomp-23-dev's, in the chroot)
# Where the libraries are seen from here: 23's inside the chroot.
HOST_VIEW = harness.LLVM23_ROOT if R23 else ''
CFLAGS = ['-isystem', harness.OMP22_INCLUDE] if R == '22' else []
LIBS = [f'-L{LIBDIR}', f'-L{OMPLIB}', f'-Wl,-rpath,{LIBDIR}', f'-Wl,-rpath,{OMPLIB}']
RUN_ENV = {'LD_LIBRARY_PATH': f'{LIBDIR}:{OMPLIB}', 'OMP_TARGET_OFFLOAD': 'MANDATORY'}
NO_SETTING = {'OFFLOADTOOL_LLVM': None}

SOURCE = r'''
#include <omp.h>
#include <stdio.h>

int main(void) {
  enum { N = 1000 };
  static double a[N], b[N];
  for (int i = 0; i < N; ++i) a[i] = i, b[i] = 2.0 * i;
  double sum = 0;
  int on_device = 0;
#pragma omp target teams distribute parallel for map(to: a, b) map(tofrom: sum) reduction(+: sum)
  for (int i = 0; i < N; ++i) sum += a[i] * b[i];
#pragma omp target map(from: on_device)
  on_device = !omp_is_initial_device();
  printf("sum=%.0f on_device=%d devices=%d\n", sum, on_device, omp_get_num_devices());
  return 0;
}
'''
EXPECTED = 'sum=665667000 on_device=1'
# HIP through the new offload driver: clang packs the device bitcode with
# kind=hip, which is 3 in 19's OffloadBinary and 4 in 22's, so here the object
# is LLVM's only when offloadtool took the release from the clang running it.
HIP_SOURCE = harness.HIP_PRELUDE + b'''
__global__ void scale(int *x, int n) { if (n) x[0] *= 2; }
__device__ int dev_v;
'''


NEEDS = [CLANG, LLVM_PACKAGER, HOST_VIEW + LIBDIR + '/libomptarget.so', HOST_VIEW + OMPLIB + '/libomp.so'] + [
    LLVM + '/' + t for t in (
    'llvm-objcopy', 'llvm-objdump', 'llvm-ar', 'llvm-nm')] + (
    [os.path.join(harness.OMP22_INCLUDE, 'omp.h')] if R == '22' else [])


def section(s, obj, name='.llvm.offloading'):
    out = s.path(os.path.basename(obj) + '.section')
    r = s.run([LLVM + '/llvm-objcopy', '--dump-section', name + '=' + out, obj, s.path('objcopy.tmp')])
    if r.returncode != 0:
        return None
    return read(out)


def run_program(s, path):
    """Runs a linked program (in LLVM 23's chroot for clang 23's)."""
    if R23:
        return harness.in_llvm23_chroot([path], s.dir, env=RUN_ENV, text=True)
    return s.run([path], env=RUN_ENV)


def main():
    return harness.run_suite('packager-interop' + ('' if R == '19' else '-' + R), cases, needs=NEEDS)


def cases(root):
    s = harness.Folder(path=root, text=True)
    bindir = s.path('bin')
    os.makedirs(bindir)
    if R23:
        r = harness.in_llvm23_chroot([OT, '--version'], root, text=True)
        check('offloadtool runs inside the chroot, where clang 23 runs it (the static build does)',
              r.returncode == 0, r.stderr)
    ours = os.path.join(bindir, PACKAGER_NAME)
    s.put('prog.c', SOURCE)

    def point_packager_at(tool):
        if os.path.lexists(ours):
            os.unlink(ours)
        os.symlink(tool, ours)

    s.put('k.hip', HIP_SOURCE)

    configs = [  # name, clang's flags, source, offload kind, whether to link and run
        ('x86_64', ['-fopenmp', '-fopenmp-targets=x86_64-pc-linux-gnu'] + CFLAGS, 'prog.c', 'openmp', True),
        ('amdgpu', ['-fopenmp', '--offload-arch=gfx906,gfx90a', '-nogpulib'] + CFLAGS, 'prog.c', 'openmp', False),
        # 23 compiles nvptx device code to PTX and runs ptxas unless told to keep bitcode (no CUDA here)
        ('nvptx', ['-fopenmp', '--offload-arch=sm_80', '-nogpulib'] + (['-foffload-lto'] if R23 else []) + CFLAGS,
         'prog.c', 'openmp', False),
        ('hip-rdc', ['-x', 'hip', '--offload-new-driver', '-fgpu-rdc', '--offload-arch=gfx906',
                     '--offload-arch=gfx90a', '-nogpulib', '-nogpuinc'], 'k.hip', 'hip', False),
    ]
    objects = {}
    for name, flags, source, kind, link in configs:
        # The same command, -B folder and working folder for both packagers.
        base = [CLANG, '-O2'] + flags + ['-B', bindir, '-c', source, '-o', name + '.o']
        point_packager_at(OT)
        r = s.run(base + ['-###'], env=NO_SETTING)
        check(name + ': clang -### runs the %s in -B' % PACKAGER_NAME,
              r.returncode == 0 and ('"%s"' % ours) in r.stderr and LLVM_PACKAGER not in r.stderr, r.stderr)
        built = {}
        for tag, tool in (('llvm', LLVM_PACKAGER), ('ours', OT)):
            point_packager_at(tool)
            r = s.run(base, env=NO_SETTING)
            built[tag] = r
            if r.returncode == 0:
                os.rename(s.path(name + '.o'), s.path('%s-%s.o' % (name, tag)))
        if built['llvm'].returncode != 0:
            check(name + ': clang builds with LLVM\'s packager', False, built['llvm'].stderr)
            continue
        check(name + ': clang builds with offloadtool', built['ours'].returncode == 0, built['ours'].stderr)
        if built['ours'].returncode != 0:
            continue
        a, b = section(s, s.path(name + '-ours.o')), section(s, s.path(name + '-llvm.o'))
        check(name + ': .llvm.offloading is byte-identical to LLVM\'s', a is not None and a == b,
              'ours %s bytes, llvm %s bytes' % (len(a) if a else None, len(b) if b else None))
        check(name + ': the whole object is byte-identical', s.read(name + '-ours.o') == s.read(name + '-llvm.o'))
        objects[name] = s.path(name + '-ours.o')

        # llvm-objdump reads what we embedded.
        r1 = s.run([LLVM + '/llvm-objdump', '--offloading', name + '-ours.o'])
        r2 = s.run([LLVM + '/llvm-objdump', '--offloading', name + '-llvm.o'])
        check(name + ': llvm-objdump --offloading agrees', r1.returncode == 0 and
              r1.stdout.replace('-ours.o', '') == r2.stdout.replace('-llvm.o', ''), r1.stdout + r1.stderr)

        # Each tool extracts the same images from the object (run directly,
        # offloadtool as the suite's release through OFFLOADTOOL_LLVM).
        point_packager_at(OT)
        for tool, tag in ((ours, 'ours'), (LLVM_PACKAGER, 'llvm')):
            d = s.path('x-%s-%s' % (name, tag))
            os.makedirs(d)
            r = s.run([tool, os.path.join('..', name + '-ours.o'), '--image=kind=' + kind], cwd=d)
            r2 = s.run([tool, os.path.join('..', name + '-ours.o'), '--image=file=all.a,kind=' + kind, '--archive'],
                       cwd=d)
            check('%s: %s extracts' % (name, tag), r.returncode == r2.returncode == 0 and not r.stderr + r2.stderr,
                  r.stderr + r2.stderr)
        da, db = s.path('x-%s-ours' % name), s.path('x-%s-llvm' % name)
        fa, fb = sorted(os.listdir(da)), sorted(os.listdir(db))
        same = fa == fb and all(read(os.path.join(da, n)) == read(os.path.join(db, n)) for n in fa)
        check(name + ': extracted files and archive are identical (%s)' % ', '.join(fa), same and len(fa) >= 2)
        r1 = s.run([LLVM + '/llvm-ar', 't', os.path.join(da, 'all.a')])
        r2 = s.run([LLVM + '/llvm-nm', '--print-armap', os.path.join(da, 'all.a')])
        check(name + ': llvm-ar and llvm-nm read our archive', r1.returncode == 0 and r2.returncode == 0,
              r1.stderr + r2.stderr)

        if link:
            link_and_run(s, name, flags)

    # Compiling and linking in one clang call goes through our packager too.
    if 'x86_64' in objects:
        point_packager_at(OT)
        r = s.run([CLANG, '-O2', '-fopenmp', '-fopenmp-targets=x86_64-pc-linux-gnu'] + CFLAGS + ['-B', bindir, 'prog.c',
                  '-o', 'direct'] + LIBS, env=NO_SETTING)
        check('compile and link in one clang call with -B', r.returncode == 0, r.stderr)
        if r.returncode == 0:
            r = run_program(s, s.path('direct'))
            check('that program runs on the host device', r.stdout.startswith(EXPECTED), r.stdout + r.stderr)


def link_and_run(s, name, flags):
    """Links our object and LLVM's with the release's clang-linker-wrapper; our
    program's target regions run on libomptarget's host device and print what
    LLVM's program prints."""
    outs = {}
    for tag in ('ours', 'llvm'):
        r = s.run([CLANG] + flags + ['%s-%s.o' % (name, tag), '-o', '%s-%s-prog' % (name, tag)] + LIBS)
        check('%s: clang-linker-wrapper %s links %s object' % (name, R, tag), r.returncode == 0, r.stderr)
        if r.returncode == 0:
            outs[tag] = run_program(s, s.path('%s-%s-prog' % (name, tag)))
    if 'ours' in outs:
        r = outs['ours']
        check(name + ': the target regions run on the host device', r.returncode == 0 and
              r.stdout.startswith(EXPECTED), r.stdout + r.stderr)
        check(name + ": the program prints what LLVM's prints", 'llvm' in outs and
              (r.returncode, r.stdout) == (outs['llvm'].returncode, outs['llvm'].stdout),
              r.stdout + '---\n' + (outs['llvm'].stdout if 'llvm' in outs else ''))


if __name__ == '__main__':
    sys.exit(main())
