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
exits 1 on failure. A part whose tools are not installed is reported as skipped.
"""

import os
import shutil
import subprocess
import sys
import tempfile

LLVM = '/usr/lib/llvm-19/bin'
CLANG = LLVM + '/clang'
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


class Suite:
    def __init__(self):
        self.passed = self.failed = 0
        self.dir = tempfile.mkdtemp(prefix='packager-interop-')

    def check(self, what, ok, detail=''):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print('FAIL', what)
            if detail:
                print('    ' + str(detail).strip().replace('\n', '\n    ')[:3000])
        return ok

    def run(self, argv, env=None, cwd=None):
        e = dict(os.environ)
        e.update(env or {})
        return subprocess.run(argv, cwd=cwd or self.dir, capture_output=True, text=True, env=e)

    def path(self, name):
        return os.path.join(self.dir, name)


def section(s, obj, name='.llvm.offloading'):
    out = s.path(os.path.basename(obj) + '.section')
    r = s.run([LLVM + '/llvm-objcopy', '--dump-section', name + '=' + out, obj, s.path('objcopy.tmp')])
    if r.returncode != 0:
        return None
    with open(out, 'rb') as f:
        return f.read()


def main():
    ot = os.environ.get('OFFLOADTOOL')
    s = Suite()
    if not ot or not os.path.exists(CLANG):
        print('skipped: OFFLOADTOOL not set or clang 19 not installed')
        print('0 passed, 0 failed')
        return 0
    bindir = s.path('bin')
    os.makedirs(bindir)
    ours = os.path.join(bindir, 'clang-offload-packager')
    os.symlink(os.path.abspath(ot), ours)
    with open(s.path('prog.c'), 'w') as f:
        f.write(SOURCE)

    configs = [
        ('x86_64', ['-fopenmp-targets=x86_64-pc-linux-gnu'], True),
        ('amdgpu', ['--offload-arch=gfx906,gfx90a', '-nogpulib'], False),
        ('nvptx', ['--offload-arch=sm_80', '-nogpulib'], False),
    ]
    objects = {}
    for name, flags, link in configs:
        base = [CLANG, '-O2', '-fopenmp'] + flags + ['-c', 'prog.c']
        r = s.run(base + ['-B', bindir, '-o', name + '-ours.o', '-###'])
        s.check(name + ': clang -### runs our clang-offload-packager',
                r.returncode == 0 and ('"%s"' % ours) in r.stderr and LLVM + '/clang-offload-packager' not in r.stderr,
                r.stderr)
        r_ours = s.run(base + ['-B', bindir, '-o', name + '-ours.o'])
        r_llvm = s.run(base + ['-o', name + '-llvm.o'])
        if r_llvm.returncode != 0:
            print('skipped %s: clang cannot build it here (%s)' % (name, r_llvm.stderr.strip()[:200]))
            continue
        s.check(name + ': clang builds with offloadtool', r_ours.returncode == 0, r_ours.stderr)
        if r_ours.returncode != 0:
            continue
        a, b = section(s, s.path(name + '-ours.o')), section(s, s.path(name + '-llvm.o'))
        s.check(name + ': .llvm.offloading is byte-identical to LLVM\'s', a is not None and a == b,
                'ours %s bytes, llvm %s bytes' % (len(a) if a else None, len(b) if b else None))
        with open(s.path(name + '-ours.o'), 'rb') as f1, open(s.path(name + '-llvm.o'), 'rb') as f2:
            s.check(name + ': the whole object is byte-identical', f1.read() == f2.read())
        objects[name] = s.path(name + '-ours.o')

        # llvm-objdump reads what we embedded.
        r1 = s.run([LLVM + '/llvm-objdump', '--offloading', name + '-ours.o'])
        r2 = s.run([LLVM + '/llvm-objdump', '--offloading', name + '-llvm.o'])
        s.check(name + ': llvm-objdump --offloading agrees', r1.returncode == 0 and
                r1.stdout.replace('-ours.o', '') == r2.stdout.replace('-llvm.o', ''), r1.stdout + r1.stderr)

        # Each tool extracts the same images from the object.
        for tool, tag in ((ours, 'ours'), (LLVM + '/clang-offload-packager', 'llvm')):
            d = s.path('x-%s-%s' % (name, tag))
            os.makedirs(d)
            r = s.run([tool, os.path.join('..', name + '-ours.o'), '--image=kind=openmp'], cwd=d)
            r2 = s.run([tool, os.path.join('..', name + '-ours.o'), '--image=file=all.a,kind=openmp', '--archive'],
                       cwd=d)
            s.check('%s: %s extracts' % (name, tag), r.returncode == r2.returncode == 0 and not r.stderr + r2.stderr,
                    r.stderr + r2.stderr)
        da, db = s.path('x-%s-ours' % name), s.path('x-%s-llvm' % name)
        fa, fb = sorted(os.listdir(da)), sorted(os.listdir(db))
        same = fa == fb and all(open(os.path.join(da, n), 'rb').read() == open(os.path.join(db, n), 'rb').read()
                                for n in fa)
        s.check(name + ': extracted files and archive are identical (%s)' % ', '.join(fa), same and len(fa) >= 2)
        r1 = s.run([LLVM + '/llvm-ar', 't', os.path.join(da, 'all.a')])
        r2 = s.run([LLVM + '/llvm-nm', '--print-armap', os.path.join(da, 'all.a')])
        s.check(name + ': llvm-ar and llvm-nm read our archive', r1.returncode == 0 and r2.returncode == 0,
                r1.stderr + r2.stderr)

        if not link:
            continue
        if not os.path.exists(LIBDIR + '/libomptarget.so'):
            print('skipped %s run: libomptarget 19 not installed' % name)
            continue
        r = s.run([CLANG, '-fopenmp'] + flags + [name + '-ours.o', '-o', name + '-prog', '-L' + LIBDIR,
                                                 '-Wl,-rpath,' + LIBDIR])
        s.check(name + ': clang-linker-wrapper links our object', r.returncode == 0, r.stderr)
        if r.returncode == 0:
            r = s.run([s.path(name + '-prog')], env={'LD_LIBRARY_PATH': LIBDIR, 'OMP_TARGET_OFFLOAD': 'MANDATORY'})
            s.check(name + ': the target regions run on the host device', r.returncode == 0 and
                    r.stdout.startswith(EXPECTED), r.stdout + r.stderr)

    # A program whose host object holds the images of two toolchains runs the same way.
    if 'x86_64' in objects:
        r = s.run([CLANG, '-O2', '-fopenmp', '-fopenmp-targets=x86_64-pc-linux-gnu', '-B', bindir, 'prog.c',
                   '-o', 'direct', '-L' + LIBDIR, '-Wl,-rpath,' + LIBDIR])
        s.check('compile and link in one clang call with -B', r.returncode == 0, r.stderr)
        if r.returncode == 0:
            r = s.run([s.path('direct')], env={'LD_LIBRARY_PATH': LIBDIR, 'OMP_TARGET_OFFLOAD': 'MANDATORY'})
            s.check('that program runs on the host device', r.stdout.startswith(EXPECTED), r.stdout + r.stderr)

    shutil.rmtree(s.dir, ignore_errors=True)
    print('%d passed, %d failed' % (s.passed, s.failed))
    return 1 if s.failed else 0


if __name__ == '__main__':
    sys.exit(main())
