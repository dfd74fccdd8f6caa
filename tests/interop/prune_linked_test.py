#!/usr/bin/env python3
"""`offloadtool prune` of linked HIP shared libraries and executables, and of
OpenMP offloading executables, built by the real clang 19 driver and linked by
ld.lld 19 and GNU ld: PIE and not, with RELA and RELR (-z pack-relative-relocs)
relocations, plain and --offload-compress bundles.

Each program's host code throws and catches a C++ exception (the unwind tables
move in the file) and registers its fat binaries through a stand-in HIP runtime
that prints, for each bundle it is handed, every entry's ID, size and checksum.
After pruning:
  * the program (or a loader dlopen'ing the library) still runs, catches its
    exception, and registers exactly the entries it did before minus the dropped
    ones, with the same checksums (the kept code objects are byte-identical);
  * every allocated section keeps its address, flags and (.hip_fatbin aside)
    size and contents; the file is smaller by whole pages;
  * readelf, llvm-readelf and eu-elflint report nothing the input did not;
  * `offloadtool list` names only the kept targets.
The OpenMP program holds an x86_64 image (libomptarget's host plugin runs it on
the CPU) and a gfx90a one: dropping gfx90a, it still offloads with
OMP_TARGET_OFFLOAD=MANDATORY and catches its exception; keeping only gfx90a, it
cannot offload (mandatory offloading fails) and runs on the host otherwise.
Refused, with nothing written: a relative relocation or a symbol pointing into
the middle of a bundle, text relocations.
No ROCm is installed: -nogpulib -nogpuinc, as in hip_driver_test.py.
"""
import os
import re
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import CLANG, CLANGXX, LLVM_BIN, OT, check, read, run, write  # noqa: E402

ARCHS = ['--offload-arch=gfx906', '--offload-arch=gfx90a:xnack-', '--offload-arch=gfx1030']
HIP = ['-x', 'hip'] + ARCHS + ['-nogpulib', '-nogpuinc']
KEEP = 'gfx90a'   # keeps gfx90a:xnack-
DROPPED = ('gfx906', 'gfx1030')

PRELUDE = harness.HIP_PRELUDE.decode() + '#include <stdexcept>\n#include <cstdio>\n'
KERNELS = PRELUDE + '''
__device__ int twice(int v) { return 2 * v; }
__global__ void scale(int *x, int n) { if (n > 0) x[0] = twice(x[0]); }
int thrower(int v) { if (v > 1) throw std::runtime_error("boom"); return v; }
extern "C" int host_side(int v) {
  try { return thrower(v); } catch (const std::exception &e) { std::printf("caught %s\\n", e.what()); }
  return v + 1;
}
'''
MORE = PRELUDE + '''
__global__ void other(int *x) { x[0] = 7; }
extern "C" int other_side(int v) { return v * 2; }
'''
MAIN = PRELUDE + '''
extern "C" int host_side(int v);
__global__ void k3(int *x) { x[0] = 3; }
int main() { std::printf("host_side %d\\n", host_side(5)); return 0; }
'''
# The stand-in runtime: prints what registration hands it. A CCOB is printed
# as its magic only (the checks of compressed inputs use offloadtool list).
RUNTIME = r'''#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
struct wrapper { uint32_t magic, version; const char *binary; void *unused; };
void **__hipRegisterFatBinary(const struct wrapper *w) {
  static void *h;
  const char *b = w->binary;
  if (w->magic != 0x48495046) { printf("bad wrapper magic\n"); return &h; }
  if (memcmp(b, "CCOB", 4) == 0) { printf("compressed bundle\n"); return &h; }
  if (memcmp(b, "__CLANG_OFFLOAD_BUNDLE__", 24) != 0) { printf("not a bundle\n"); return &h; }
  uint64_t n; memcpy(&n, b + 24, 8);
  const char *p = b + 32;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t off, size, len; memcpy(&off, p, 8); memcpy(&size, p + 8, 8); memcpy(&len, p + 16, 8);
    uint32_t sum = 0; for (uint64_t k = 0; k < size; ++k) sum = sum * 31 + (unsigned char)b[off + k];
    printf("entry %.*s size %lu sum %08x\n", (int)len, p + 24, (unsigned long)size, sum);
    p += 24 + len;
  }
  return &h;
}
void __hipRegisterFunction(void **m, const void *hf, char *df, const char *dn, unsigned t, void *a, void *b,
                           void *c, void *d, int *e) { printf("function %s\n", dn); }
void __hipUnregisterFatBinary(void **h) {}
struct dim3 { unsigned x, y, z; };
int hipLaunchKernel(const void *f, struct dim3 g, struct dim3 b, void **args, unsigned long shm, void *s) { return 0; }
int __hipPushCallConfiguration(struct dim3 g, struct dim3 b, unsigned long s, void *st) { return 0; }
int __hipPopCallConfiguration(struct dim3 *g, struct dim3 *b, unsigned long *s, void *st) { return 0; }
#ifdef LOADER
int main(int argc, char **argv) {
  void *h = dlopen(argv[1], RTLD_NOW);
  if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
  int (*f)(int) = (int (*)(int))dlsym(h, "host_side");
  int (*g)(int) = (int (*)(int))dlsym(h, "other_side");
  printf("host_side %d other_side %d\n", f(5), g(4));
  return 0;
}
#endif
'''

LINKERS = {'lld': ['-fuse-ld=lld', '--ld-path=' + os.path.join(LLVM_BIN, 'ld.lld')], 'bfd': ['-fuse-ld=bfd']}


def sh(argv, cwd):
    r = run(argv, cwd=cwd, text=True)
    if r.returncode != 0:
        raise RuntimeError('%s failed:\n%s%s' % (' '.join(argv), r.stdout, r.stderr))
    return r.stdout


# --- ELF reading (the facts the checks compare) -----------------------------

def elf(path):
    """(the file's bytes, its sections: harness.elf64_sections with each one's data)."""
    d = read(path)
    sections = harness.elf64_sections(path)
    for x in sections:
        x['data'] = b'' if x['type'] == 8 else d[x['offset']:x['offset'] + x['size']]
    return d, sections


def section(secs, name):
    return next(s for s in secs if s['name'] == name)


def compare_layout(orig, pruned):
    """Problems with `pruned` against `orig`: allocated sections keep address,
    flags, size and bytes (the device code section: address only; relocation,
    symbol, wrapper and image record sections: size only, their values move)."""
    _, a = elf(orig)
    _, b = elf(pruned)
    problems = []
    if [s['name'] for s in a] != [s['name'] for s in b]:
        return ['the sections differ: %s / %s' % ([s['name'] for s in a], [s['name'] for s in b])]
    for x, y in zip(a, b):
        if not x['flags'] & 2:
            continue
        if (x['addr'], x['flags'], x['type']) != (y['addr'], y['flags'], y['type']):
            problems.append('%s moved or changed flags' % x['name'])
        if x['name'] in ('.hip_fatbin', '.llvm.offloading'):
            if not y['size'] < x['size']:
                problems.append('%s did not shrink' % x['name'])
            continue
        if x['size'] != y['size']:
            problems.append('%s changed size' % x['name'])
        elif x['name'] not in ('.rela.dyn', '.dynsym', '.hipFatBinSegment', '.data', '.data.rel.ro') \
                and x['data'] != y['data']:
            problems.append('%s changed bytes' % x['name'])
    return problems


def expected_after(output):
    """The runtime's output with the dropped targets' entries left out."""
    return [l for l in output.splitlines()
            if not (l.startswith('entry ') and any(re.search(r'--%s\b' % t, l) for t in DROPPED))]


def prune_case(root, name, build, runner, compressed=False):
    def fn():
        folder = os.path.join(root, name)
        os.makedirs(folder)
        write(os.path.join(folder, 'rt.c'), RUNTIME.encode())
        target = build(folder)
        before = sh(runner(target), folder)
        pruned = target + '.pruned'
        r = run([OT, 'prune', '--keep', KEEP, target, '-o', pruned], cwd=folder, text=True)
        if r.returncode != 0:
            return 'prune failed: %s' % r.stderr
        if os.stat(os.path.join(folder, pruned)).st_mode & 0o777 != os.stat(os.path.join(folder, target)).st_mode & 0o777:
            return 'the pruned file does not keep the mode bits of the input'
        problems = []
        after = sh(runner(pruned), folder)
        if 'caught boom' not in after:
            problems.append('the pruned program did not catch its exception:\n' + after)
        if compressed:
            if after != before:
                problems.append('the runtime saw other registrations:\n%s\n---\n%s' % (before, after))
        elif expected_after(before) != after.splitlines() or before == after:
            problems.append('registered entries:\n%s\n--- expected\n%s' % (after, '\n'.join(expected_after(before))))
        problems += compare_layout(os.path.join(folder, target), os.path.join(folder, pruned))
        size_a, size_b = os.path.getsize(os.path.join(folder, target)), os.path.getsize(os.path.join(folder, pruned))
        # Compressed code objects are small: their bundles, 4 KiB aligned, may
        # free less than a page, and the file then keeps its size.
        if not ((size_b < size_a or compressed) and size_b <= size_a and (size_a - size_b) % 4096 == 0):
            problems.append('not shrunk by whole pages: %d -> %d' % (size_a, size_b))
        noise_a, noise_b = harness.elf_readers_say(target, folder), harness.elf_readers_say(pruned, folder)
        if noise_a != noise_b:
            problems.append('readers differ:\n%s\n---\n%s' % ('\n'.join(noise_a), '\n'.join(noise_b)))
        listing = run([OT, 'list', '--json', pruned], cwd=folder, text=True).stdout
        ids = re.findall(r'"id": "([^"]+)"', listing)
        if not ids or any(not (i.startswith('host-') or i.endswith('gfx90a:xnack-')) for i in ids):
            problems.append('offloadtool list of the pruned file: %s' % ids)
        return '\n'.join(problems) or None
    return name, fn


def compile_objects(root):
    """The HIP and runtime objects each case links, compiled once per flag set
    (the compiles are most of the suite's time): root/<flags>/{k,m,main,rt}.o."""
    sets = {'pie': ['-fPIE'], 'nopie': ['-fno-pie'], 'pic': ['-fPIC'], 'pic-compress': ['-fPIC', '--offload-compress']}
    for name, flags in sets.items():
        folder = os.path.join(root, 'objects-' + name)
        os.makedirs(folder)
        for f, text in (('k.hip', KERNELS), ('m.hip', MORE), ('main.hip', MAIN), ('rt.c', RUNTIME)):
            write(os.path.join(folder, f), text.encode())
        for src in ('k', 'm', 'main'):
            sh([CLANGXX] + HIP + flags + ['-c', src + '.hip', '-o', src + '.o'], folder)
        sh([CLANG] + flags[:1] + ['-c', 'rt.c', '-o', 'rt.o'], folder)


def cases(root):
    compile_objects(root)

    def objects(flags):
        return [os.path.join(root, 'objects-' + flags, o) for o in ('main.o', 'k.o', 'm.o', 'rt.o')]

    out = []
    for linker, lflags in LINKERS.items():
        for variant, objs, ldflags in (('pie', 'pie', ['-pie']), ('nopie', 'nopie', ['-no-pie']),
                                       ('relr', 'pie', ['-pie', '-Wl,-z,pack-relative-relocs'])):
            def build(folder, objs=objs, ldflags=ldflags, lflags=lflags):
                sh([CLANGXX] + lflags + ldflags + objects(objs) + ['-o', 'prog'], folder)
                return 'prog'
            out.append(prune_case(root, 'executable, %s, %s' % (linker, variant), build, lambda t: ['./' + t]))

        for objs, label, compressed in (('pic', '', False), ('pic-compress', ', --offload-compress', True)):
            def build_lib(folder, objs=objs, lflags=lflags):
                sh([CLANG, '-DLOADER', '-rdynamic', 'rt.c', '-o', 'loader', '-ldl'], folder)
                sh([CLANGXX] + lflags + ['-shared'] + objects(objs)[1:3] + ['-o', 'libk.so'], folder)
                return 'libk.so'
            out.append(prune_case(root, 'shared library, %s%s' % (linker, label), build_lib,
                                  lambda t: ['./loader', './' + t], compressed))
    return out


# --- OpenMP ----------------------------------------------------------------------

# The gfx90a image links without the device runtime (not installed): the two
# entry points its kernel calls are stubbed on the device side.
OMP_PROGRAM = r'''#include <cstdio>
#include <stdexcept>
#pragma omp begin declare target device_type(nohost)
extern "C" int __kmpc_target_init(void *a, void *b) { return -1; }
extern "C" void __kmpc_target_deinit(void) {}
#pragma omp end declare target
static int thrower(int v) { if (v > 1) throw std::runtime_error("boom"); return v; }
int main() {
  try { thrower(5); } catch (const std::exception &e) { std::printf("caught %s\n", e.what()); }
  int x = 0;
#pragma omp target map(tofrom: x)
  x = 42;
  std::printf("x = %d\n", x);
  return 0;
}
'''
OMP = ['-fopenmp', '-fopenmp-targets=x86_64-pc-linux-gnu,amdgcn-amd-amdhsa',
       '-Xopenmp-target=amdgcn-amd-amdhsa', '-march=gfx90a', '-nogpulib']


def omp_run(folder, prog, mandatory):
    env = {'LD_LIBRARY_PATH': os.path.join(os.path.dirname(LLVM_BIN), 'lib'), 'LIBOMPTARGET_INFO': '1'}
    if mandatory:
        env['OMP_TARGET_OFFLOAD'] = 'MANDATORY'
    r = run(['./' + prog], cwd=folder, env=env, text=True)
    return r.returncode, r.stdout + r.stderr


def omp_case(root, name, flags):
    def fn():
        folder = os.path.join(root, name.replace(', ', '-'))
        os.makedirs(folder)
        write(os.path.join(folder, 'omp.cpp'), OMP_PROGRAM.encode())
        sh([CLANGXX] + OMP + flags + ['omp.cpp', '-o', 'prog'], folder)
        problems = []
        rc, out = omp_run(folder, 'prog', True)
        if rc != 0 or 'Entering OpenMP kernel' not in out or 'x = 42' not in out or 'caught boom' not in out:
            return 'the program as linked does not offload: %s' % out
        for args, offloads, kept in ((['--drop', 'gfx90a'], True, 'openmp-x86_64-pc-linux-gnu-'),
                                     (['--keep', 'gfx90a'], False, 'openmp-amdgcn-amd-amdhsa-gfx90a')):
            out_name = 'pruned' + args[1]
            r = run([OT, 'prune'] + args + ['prog', '-o', out_name], cwd=folder, text=True)
            if r.returncode != 0:
                problems.append('prune %s: %s' % (' '.join(args), r.stderr))
                continue
            rc, out = omp_run(folder, out_name, True)
            ran = rc == 0 and 'Entering OpenMP kernel' in out and 'x = 42' in out and 'caught boom' in out
            if ran != offloads:
                problems.append('%s: offloading with OMP_TARGET_OFFLOAD=MANDATORY %s:\n%s'
                                % (' '.join(args), 'failed' if offloads else 'still worked', out))
            rc, out = omp_run(folder, out_name, False)
            if rc != 0 or 'x = 42' not in out or 'caught boom' not in out:
                problems.append('%s: the program does not run: %s' % (' '.join(args), out))
            problems += ['%s: %s' % (' '.join(args), p) for p in compare_layout(os.path.join(folder, 'prog'),
                                                                                 os.path.join(folder, out_name))]
            if harness.elf_readers_say('prog', folder) != harness.elf_readers_say(out_name, folder):
                problems.append('%s: readers differ: %s' % (' '.join(args), harness.elf_readers_say(out_name, folder)))
            listing = run([OT, 'list', '--json', out_name], cwd=folder, text=True).stdout
            if re.findall(r'"id": "([^"]+)"', listing) != [kept]:
                problems.append('%s: offloadtool list: %s' % (' '.join(args), listing))
        return '\n'.join(problems) or None
    return name, fn


def omp_cases(root):
    return [omp_case(root, 'openmp, %s, %s' % (linker, variant), LINKERS[linker] + flags)
            for linker, variant, flags in (('lld', 'pie', ['-fPIE', '-pie']), ('bfd', 'pie', ['-fPIE', '-pie']),
                                           ('bfd', 'nopie', ['-fno-pie', '-no-pie']),
                                           ('lld', 'relr', ['-fPIE', '-pie', '-Wl,-z,pack-relative-relocs']))]


# --- refused inputs -----------------------------------------------------------

def refused(root):
    folder = os.path.join(root, 'refused')
    os.makedirs(folder)
    write(os.path.join(folder, 'k.hip'), KERNELS.encode())
    write(os.path.join(folder, 'm.hip'), MORE.encode())
    for src in ('k', 'm'):
        sh([CLANGXX] + HIP + ['-fPIC', '-c', src + '.hip', '-o', src + '.o'], folder)
    sh([CLANGXX] + LINKERS['bfd'] + ['-shared', 'k.o', 'm.o', '-o', 'libk.so'], folder)
    data, secs = elf(os.path.join(folder, 'libk.so'))
    fb, seg, rela = section(secs, '.hip_fatbin'), section(secs, '.hipFatBinSegment'), section(secs, '.rela.dyn')
    relocs = [(rela['offset'] + i * 24,) + struct.unpack_from('<QQq', data, rela['offset'] + i * 24)
              for i in range(rela['size'] // 24)]
    slot = next(r for r in relocs if r[1] == seg['addr'] + 8)
    other = next(r for r in relocs if r[2] == 8 and not seg['addr'] <= r[1] < seg['addr'] + seg['size'])

    def variant(name, at, value, expect):
        bad = bytearray(data)
        struct.pack_into('<q', bad, at, value)
        path = os.path.join(folder, name + '.so')
        write(path, bytes(bad))
        out = os.path.join(folder, name + '.out')
        r = run([OT, 'prune', '--keep', KEEP, path, '-o', out], cwd=folder, text=True)
        check('refused: %s' % name, r.returncode == 1 and re.search(expect, r.stderr) and r.stderr.count('\n') == 1
              and not os.path.exists(out) and not [f for f in os.listdir(folder) if f.startswith(name + '.out')],
              'exit %d, stderr %r' % (r.returncode, r.stderr))

    variant('wrapper pointer into a bundle', slot[0] + 16, fb['addr'] + 8, r'points into the middle of a bundle')
    variant('unknown relative relocation into .hip_fatbin', other[0] + 16, fb['addr'] + 16,
            r'unknown reference, not pruned')
    # DT_TEXTREL: an entry of .dynamic turned into one.
    dyn = section(secs, '.dynamic')
    tags = [struct.unpack_from('<q', data, dyn['offset'] + i * 16)[0] for i in range(dyn['size'] // 16)]
    variant('text relocations', dyn['offset'] + tags.index(0) * 16, 22, r'text relocations')


def unchanged(root):
    """Bundles that lose nothing stay as they were: a CCOB made at level 19 is
    not compressed again at the default level (which would make it larger:
    more bytes than the section holds)."""
    folder = os.path.join(root, 'unchanged')
    os.makedirs(folder)
    write(os.path.join(folder, 'k.hip'), KERNELS.encode())
    sh([CLANGXX] + HIP + ['-fPIC', '--offload-compress', '--offload-compression-level=19', '-c', 'k.hip', '-o', 'k.o'],
       folder)
    sh([CLANGXX] + LINKERS['lld'] + ['-shared', 'k.o', '-o', 'libk.so'], folder)
    r = run([OT, 'prune', '--drop', 'gfx1100', 'libk.so', '-o', 'out.so'], cwd=folder, text=True, timeout=60)
    check('nothing dropped from level-19 compressed bundles: the same bytes',
          r.returncode == 0 and read(os.path.join(folder, 'out.so')) == read(os.path.join(folder, 'libk.so')),
          r.stderr)


def main():
    def body(root):
        harness.run_cases(cases(root) + omp_cases(root), jobs=2)
        refused(root)
        unchanged(root)
    return harness.run_suite('prune-linked', body, needs=[CLANG, CLANGXX, 'readelf', 'eu-elflint', 'ld.bfd',
                                                          os.path.join(LLVM_BIN, 'ld.lld')])


if __name__ == '__main__':
    sys.exit(main())
