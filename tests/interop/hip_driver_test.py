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

As bundler-hip-driver-23 (clang 23, Debian sid's, in scripts/fetch-llvm23's
chroot; tests/lib/harness.py): HIP goes through the new offload driver.
clang runs llvm-offload-binary (the -B one) to pack the device bitcode and
clang-linker-wrapper to make a non-RDC object's .hip_fatbin and to link. The
wrapper runs the bundler from beside itself (not the one the driver names in
--linker-path), and with -no-canonical-prefixes "itself" is
<B>/clang-linker-wrapper, which the driver takes from -B. So the -B folder
holds offloadtool (or LLVM 23's tools) under both names, and LLVM 23's clang,
clang-linker-wrapper and ld.lld; every clang command has
-no-canonical-prefixes (and clang's own -resource-dir). offloadtool runs
inside the chroot (the static build), with no setting: the release is its
parent's, clang 23's or clang-linker-wrapper 23's; -fgpu-rdc objects embed
the packager's OffloadBinary, whose version 2 only release 23 writes. The
programs run inside the chroot (harness.in_llvm23_chroot) on stand-in HIP
entry points that print what is registered.

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

R23 = harness.RELEASE == '23'
# The tools under test, by the names the driver runs them by from -B.
TESTED = ('clang-offload-bundler', 'llvm-offload-binary') if R23 else ('clang-offload-bundler',)
# 23: LLVM's own beside them in -B, for links with -no-canonical-prefixes (the docstring).
LLVM_IN_B = ('clang', 'clang-linker-wrapper', 'ld.lld') if R23 else ()
# -no-canonical-prefixes makes the folder of clang's argv[0] (the chroot
# wrapper's) its installation: its headers are named instead.
LINK_B = ['-no-canonical-prefixes', '-resource-dir', '/usr/lib/llvm-23/lib/clang/23', '-B', '{B}'] if R23 else [
    '-B', '{B}']

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
STUBS = b'''#include <stdio.h>
struct dim3 { unsigned x, y, z; };
struct fatbin_wrapper { int magic, version; const char *data; void *unused; };
void **__hipRegisterFatBinary(const struct fatbin_wrapper *w) {
  static void *h;
  printf("fatbin magic=%x version=%d data=%.24s\\n", w->magic, w->version, w->data);
  return &h;
}
void __hipRegisterFunction(void **m, const void *hf, char *df, const char *dn, unsigned t, void *a, void *b,
                           void *c, void *d, int *e) { printf("function %s\\n", dn); }
void __hipRegisterVar(void **m, void *v, char *hv, const char *dv, int ext, unsigned long size, int c, int g) {
  printf("variable %s\\n", dv);
}
void __hipRegisterSurface(void) {}
void __hipRegisterTexture(void) {}
void __hipRegisterManagedVar(void) {}
void __hipUnregisterFatBinary(void **m) {}
int hipLaunchKernel(const void *f, struct dim3 g, struct dim3 b, void **args, unsigned long shm, void *s) { return 0; }
int __hipPopCallConfiguration(struct dim3 *g, struct dim3 *b, unsigned long *shm, void **s) { return 0; }
int __hipPushCallConfiguration(struct dim3 g, struct dim3 b, unsigned long shm, void *s) { return 0; }
'''
SOURCES = {'k.hip': KERNEL, 'a.hip': RDC_A, 'b.hip': RDC_B, 'stubs.c': STUBS,
           'main.c': b'int main(void) { return 0; }\n'}

ROOT = None


NO_SETTING = {'OFFLOADTOOL_LLVM': None}


def point_b(tools):
    """<B>/<name> -> the tool for each name in TESTED: `tools` is LLVM_BUNDLER
    (LLVM's tools of those names), another path (the same for every name) or a
    dict name -> path."""
    for name in TESTED:
        link = os.path.join(ROOT, 'B', name)
        if os.path.lexists(link):
            os.unlink(link)
        if isinstance(tools, dict):
            os.symlink(tools[name], link)
        else:
            os.symlink(harness.llvm(name) if tools == LLVM_BUNDLER else tools, link)


def run_program(folder):
    """(exit code, stdout, stderr) of ./prog in `folder`: inside LLVM 23's chroot for clang 23's programs."""
    if R23:
        r = harness.in_llvm23_chroot(['./prog'], folder, text=True)
        return r.returncode, r.stdout, r.stderr
    return run(['./prog'], folder)


def build(bundler, commands, extra_files=None, env=None):
    """Runs `commands` (lists of arguments; '{B}' is the -B directory) in a fresh
    working directory at a fixed path, with <B>/clang-offload-bundler -> bundler
    (and the other TESTED names: point_b). Returns every file left in the
    directory, or raises with the failing step."""
    bdir = os.path.join(ROOT, 'B')
    point_b(bundler)
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
    rc, out, err = run_program(program_folder(of['prog']))
    if rc != 0:
        problems.append('the program does not run: rc %d %s' % (rc, err))
    return '\n'.join(problems) or None


def program_folder(prog, name='progdir'):
    d = os.path.join(ROOT, name)
    os.makedirs(d, exist_ok=True)
    write(os.path.join(d, 'prog'), prog)
    os.chmod(os.path.join(d, 'prog'), 0o755)
    return d


def ran_alike(lf, of, prog='prog'):
    """The programs LLVM's and offloadtool's runs linked run and print the same
    registrations (a fat binary, the kernels); the problems found."""
    outs = []
    for tag, files in (('LLVM', lf), ('offloadtool', of)):
        rc, out, err = run_program(program_folder(files[prog], 'run-' + tag))
        if rc != 0 or 'fatbin magic=48495046' not in out or 'function ' not in out:
            return ["%s's %s does not run or registers nothing: rc %s\n%s%s" % (tag, prog, rc, out, err)]
        outs.append(out)
    return [] if outs[0] == outs[1] else ['%s prints otherwise:\n%s---\n%s' % (prog, outs[0], outs[1])]


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


def driver_runs_tools_from_b_23():
    """clang 23 -###: -c runs <B>/llvm-offload-binary and
    <B>/clang-linker-wrapper (which takes the bundler beside itself), and so
    does a link."""
    bdir = os.path.join(ROOT, 'B')
    point_b(OURS)
    problems = []
    b = [a.replace('{B}', bdir) for a in LINK_B]
    rc, out, err = run([CLANG] + HIP + b + ['-c', 'k.hip', '-o', 'k.o', '-###'], ROOT)
    for want in ('"%s/llvm-offload-binary" "-o"' % bdir, '"%s/clang-linker-wrapper"' % bdir):
        if rc != 0 or want not in err:
            problems.append('the driver does not run %s:\n%s' % (want, err))
    rc, out, err = run([CLANG, '-fgpu-rdc', '--hip-link'] + ARCHS + ['-no-hip-rt'] + b + ['x.o', '-o', 'prog', '-###'],
                       ROOT)
    if rc != 0 or '"%s/clang-linker-wrapper"' % bdir not in err:
        problems.append('the link does not run <B>/clang-linker-wrapper:\n%s' % err)
    return '\n'.join(problems) or None


def tools_really_run_23():
    """A wrong program behind either name makes the build fail: proves -B is used,
    and by clang-linker-wrapper at link time."""
    fake = write(os.path.join(ROOT, 'false-tool'), '#!/bin/sh\nexit 3\n')
    os.chmod(fake, 0o755)
    problems = []
    rdc = [[CLANG] + HIP + ['-fgpu-rdc'] + LINK_B + ['-c', 'b.hip', '-o', 'b.o']]
    for name in TESTED:
        tools = dict({n: OURS for n in TESTED}, **{name: fake})
        try:
            build(tools, [[CLANG] + HIP + LINK_B + ['-c', 'k.hip', '-o', 'k.o']])
            problems.append('-c succeeded with a failing %s in -B' % name)
        except RuntimeError:
            pass
    try:
        build({'clang-offload-bundler': fake, 'llvm-offload-binary': OURS}, rdc + [
            [CLANG, '-fgpu-rdc', '--hip-link'] + ARCHS + ['-no-hip-rt'] + LINK_B + ['b.o', '-o', 'prog.so', '-shared']])
        problems.append('an -fgpu-rdc link succeeded with a failing clang-offload-bundler in -B')
    except RuntimeError:
        pass
    return '\n'.join(problems) or None


def fat_binary_23(extra, env=None):
    """-c with `extra` flags, the object linked into a program (stand-in HIP
    entry points): both byte-identical with either side's tools; both run
    alike. The link runs no offload tool (nothing to extract)."""
    cmds = [[CLANG] + HIP + LINK_B + extra + ['-c', 'k.hip', '-o', 'k.o'],
            [LLVM_BIN + '/clang', '-c', 'stubs.c', '-o', 'stubs.o'],
            [LLVM_BIN + '/clang', '-c', 'main.c', '-o', 'main.o'],
            [CLANG, '--hip-link', '-no-hip-rt'] + LINK_B + ['k.o', 'stubs.o', 'main.o', '-o', 'prog']]

    def fn():
        lf = build(LLVM_BUNDLER, cmds, env=env)
        of = build(OURS, cmds, env=env)
        problems = ['%s differs' % p for p in ('k.o', 'prog') if lf[p] != of[p]]
        return '\n'.join(problems + ran_alike(lf, of)) or None
    return fn


def rdc_link_23():
    """-fgpu-rdc objects (OffloadBinary version 2 in .llvm.offloading) linked
    into a program, plain and --offload-compress, with either side's tools:
    objects and programs byte-identical, and they run alike; LLVM's objects
    linked through offloadtool's bundler give LLVM's programs."""
    link = [CLANG, '-fgpu-rdc', '--hip-link'] + ARCHS + ['-no-hip-rt'] + LINK_B + ['a.o', 'b.o', 'stubs.o']
    cmds = [[CLANG] + HIP + ['-fgpu-rdc'] + LINK_B + ['-c', 'a.hip', '-o', 'a.o'],
            [CLANG] + HIP + ['-fgpu-rdc'] + LINK_B + ['-c', 'b.hip', '-o', 'b.o'],
            [LLVM_BIN + '/clang', '-c', 'stubs.c', '-o', 'stubs.o'],
            link + ['-o', 'prog'], link + ['--offload-compress', '-o', 'progz']]
    lf = build(LLVM_BUNDLER, cmds)
    of = build(OURS, cmds)
    problems = ['%s differs' % p for p in ('a.o', 'b.o', 'prog', 'progz') if lf[p] != of[p]]
    if b'CCOB' not in of['progz']:
        problems.append('--offload-compress linked no compressed bundle')
    mixed = build(OURS, cmds[2:], {'a.o': lf['a.o'], 'b.o': lf['b.o']})
    problems += ["LLVM's objects linked through offloadtool give another %s" % p
                 for p in ('prog', 'progz') if mixed[p] != lf[p]]
    problems += ran_alike(lf, of) + ran_alike(lf, of, 'progz')
    return '\n'.join(problems) or None


def cases_23():
    B = LINK_B
    # One feature each: for two (gfx90a:sramecc-:xnack-) the driver gives the
    # packager `feature` twice, and LLVM 23's packager writes bytes of freed
    # memory for the joined value (docs/llvm23.md): its objects differ run to run.
    FEATURES = ['-x', 'hip', '--offload-arch=gfx906:xnack+', '--offload-arch=gfx90a:xnack-', '-nogpulib', '-nogpuinc']
    return [
        ('driver runs llvm-offload-binary and the bundler from -B (-###)', driver_runs_tools_from_b_23),
        ('the -B tools are really used, by the driver and by clang-linker-wrapper', tools_really_run_23),
        ('fat binary -c, linked into a program', fat_binary_23([])),
        ('--offload-compress -c, linked into a program', fat_binary_23(['--offload-compress'])),
        ('--offload-compress --offload-compression-level=9 -c, with OFFLOADTOOL_LLVM=23',
         fat_binary_23(['--offload-compress', '--offload-compression-level=9'], env={'OFFLOADTOOL_LLVM': '23'})),
        # 22 drops these names from bundle IDs (offloadtool as 22 refuses them): the bundler
        # clang-linker-wrapper 23 runs takes 23 from it
        ('fat binary -c for GPUs new in 23 (gfx1170, gfx12-5-generic)', same_products(
            [[CLANG, '-x', 'hip', '--offload-arch=gfx1170', '--offload-arch=gfx12-5-generic', '-nogpulib',
              '-nogpuinc'] + B + ['-c', 'k.hip', '-o', 'k.o']], ['k.o'])),
        ("-save-temps -c (the packager's OffloadBinary, the .hipfb, every intermediate)", same_products(
            [[CLANG] + HIP + B + ['-save-temps', '-c', 'k.hip', '-o', 'k.o']],
            ['k.o', 'k-hip-amdgcn-amd-amdhsa.out', 'k.hip-hip-amdgcn-amd-amdhsa.hipfb'])),
        ('-S', same_products([[CLANG] + HIP + B + ['-S', 'k.hip', '-o', 'k.s']], ['k.s'])),
        ("-fgpu-rdc -c, target-ID features (the packager's feature key in 23's order)", same_products(
            [[CLANG] + FEATURES + B + ['-fgpu-rdc', '-c', 'k.hip', '-o', 'k.o']], ['k.o'])),
        ('-fgpu-rdc objects linked into programs', rdc_link_23),
    ]


def main():
    return harness.run_suite('hip-driver' + ('-23' if R23 else ''), cases, needs=[CLANG, LLVM_BUNDLER] + [
        LLVM_BIN + '/' + t for t in ('ld.lld', 'clang', 'llvm-ar', 'llvm-objdump')] + [
        harness.llvm(t) for t in TESTED + LLVM_IN_B])


def cases(root):
    global ROOT
    ROOT = root
    os.makedirs(os.path.join(ROOT, 'B'))
    harness.populate(ROOT, SOURCES)
    B = ['-B', '{B}']
    if R23:
        for name in LLVM_IN_B:
            os.symlink(harness.llvm(name), os.path.join(ROOT, 'B', name))
        write(os.path.join(ROOT, 'x.o'), b'')  # for -### of a link
        r = harness.in_llvm23_chroot([OURS, '--version'], ROOT, text=True)
        harness.check('offloadtool runs inside the chroot, where clang 23 runs it (the static build does)',
                      r.returncode == 0, r.stderr)
        harness.run_cases(cases_23())
        return
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
