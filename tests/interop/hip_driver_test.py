#!/usr/bin/env python3
"""The real clang driver (19, or 22 as hip-driver-22) compiles HIP through
offloadtool's clang-offload-bundler.

offloadtool gets no setting: OFFLOADTOOL_LLVM is removed from the driver's
environment, so the release comes from the clang that runs it (its llvm-N
folder and libLLVM; src/cli/release.h) -- clang 19 gets 19's bytes although
whatever the build's default. One case sets OFFLOADTOOL_LLVM instead.

clang++-19 is given `-B <dir>` where <dir>/clang-offload-bundler is a symlink,
once to LLVM 19's bundler and once to offloadtool; every product must be the
same. The -B directory and the working directory have the same paths in both
runs (the symlink is re-pointed), because HIP's compilation-unit ID hashes the
command line: with different paths the device code itself would differ.

No ROCm is installed: -nogpulib -nogpuinc, with the few declarations clang
needs written out in the sources, and stub HIP runtime entry points for the
host link.

Environment: OFFLOADTOOL = the offloadtool binary. Prints "N passed, M failed".
"""

import os
import re
import shlex
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import CLANGXX as CLANG, LLVM_BIN, LLVM_BUNDLER, OT as OURS, outcome as run, read, write  # noqa: E402

ARCHS = ['--offload-arch=gfx906', '--offload-arch=gfx90a', '--offload-arch=gfx1030']
HIP = ['-x', 'hip'] + ARCHS + ['-nogpulib', '-nogpuinc']

# How the driver spells a GPU's bundle entry for -fgpu-rdc and -type=a: clang 22
# passes hip-amdgcn-amd-amdhsa-unknown-gfx906 (its bundler reads 3 fields otherwise).
DEVICE_ID = 'hip-amdgcn-amd-amdhsa-unknown-' if harness.RELEASE == '22' else 'hip-amdgcn-amd-amdhsa-'

PRELUDE = harness.HIP_PRELUDE
KERNEL = PRELUDE + b'''
__device__ int twice(int v) { return 2 * v; }
__global__ void scale(int *x, int n) {
  int i = __builtin_amdgcn_workitem_id_x();
  if (i < n) x[i] = twice(x[i]);
}
int host_side(int v) { return v + 1; }
'''
RDC_A = PRELUDE + b'''
extern __device__ int twice(int v);
__global__ void scale(int *x, int n) {
  int i = __builtin_amdgcn_workitem_id_x();
  if (i < n) x[i] = twice(x[i]);
}
int main() { return 0; }
'''
RDC_B = PRELUDE + b'''
__device__ int twice(int v) { return 2 * v; }
__global__ void add(int *x, int n) { x[0] += twice(n); }
'''
# The HIP runtime entry points the host code references, for linking without ROCm.
STUBS = b'''struct dim3 { unsigned x, y, z; };
void **__hipRegisterFatBinary(const void *data) { static void *h; (void)data; return &h; }
void __hipRegisterFunction(void **m, const void *hf, char *df, const char *dn, unsigned t, void *a, void *b,
                           void *c, void *d, int *e) {}
void __hipRegisterVar(void **m, void *v, char *hv, const char *dv, int ext, unsigned long size, int c, int g) {}
void __hipUnregisterFatBinary(void **m) {}
int hipLaunchKernel(const void *f, struct dim3 g, struct dim3 b, void **args, unsigned long shm, void *s) { return 0; }
int __hipPopCallConfiguration(struct dim3 *g, struct dim3 *b, unsigned long *shm, void **s) { return 0; }
int __hipPushCallConfiguration(struct dim3 g, struct dim3 b, unsigned long shm, void *s) { return 0; }
'''
SOURCES = {'k.hip': KERNEL, 'a.hip': RDC_A, 'b.hip': RDC_B, 'stubs.c': STUBS}

ROOT = None


NO_SETTING = {'OFFLOADTOOL_LLVM': None}


def build(bundler, commands, extra_files=None, env=None):
    """Runs `commands` (lists of arguments; '{B}' is the -B directory) in a fresh
    working directory at a fixed path, with <B>/clang-offload-bundler -> bundler.
    Returns every file left in the directory, or raises with the failing step."""
    bdir = os.path.join(ROOT, 'B')
    link = os.path.join(bdir, 'clang-offload-bundler')
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(bundler, link)
    work = os.path.join(ROOT, 'w')
    if os.path.exists(work):
        shutil.rmtree(work)
    os.makedirs(work)
    harness.populate(work, dict(SOURCES, **(extra_files or {})))
    for argv in commands:
        argv = [a.replace('{B}', bdir) for a in argv]
        rc, out, err = run(argv, work, env=env or NO_SETTING)
        if rc != 0:
            raise RuntimeError('%s failed (rc %d) with %s:\n%s' % (' '.join(argv), rc, bundler, err))
    files = harness.tree_files(work)
    shutil.rmtree(work)
    return files


def same_products(commands, products, extra_files=None, env=None):
    """The named products of `commands` are byte-identical with both bundlers."""
    def fn():
        lf = build(LLVM_BUNDLER, commands, extra_files, env)
        of = build(OURS, commands, extra_files, env)
        problems = []
        for p in products:
            if p not in lf:
                problems.append('LLVM run made no %s' % p)
            elif p not in of:
                problems.append('offloadtool run made no %s' % p)
            elif lf[p] != of[p]:
                problems.append('%s differs (LLVM %d bytes, offloadtool %d bytes)' % (p, len(lf[p]), len(of[p])))
        if sorted(lf) != sorted(of):
            problems.append('different files: %s vs %s' % (sorted(lf), sorted(of)))
        return '\n'.join(problems) or None
    return fn


def driver_uses_bundler_from_b():
    bdir = os.path.join(ROOT, 'B')
    link = os.path.join(bdir, 'clang-offload-bundler')
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(OURS, link)
    rc, out, err = run([CLANG] + HIP + ['-B', bdir, '-c', 'k.hip', '-o', 'k.o', '-###'], ROOT)
    if rc != 0:
        return 'clang -### failed: %s' % err
    lines = [l for l in err.splitlines() if 'clang-offload-bundler' in l]
    want = '"%s" "-type=o" "-bundle-align=4096"' % link
    if not any(l.strip().startswith(want) for l in lines):
        return 'the driver does not run %s:\n%s' % (link, err)
    return None


def bundler_really_runs():
    """A wrong program behind the symlink must make the build fail: proves -B is used."""
    fake = write(os.path.join(ROOT, 'false-bundler'), '#!/bin/sh\nexit 3\n')
    os.chmod(fake, 0o755)
    try:
        build(fake, [[CLANG] + HIP + ['-B', '{B}', '-c', 'k.hip', '-o', 'k.o']])
    except RuntimeError:
        return None
    return 'the build succeeded without a working bundler in -B'


def rdc_objects():
    """-fgpu-rdc -c objects: offloadtool adds the device sections to the host
    object itself (no llvm-objcopy), so the object bytes differ from LLVM's by
    design. LLVM's bundler must read both identically, and the program linked
    from them must be byte-identical."""
    cmds = [[CLANG] + HIP + ['-fgpu-rdc', '-B', '{B}', '-c', 'a.hip', '-o', 'a.o'],
            [CLANG] + HIP + ['-fgpu-rdc', '-B', '{B}', '-c', 'b.hip', '-o', 'b.o']]
    lf = build(LLVM_BUNDLER, cmds)
    of = build(OURS, cmds)
    problems = []
    # the IDs the driver gives -fgpu-rdc objects
    targets = ','.join(['host-x86_64-pc-linux-gnu'] + [DEVICE_ID + a for a in ('gfx906', 'gfx90a', 'gfx1030')])
    for obj in ('a.o', 'b.o'):
        outs = {}
        for tag, files in (('llvm', lf), ('ours', of)):
            d = os.path.join(ROOT, 'rdc-' + tag)
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            write(os.path.join(d, obj), files[obj])
            rc, out, err = run([LLVM_BUNDLER, '-type=o', '-list', '-input=' + obj], d)
            rc2, _, err2 = run([LLVM_BUNDLER, '-type=o', '-unbundle', '-targets=' + targets, '-input=' + obj,
                                '-output=host.o', '-output=d906', '-output=d90a', '-output=d1030'], d)
            if rc or rc2:
                problems.append("LLVM's bundler cannot read %s's %s: %s %s" % (tag, obj, err, err2))
                continue
            dis = run([LLVM_BIN + '/llvm-objdump', '-d', '-r', '-t', '-s', 'host.o'], d)[1].replace(d, '')
            device = {n: read(os.path.join(d, n)) for n in ('d906', 'd90a', 'd1030')}
            outs[tag] = (out, dis, device)
        if len(outs) == 2:
            if outs['llvm'][0] != outs['ours'][0]:
                problems.append('%s: -list differs: %r vs %r' % (obj, outs['llvm'][0], outs['ours'][0]))
            if outs['llvm'][1] != outs['ours'][1]:
                problems.append('%s: host objects differ in contents' % obj)
            for n in outs['llvm'][2]:
                if outs['llvm'][2][n] != outs['ours'][2][n]:
                    problems.append('%s: device code %s differs' % (obj, n))
    return '\n'.join(problems) or None


def rdc_link():
    """Objects made and linked with each bundler; also offloadtool's objects linked
    through LLVM's bundler: the programs are byte-identical."""
    cmds = [[CLANG] + HIP + ['-fgpu-rdc', '-B', '{B}', '-c', 'a.hip', '-o', 'a.o'],
            [CLANG] + HIP + ['-fgpu-rdc', '-B', '{B}', '-c', 'b.hip', '-o', 'b.o'],
            [LLVM_BIN + '/clang', '-c', 'stubs.c', '-o', 'stubs.o'],
            [CLANG, '-fgpu-rdc', '--hip-link'] + ARCHS + ['-no-hip-rt', '-fuse-ld=lld', '-B', '{B}', 'a.o', 'b.o',
                                                          'stubs.o', '-o', 'prog']]
    lf = build(LLVM_BUNDLER, cmds)
    of = build(OURS, cmds)
    problems = []
    if lf['prog'] != of['prog']:
        problems.append('the linked programs differ')
    # offloadtool's objects, linked with LLVM's bundler doing the unbundling
    mixed = build(LLVM_BUNDLER, cmds[2:], {'a.o': of['a.o'], 'b.o': of['b.o']})
    if mixed['prog'] != lf['prog']:
        problems.append("offloadtool's objects linked through LLVM's bundler give another program")
    # LLVM's objects linked through offloadtool
    mixed = build(OURS, cmds[2:], {'a.o': lf['a.o'], 'b.o': lf['b.o']})
    if mixed['prog'] != lf['prog']:
        problems.append("LLVM's objects linked through offloadtool give another program")
    d = os.path.join(ROOT, 'progdir')
    os.makedirs(d, exist_ok=True)
    write(os.path.join(d, 'prog'), of['prog'])
    os.chmod(os.path.join(d, 'prog'), 0o755)
    rc, out, err = run(['./prog'], d)
    if rc != 0:
        problems.append('the program does not run: rc %d %s' % (rc, err))
    return '\n'.join(problems) or None


def rdc_static_library():
    """A HIP -fgpu-rdc program linked against a static device library
    (-L. -lfoo): the driver unbundles libfoo.a with clang-offload-bundler
    -type=a for each GPU (into temporary files). With -save-temps every device
    intermediate (LTO inputs and outputs, code objects) and the program are
    byte-identical with both bundlers; the driver's own -type=a command, run
    by hand, writes the same device archives with both."""
    lib_cmds = [[CLANG] + HIP + ['-fgpu-rdc', '-B', '{B}', '-c', 'b.hip', '-o', 'b.o'],
                [LLVM_BIN + '/llvm-ar', 'rcs', 'libfoo.a', 'b.o'],
                [CLANG] + HIP + ['-fgpu-rdc', '-B', '{B}', '-c', 'a.hip', '-o', 'a.o'],
                [LLVM_BIN + '/clang', '-c', 'stubs.c', '-o', 'stubs.o']]
    link = [CLANG, '-fgpu-rdc', '--hip-link'] + ARCHS[:2] + ['-no-hip-rt', '-fuse-ld=lld', '-B', '{B}', 'a.o',
                                                             'stubs.o', '-L.', '-lfoo', '-o', 'prog']
    dry_run = ['sh', '-c', ' '.join(shlex.quote(a) for a in link) + ' -### 2> driver.txt']
    # the command the driver runs for each GPU (reference 2.17), run by hand
    # (by hand, no clang runs it: the release is given)
    by_hand = [['env', 'OFFLOADTOOL_LLVM=' + harness.RELEASE, '{B}/clang-offload-bundler', '-unbundle', '-type=a',
                '-input=./libfoo.a',
                '-targets=' + DEVICE_ID + arch, '-output=libbc-foo-amdgcn-%s.a' % arch,
                '-allow-missing-bundles', '-hip-openmp-compatible'] for arch in ('gfx906', 'gfx90a')]
    cmds = lib_cmds + [dry_run, link + ['-save-temps']] + by_hand
    lf = build(LLVM_BUNDLER, cmds)
    of = build(OURS, cmds)
    problems = []
    driver = of['driver.txt'].decode(errors='replace')
    for arch in ('gfx906', 'gfx90a'):
        if not re.search(r'clang-offload-bundler" "-unbundle" "-type=a" "-input=./libfoo.a" '
                         r'"-targets=%s%s"' % (DEVICE_ID, arch), driver):
            problems.append('the driver runs no -type=a unbundling of libfoo.a for %s:\n%s' % (arch, driver))
    # Device products only: host objects are made by llvm-objcopy on one side
    # and natively on the other (same contents, other layout; see rdc_objects),
    # and the LTO resolution files list the driver's random temporary names.
    compared = [n for n in sorted(set(lf) | set(of))
                if n == 'prog' or ('amdgcn' in n and not n.endswith('.resolution.txt'))]
    if len([n for n in compared if n.startswith('libbc-foo-')]) != 2 or 'prog' not in compared:
        problems.append('missing products: %s' % compared)
    for n in compared:
        if lf.get(n) != of.get(n):
            problems.append('%s differs' % n)
    for arch in ('gfx906', 'gfx90a'):
        a = of.get('libbc-foo-amdgcn-%s.a' % arch, b'')
        if b'twice' not in a:
            problems.append('the device archive for %s holds no definition of twice()' % arch)
    # LLVM's library and objects linked through offloadtool
    mixed = build(OURS, [link], {'a.o': lf['a.o'], 'stubs.o': lf['stubs.o'], 'libfoo.a': lf['libfoo.a']})
    if mixed['prog'] != lf['prog']:
        problems.append("LLVM's library linked through offloadtool gives another program")
    return '\n'.join(problems) or None


def main():
    return harness.run_suite('hip-driver', cases, needs=[CLANG, LLVM_BUNDLER] + [
        LLVM_BIN + '/' + t for t in ('ld.lld', 'clang', 'llvm-ar', 'llvm-objdump')])


def cases(root):
    global ROOT
    ROOT = root
    os.makedirs(os.path.join(ROOT, 'B'))
    harness.populate(ROOT, SOURCES)
    B = ['-B', '{B}']
    harness.run_cases([
        ('driver runs the bundler from -B (-###)', driver_uses_bundler_from_b),
        ('the -B bundler is really used', bundler_really_runs),
        ('fat binary -c', same_products([[CLANG] + HIP + B + ['-c', 'k.hip', '-o', 'k.o']], ['k.o'])),
        ('fat binary -c, two archs', same_products(
            [[CLANG, '-x', 'hip', '--offload-arch=gfx906', '--offload-arch=gfx90a', '-nogpulib', '-nogpuinc'] + B +
             ['-c', 'k.hip', '-o', 'k.o']], ['k.o'])),
        ('fat binary -c, target-ID features', same_products(
            [[CLANG, '-x', 'hip', '--offload-arch=gfx906:xnack+', '--offload-arch=gfx90a:sramecc-:xnack-',
              '-nogpulib', '-nogpuinc'] + B + ['-c', 'k.hip', '-o', 'k.o']], ['k.o'])),
        ('--offload-compress -c', same_products(
            [[CLANG] + HIP + B + ['--offload-compress', '-c', 'k.hip', '-o', 'k.o']], ['k.o'])),
        ('--offload-compress -c with OFFLOADTOOL_LLVM=%s' % harness.RELEASE, same_products(
            [[CLANG] + HIP + B + ['--offload-compress', '-c', 'k.hip', '-o', 'k.o']], ['k.o'],
            env={'OFFLOADTOOL_LLVM': harness.RELEASE})),
        ('--offload-compress --offload-compression-level=9 -c', same_products(
            [[CLANG] + HIP + B + ['--offload-compress', '--offload-compression-level=9', '-c', 'k.hip', '-o', 'k.o']],
            ['k.o'])),
        ('-save-temps -c (every intermediate, the .hipfb included)', same_products(
            [[CLANG] + HIP + B + ['-save-temps', '-c', 'k.hip', '-o', 'k.o']],
            ['k.o', 'k.hip-hip-amdgcn-amd-amdhsa.hipfb', 'k-host-x86_64-pc-linux-gnu.s'])),
        ('-S', same_products([[CLANG] + HIP + B + ['-S', 'k.hip', '-o', 'k.s']], ['k.s'])),
        ('-E then compile the .hipi', same_products(
            [[CLANG] + HIP + B + ['-E', 'k.hip', '-o', 'k.hipi'],
             [CLANG] + ARCHS + ['-nogpulib', '-nogpuinc'] + B + ['-c', 'k.hipi', '-o', 'k.o']], ['k.hipi', 'k.o'])),
        ('-emit-llvm -c', same_products([[CLANG] + HIP + B + ['-emit-llvm', '-c', 'k.hip', '-o', 'k.bc']], ['k.bc'])),
        ('-emit-llvm -S', same_products([[CLANG] + HIP + B + ['-emit-llvm', '-S', 'k.hip', '-o', 'k.ll']], ['k.ll'])),
        ('-fgpu-rdc -c objects read identically', rdc_objects),
        ('-fgpu-rdc objects linked into a program', rdc_link),
        ('-fgpu-rdc program linked against a static device library (-type=a)', rdc_static_library),
    ])


if __name__ == '__main__':
    sys.exit(main())
