#!/usr/bin/env python3
"""offloadtool as clang 19's clang-offload-packager.

1. clang-19 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu, with -B pointing at
   a folder that holds a clang-offload-packager symlink to offloadtool (-###
   shows clang really runs it): the object's .llvm.offloading section equals
   the one built with LLVM's packager; the real clang-linker-wrapper links the
   program and its target regions run on libomptarget's host (x86_64) device
   with the right results (OMP_TARGET_OFFLOAD=MANDATORY).
2. The same section identity for --offload-arch=gfx906,gfx90a -nogpulib and
   --offload-arch=sm_80 -nogpulib (compile only).
3. llvm-objdump --offloading reads our objects; each tool extracts from the
   other's objects the same images; llvm-ar accepts our --archive outputs
   (and llvm-nm lists the same archive map).

Environment: OFFLOADTOOL = the offloadtool binary. Prints "N passed, M failed";
exits 1 on failure, and when clang 19, its tools or libomptarget 19 are missing.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import CLANG, LLVM_BIN as LLVM, LLVM_PACKAGER, OT, check, read  # noqa: E402

LIBDIR = '/usr/lib/llvm-19/lib'

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


NEEDS = [CLANG, LLVM_PACKAGER, LIBDIR + '/libomptarget.so'] + [LLVM + '/' + t for t in (
    'llvm-objcopy', 'llvm-objdump', 'llvm-ar', 'llvm-nm')]


def section(s, obj, name='.llvm.offloading'):
    out = s.path(os.path.basename(obj) + '.section')
    r = s.run([LLVM + '/llvm-objcopy', '--dump-section', name + '=' + out, obj, s.path('objcopy.tmp')])
    if r.returncode != 0:
        return None
    return read(out)


def main():
    return harness.run_suite('packager-interop', cases, needs=NEEDS)


def cases(root):
    s = harness.Folder(path=root, text=True)
    bindir = s.path('bin')
    os.makedirs(bindir)
    ours = os.path.join(bindir, 'clang-offload-packager')
    os.symlink(OT, ours)
    s.put('prog.c', SOURCE)

    configs = [
        ('x86_64', ['-fopenmp-targets=x86_64-pc-linux-gnu'], True),
        ('amdgpu', ['--offload-arch=gfx906,gfx90a', '-nogpulib'], False),
        ('nvptx', ['--offload-arch=sm_80', '-nogpulib'], False),
    ]
    objects = {}
    for name, flags, link in configs:
        base = [CLANG, '-O2', '-fopenmp'] + flags + ['-c', 'prog.c']
        r = s.run(base + ['-B', bindir, '-o', name + '-ours.o', '-###'])
        check(name + ': clang -### runs our clang-offload-packager',
              r.returncode == 0 and ('"%s"' % ours) in r.stderr and LLVM + '/clang-offload-packager' not in r.stderr,
              r.stderr)
        r_ours = s.run(base + ['-B', bindir, '-o', name + '-ours.o'])
        r_llvm = s.run(base + ['-o', name + '-llvm.o'])
        if r_llvm.returncode != 0:
            check(name + ': clang builds with LLVM\'s packager', False, r_llvm.stderr)
            continue
        check(name + ': clang builds with offloadtool', r_ours.returncode == 0, r_ours.stderr)
        if r_ours.returncode != 0:
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

        # Each tool extracts the same images from the object.
        for tool, tag in ((ours, 'ours'), (LLVM_PACKAGER, 'llvm')):
            d = s.path('x-%s-%s' % (name, tag))
            os.makedirs(d)
            r = s.run([tool, os.path.join('..', name + '-ours.o'), '--image=kind=openmp'], cwd=d)
            r2 = s.run([tool, os.path.join('..', name + '-ours.o'), '--image=file=all.a,kind=openmp', '--archive'],
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

        if not link:
            continue
        r = s.run([CLANG, '-fopenmp'] + flags + [name + '-ours.o', '-o', name + '-prog', '-L' + LIBDIR,
                                                 '-Wl,-rpath,' + LIBDIR])
        check(name + ': clang-linker-wrapper links our object', r.returncode == 0, r.stderr)
        if r.returncode == 0:
            r = s.run([s.path(name + '-prog')], env={'LD_LIBRARY_PATH': LIBDIR, 'OMP_TARGET_OFFLOAD': 'MANDATORY'})
            check(name + ': the target regions run on the host device', r.returncode == 0 and
                  r.stdout.startswith(EXPECTED), r.stdout + r.stderr)

    # A program whose host object holds the images of two toolchains runs the same way.
    if 'x86_64' in objects:
        r = s.run([CLANG, '-O2', '-fopenmp', '-fopenmp-targets=x86_64-pc-linux-gnu', '-B', bindir, 'prog.c',
                   '-o', 'direct', '-L' + LIBDIR, '-Wl,-rpath,' + LIBDIR])
        check('compile and link in one clang call with -B', r.returncode == 0, r.stderr)
        if r.returncode == 0:
            r = s.run([s.path('direct')], env={'LD_LIBRARY_PATH': LIBDIR, 'OMP_TARGET_OFFLOAD': 'MANDATORY'})
            check('that program runs on the host device', r.stdout.startswith(EXPECTED), r.stdout + r.stderr)


if __name__ == '__main__':
    sys.exit(main())
