#!/usr/bin/env python3
"""`offloadtool prune`: one case per behaviour, the pruned bytes compared with
what LLVM 19 writes for the kept entries alone: clang-offload-bundler for
binary and text bundles (and its -compress for CCOBs, which `offloadtool
compress` also writes), clang-offload-packager for offload binaries. LLVM 19
unbundles the pruned CCOBs; `offloadtool list` reads the pruned binaries. Bad
inputs: one-line errors, exit 1, no file written.

COFF objects: clang 19 assembles one whose .hip_fatbin holds two bundles and
LLVM 19's bundler writes one with __CLANG_OFFLOAD_BUNDLE__ sections; after
pruning, lld-link links them and each pointer of the image lands on its bundle;
an llvm-lib archive of them, pruned, is what llvm-lib writes for the pruned
members.

Objects and archives: clang 19 compiles HIP (with and without -fgpu-rdc and
--offload-compress) and OpenMP; `ld -r` joins two HIP objects into one whose
.hip_fatbin holds two bundles. After pruning, LLVM 19's bundler and packager
list and extract the kept entries (the same bytes as from the input), readelf
and llvm-readelf read the object without a warning, GNU ld and lld link it and
the program runs, registering exactly the kept targets. Archives: ar and
llvm-ar list the same members, nm's and llvm-nm's symbol maps are the input's,
the archive is byte for byte what `llvm-ar rcs` (also with /SYM64/ and in BSD
format) or GNU `ar rcs` writes for the members pruned one by one, and
`-L. -lkp` links.

Environment: OFFLOADTOOL = the offloadtool binary.
Needs LLVM 19's clang, clang-offload-bundler, clang-offload-packager, llvm-ar,
llvm-nm, llvm-readelf, llvm-objcopy and ld.lld, GNU binutils and gcc (fails without them).
Prints "N passed, M failed"; exits 1 on failure.
"""

import json
import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import CLANG, CLANGXX, LLVM_BUNDLER, LLVM_PACKAGER, OT, check, expect, llvm, read, run  # noqa: E402

E = 'offloadtool prune: error: '
HOST = 'host-x86_64-unknown-linux-gnu'
HIP = 'hipv4-amdgcn-amd-amdhsa--'
SYSFS = os.path.join(harness.SOURCE_ROOT, 'tests', 'data', 'sysfs')
GPUS = ['gfx906', 'gfx90a:xnack+', 'gfx90a:xnack-', 'gfx1030']


def payload(seed, n=3000):
    return random.Random(seed).randbytes(n)


IMAGES = {g: payload(i) for i, g in enumerate(GPUS)}


def llvm_bundle(d, name, gpus, type_='o', extra=(), host=b'', images=IMAGES):
    """LLVM 19 bundles the host file and the images of `gpus`, in that order, into `name`; its bytes."""
    inputs = [d.put(name + '.host', host)]
    for i, g in enumerate(gpus):
        inputs.append(d.put('%s.in%d' % (name, i), images[g]))
    run([LLVM_BUNDLER, '-type=' + type_, '-targets=' + ','.join([HOST] + [HIP + g for g in gpus])] +
        ['-input=' + p for p in inputs] + ['-output=' + d.path(name)] + list(extra), cwd=d.dir, check=True)
    for p in inputs:
        os.unlink(p)
    return d.read(name)


def llvm_unbundles(d, name, gpus):
    """LLVM 19 unbundles the entries of `gpus` from `name` and gets their images."""
    outs = [d.path('%s.out%d' % (name, i)) for i in range(len(gpus))]
    r = run([LLVM_BUNDLER, '-type=o', '-unbundle', '-targets=' + ','.join(HIP + g for g in gpus),
             '-input=' + d.path(name)] + ['-output=' + o for o in outs], cwd=d.dir)
    ok = r.returncode == 0 and all(read(o) == IMAGES[g] for o, g in zip(outs, gpus))
    for o in outs:
        if os.path.exists(o):
            os.unlink(o)
    return ok, r.stderr.decode()


def pruned(d, name, args):
    """`offloadtool prune args name -o name.pruned`: its bytes, None when it fails."""
    r = run([OT, 'prune'] + list(args) + [name, '-o', name + '.pruned'], cwd=d.dir)
    check('%s %s: runs' % (name, ' '.join(args)), r.returncode == 0 and r.stdout == b'' and r.stderr == b'', r.stderr)
    return d.read(name + '.pruned') if r.returncode == 0 else None


# (arguments, the GPUs that stay)
SELECTIONS = [
    (['--keep', 'gfx90a'], ['gfx90a:xnack+', 'gfx90a:xnack-']),
    (['--keep', 'gfx90a:sramecc+:xnack-'], ['gfx90a:xnack-']),
    (['--keep', 'gfx1030,gfx906'], ['gfx906', 'gfx1030']),
    (['--keep', HIP + 'gfx906'], ['gfx906']),
    (['--drop', 'gfx90a:xnack+', '--drop', 'gfx1030'], ['gfx906', 'gfx90a:xnack-']),
    (['--keep', 'gfx906', '--keep', 'gfx90a:xnack+'], ['gfx906', 'gfx90a:xnack+']),
]


def test_binary(root):
    d = harness.Case(root, 'prune', {})
    for align in (4096, 1):
        extra = ['-bundle-align=%d' % align]
        name = 'a%d.hipfb' % align
        llvm_bundle(d, name, GPUS, extra=extra)
        for i, (args, kept) in enumerate(SELECTIONS):
            got = pruned(d, name, args)
            want = llvm_bundle(d, 'want%d-%d' % (align, i), kept, extra=extra)
            check('binary align %d %s: LLVM 19 bytes for %s' % (align, ' '.join(args), kept), got == want)
    # payloads of MiBs (copied by the kernel rather than through memory)
    big = {g: payload(10 + i, (3 << 20) + i) for i, g in enumerate(GPUS)}
    llvm_bundle(d, 'big.hipfb', GPUS, extra=['-bundle-align=4096'], images=big)
    got = pruned(d, 'big.hipfb', ['--drop', 'gfx90a'])
    check('binary, large payloads: LLVM 19 bytes',
          got == llvm_bundle(d, 'bigwant.hipfb', ['gfx906', 'gfx1030'], extra=['-bundle-align=4096'], images=big))
    # a host entry with bytes (-type=bc: the host is a file like the others)
    llvm_bundle(d, 'h.bc', GPUS, type_='bc', host=b'BC\xc0\xdehost')
    got = pruned(d, 'h.bc', ['--keep', 'gfx906'])
    check('binary host entry: stays, LLVM 19 bytes',
          got == llvm_bundle(d, 'hwant.bc', ['gfx906'], type_='bc', host=b'BC\xc0\xdehost'))


def test_text(root):
    d = harness.Case(root, 'prune', {})
    for type_ in ('ll', 's', 'i'):
        name = 't.' + type_
        llvm_bundle(d, name, GPUS, type_=type_, host=b'host text\n')
        for i, (args, kept) in enumerate(SELECTIONS[:3]):
            got = pruned(d, name, args)
            want = llvm_bundle(d, 'twant%d.%s' % (i, type_), kept, type_=type_, host=b'host text\n')
            check('text -type=%s %s: LLVM 19 bytes' % (type_, ' '.join(args)), got == want)


def test_ccob(root):
    d = harness.Case(root, 'prune', {})
    llvm_bundle(d, 'c.hipfb', GPUS, extra=['-bundle-align=4096', '-compress'])
    got = pruned(d, 'c.hipfb', ['--keep', 'gfx90a'])
    kept = ['gfx90a:xnack+', 'gfx90a:xnack-']
    check('ccob zstd: LLVM 19 -compress bytes of the kept entries',
          got == llvm_bundle(d, 'cwant.hipfb', kept, extra=['-bundle-align=4096', '-compress']))
    llvm_bundle(d, 'plain.hipfb', kept, extra=['-bundle-align=4096'])
    for method, version in (('zstd', '2'), ('zlib', '2'), ('zstd', '3'), ('zlib', '3')):
        tag = '%s-v%s' % (method, version)
        settings = ['--method', method, '--ccob-version', version]
        llvm_bundle(d, 'whole.hipfb', GPUS, extra=['-bundle-align=4096'])
        r = run([OT, 'compress'] + settings + ['whole.hipfb', '-o', tag + '.in'], cwd=d.dir)
        check('ccob %s: input made' % tag, r.returncode == 0, r.stderr)
        r = run([OT, 'compress'] + settings + ['plain.hipfb', '-o', tag + '.want'], cwd=d.dir)
        got = pruned(d, tag + '.in', ['--keep', 'gfx90a'])
        check('ccob %s: what compress writes for the pruned bundle' % tag, got == d.read(tag + '.want'))
        if version == '2':
            ok, err = llvm_unbundles(d, tag + '.in.pruned', kept)
            check('ccob %s: LLVM 19 unbundles the result' % tag, ok, err)
    llvm_bundle(d, 'ct.ll', GPUS, type_='ll', host=b'host text\n', extra=['-compress'])
    got = pruned(d, 'ct.ll', ['--drop', 'gfx906'])
    check('ccob text bundle: LLVM 19 -compress bytes of the kept entries',
          got == llvm_bundle(d, 'ctwant.ll', GPUS[1:], type_='ll', host=b'host text\n', extra=['-compress']))


def packager(d, name, images):
    args = ['--image=file=%s,triple=amdgcn-amd-amdhsa,arch=%s,kind=openmp' % (d.put('%s.%d' % (name, i), IMAGES[g]), g)
            for i, g in enumerate(images)]
    run([LLVM_PACKAGER, '-o', d.path(name)] + args, cwd=d.dir, check=True)
    return d.read(name)


def test_offload_binary(root):
    d = harness.Case(root, 'prune', {})
    packager(d, 'p.bin', GPUS)
    for i, (args, kept) in enumerate(SELECTIONS[:3] + SELECTIONS[4:]):
        got = pruned(d, 'p.bin', args)
        check('offload binary %s: clang-offload-packager 19 bytes' % ' '.join(args),
              got == packager(d, 'pwant%d.bin' % i, kept))
    r = run([OT, 'list', 'p.bin.pruned'], cwd=d.dir)
    lines = r.stdout.decode().splitlines()
    check('offload binary: offloadtool list reads the result', r.returncode == 0 and len(lines) >= 2, r.stderr)


def test_report(root):
    d = harness.Case(root, 'prune', {})
    b = llvm_bundle(d, 'a.hipfb', GPUS, extra=['-bundle-align=4096'])
    after = len(llvm_bundle(d, 'k.hipfb', ['gfx906'], extra=['-bundle-align=4096']))
    # Sizes as people read them (numfmt's figures), exact with --bytes.
    for flags, size in (([], harness.human_size), (['--bytes'], lambda n: '%d bytes' % n)):
        out = ''.join('%s %s (%s)\n' % ('keep' if g in (None, 'gfx906') else 'drop', HOST + '-' if g is None else HIP + g,
                                        size(0 if g is None else len(IMAGES[g]))) for g in [None] + GPUS)
        out += 'binary bundle: 3 of 5 entries dropped, %s -> %s (%s saved)\n' % (size(len(b)), size(after),
                                                                               size(len(b) - after))
        expect('dry run %s: the report, nothing written' % ' '.join(flags), d,
               ['--keep', 'gfx906', 'a.hipfb', '--dry-run'] + flags, 0, out, '', files=['a.hipfb', 'k.hipfb'])
    rc, got, err = d.run('--keep', 'gfx906', 'a.hipfb', '--dry-run', '--json')
    j = json.loads(got) if rc == 0 else {}
    check('json: the report', rc == 0 and j.get('schema') == 'offloadtool-prune/2' and 'version' not in j and
          j['size_before'] == len(b) and
          j['size_after'] == after and j['written'] is False and
          [(e['id'], e['kept']) for e in j['entries']] ==
          [(HOST + '-', True)] + [(HIP + g, g == 'gfx906') for g in GPUS], got + err)
    d.put('ip.hipfb', b)
    os.chmod(d.path('ip.hipfb'), 0o750)
    expect('in place: runs', d, ['--keep', 'gfx906', 'ip.hipfb', '--in-place'], 0, '', '',
           files=['a.hipfb', 'ip.hipfb', 'k.hipfb'])
    check('in place: replaced by LLVM 19 bytes', d.read('ip.hipfb') == d.read('k.hipfb'))
    mode = os.stat(d.path('ip.hipfb')).st_mode & 0o7777
    check('in place: the mode kept', mode == 0o750, oct(mode))
    host_only = llvm_bundle(d, 'host.hipfb', [], extra=['-bundle-align=4096'])
    expect('allow-empty: only the host stays', d, ['--keep', 'gfx1100', '--allow-empty', 'a.hipfb', '-o', 'e'], 0, '', '')
    check('allow-empty: LLVM 19 bytes of the host alone', d.read('e') == host_only)


def test_bad_input(root):
    d = harness.Case(root, 'prune', {})
    b = llvm_bundle(d, 'a.hipfb', GPUS)
    d.put('notabundle', b'hello\n')
    d.put('short.hipfb', b[:100])
    before = d.names()

    def bad(name, args, err):
        if err is None:  # a message of compat's: one line of ours
            rc, out, got = d.run(*args)
            check('bad: ' + name, rc == 1 and out == '' and got.startswith(E) and got.count('\n') == 1, got)
        else:
            expect('bad: ' + name, d, args, 1, '', E + err)
        check('bad: %s: nothing written' % name, d.names() == before, d.names())

    bad('not a container', ['--keep', 'gfx906', 'notabundle', '-o', 'x'],
        'notabundle: not an offload bundle, compressed offload bundle or offload binary, at offset 0x0\n')
    r = run([OT, 'list', 'short.hipfb'], cwd=d.dir)
    want = r.stderr.decode().replace('offloadtool list: error: ', E)
    bad('truncated bundle', ['--keep', 'gfx906', 'short.hipfb', '-o', 'x'], want[len(E):])
    bad('nothing kept', ['--keep', 'gfx1100', 'a.hipfb', '-o', 'x'],
        'a.hipfb: no device entry of the binary bundle would stay (--allow-empty writes it without any)\n')
    bad('unknown target', ['--keep', 'gfx9000', 'a.hipfb', '-o', 'x'], None)
    bad('no selection', ['a.hipfb', '-o', 'x'], 'give the targets to --keep or to --drop\n')
    bad('no output', ['--keep', 'gfx906', 'a.hipfb'], 'no output: give -o FILE, --in-place or --dry-run\n')
    bad('in place, nothing kept', ['--keep', 'gfx1100', 'a.hipfb', '--in-place'],
        'a.hipfb: no device entry of the binary bundle would stay (--allow-empty writes it without any)\n')
    check('bad: the input is untouched', d.read('a.hipfb') == b)


def test_detected(root):
    """--keep-detected keeps what compat detect finds in a sysfs tree (tests/data/sysfs)."""
    d = harness.Case(root, 'prune', {})
    bundle = llvm_bundle(d, 'a.hipfb', GPUS)
    mi210 = os.path.join(SYSFS, 'gfx90a-mi210')  # gfx90a:sramecc+, xnack per process
    for extra, env, kept in ((['--sysfs', mi210], {}, ['gfx90a:xnack+', 'gfx90a:xnack-']),
                             (['--sysfs', mi210, '--xnack', 'off'], {}, ['gfx90a:xnack-']),
                             (['--sysfs', mi210], {'HSA_XNACK': '1'}, ['gfx90a:xnack+']),
                             (['--sysfs', mi210, '--keep', 'gfx1030'], {}, ['gfx90a:xnack+', 'gfx90a:xnack-', 'gfx1030'])):
        r = run([OT, 'prune', '--keep-detected'] + extra + ['a.hipfb', '-o', 'out'], cwd=d.dir, env=env)
        want = llvm_bundle(d, 'want', [g for g in GPUS if g in kept])
        check('--keep-detected %s %s: LLVM 19 bytes for %s' % (' '.join(extra), env, kept),
              r.returncode == 0 and d.read('out') == want, r.stderr)
    d = harness.Case(root, 'prune', {'a.hipfb': bundle})
    expect('--keep-detected: no GPU', d, ['--keep-detected', '--sysfs', os.path.join(SYSFS, 'cpu-only'), 'a.hipfb',
                                          '-o', 'x'], 1, '',
           E + '--keep-detected: no GPU found: no AMD GPU in %s; no NVIDIA driver (%s: No such file or directory)\n' % (os.path.join(SYSFS, 'cpu-only', 'class', 'kfd', 'kfd', 'topology', 'nodes'),
                                             NO_LIBCUDA))


# ---------------------------------------------------------------------------
# Relocatable objects and archives, built by clang 19

PRELUDE = harness.HIP_PRELUDE
KERNEL_K = PRELUDE + b"""
__device__ int twice(int v) { return 2 * v; }
__global__ void scale(int *x, int n) {
  int i = __builtin_amdgcn_workitem_id_x();
  if (i < n) x[i] = twice(x[i]);
}
int host_side(int v) { return v + 1; }
"""
KERNEL_B = PRELUDE + b"""
__device__ int thrice(int v) { return 3 * v; }
__global__ void add(int *x, int n) { x[0] += thrice(n); }
int other_side(int v) { return v + 2; }
"""
MAIN = b"int host_side(int); int main() { return host_side(1) == 2 ? 0 : 3; }\n"
# The HIP runtime entry points, for linking without ROCm. Registering a fat
# binary prints the entry IDs of the bundle it points at (or "ccob").
STUBS = b"""#include <stdint.h>
#include <stdio.h>
#include <string.h>
struct dim3 { unsigned x, y, z; };
struct wrapper { int magic, version; const char *binary; void *unused; };
void **__hipRegisterFatBinary(const void *data) {
  static void *h;
  const char *b = ((const struct wrapper *)data)->binary;
  if (memcmp(b, "CCOB", 4) == 0) { printf("ccob\\n"); return &h; }
  if (memcmp(b, "__CLANG_OFFLOAD_BUNDLE__", 24) != 0) { printf("not a bundle\\n"); return &h; }
  uint64_t n;
  memcpy(&n, b + 24, 8);
  const char *p = b + 32;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t len;
    memcpy(&len, p + 16, 8);
    printf("%.*s%s", (int)len, p + 24, i + 1 < n ? " " : "\\n");
    p += 24 + len;
  }
  return &h;
}
void __hipRegisterFunction(void **m, const void *hf, char *df, const char *dn, unsigned t, void *a, void *b,
                           void *c, void *d, int *e) {}
void __hipRegisterVar(void **m, void *v, char *hv, const char *dv, int ext, unsigned long size, int c, int g) {}
void __hipUnregisterFatBinary(void **m) {}
int hipLaunchKernel(const void *f, struct dim3 g, struct dim3 b, void **args, unsigned long shm, void *s) { return 0; }
int __hipPopCallConfiguration(struct dim3 *g, struct dim3 *b, unsigned long *shm, void **s) { return 0; }
int __hipPushCallConfiguration(struct dim3 g, struct dim3 b, unsigned long shm, void *s) { return 0; }
"""
OPENMP = b"""int run(int *x, int n) {
#pragma omp target teams distribute parallel for map(tofrom: x[0:n])
  for (int i = 0; i < n; ++i) x[i] *= 2;
  return x[0];
}
"""
OBJ_HIP = ['-x', 'hip', '--offload-arch=gfx906', '--offload-arch=gfx90a', '-nogpulib', '-nogpuinc']
LINKERS = [('lld', ['-fuse-ld=lld']), ('ld', ['-fuse-ld=bfd'])]
OBJCOPY, READELF = llvm('llvm-objcopy'), llvm('llvm-readelf')


def objects_case(root):
    """A folder with the sources and the objects clang 19 makes of them."""
    d = harness.Case(root, 'prune', {'k.hip': KERNEL_K, 'b.hip': KERNEL_B, 'main.cpp': MAIN, 'stubs.c': STUBS,
                                     'om.c': OPENMP})
    for argv in ([CLANGXX] + OBJ_HIP + ['-c', 'k.hip', '-o', 'k.o'],
                 [CLANGXX] + OBJ_HIP + ['-c', 'b.hip', '-o', 'b.o'],
                 [CLANGXX] + OBJ_HIP + ['--offload-compress', '-c', 'k.hip', '-o', 'kc.o'],
                 [CLANGXX] + OBJ_HIP + ['-fgpu-rdc', '-c', 'k.hip', '-o', 'krdc.o'],
                 [CLANG, '-fopenmp', '--offload-arch=gfx906', '--offload-arch=gfx90a', '-nogpulib', '-c', 'om.c',
                  '-o', 'om.o'],
                 [CLANGXX, '-c', 'main.cpp', '-o', 'main.o'],
                 [CLANG, '-c', 'stubs.c', '-o', 'stubs.o'],
                 ['ld', '-r', 'k.o', 'b.o', '-o', 'kk.o']):
        run(argv, cwd=d.dir, check=True)
    d.before = set(d.files())
    return d


def dump_section(d, obj, section):
    """The bytes of `section` of `obj`, as llvm-objcopy 19 dumps them."""
    out = d.path(obj + '.' + section.strip('.') + '.dump')
    run([OBJCOPY, '--dump-section=%s=%s' % (section, out), d.path(obj), d.path(obj + '.scratch')], check=True)
    os.unlink(d.path(obj + '.scratch'))
    data = read(out)
    os.unlink(out)
    return data


def llvm_list(d, name, type_='o'):
    r = run([LLVM_BUNDLER, '-list', '-type=' + type_, '-input=' + d.path(name)], cwd=d.dir)
    return r.stdout.decode().split() if r.returncode == 0 else ['(failed: %s)' % r.stderr.decode().strip()]


def llvm_unbundle(d, name, ids, type_='o'):
    """LLVM 19 unbundles `ids` from `name`: {id: bytes}."""
    outs = [d.path('%s.u%d' % (name, i)) for i in range(len(ids))]
    run([LLVM_BUNDLER, '-unbundle', '-type=' + type_, '-targets=' + ','.join(ids), '-input=' + d.path(name)] +
        ['-output=' + o for o in outs], cwd=d.dir, check=True)
    got = {i: read(o) for i, o in zip(ids, outs)}
    for o in outs:
        os.unlink(o)
    return got


def readers_accept(what, d, name):
    harness.check_reader_clean(what, [READELF, '-a', '-W', d.path(name)])
    r = run(['readelf', '-a', '-W', d.path(name)], text=True)
    check('%s: readelf without warnings' % what, r.returncode == 0 and not r.stderr.strip(), r.stderr[-2000:])


def links_and_runs(what, d, objects, want, extra=(), linkers=LINKERS):
    """Each linker links `objects` with main.o and stubs.o; the program registers the bundles `want` (lines)."""
    for linker, flags in linkers:
        exe = d.path('prog-' + linker)
        r = run([CLANGXX] + flags + list(extra) + ['main.o'] + list(objects) + ['stubs.o', '-o', exe], cwd=d.dir)
        check('%s: %s links it' % (what, linker), r.returncode == 0, r.stderr)
        if r.returncode != 0:
            continue
        r = run([exe], text=True)
        check('%s: the %s-linked program runs and registers the kept entries' % (what, linker),
              r.returncode == 0 and sorted(r.stdout.splitlines()) == sorted(want), r.stdout + r.stderr)
        os.unlink(exe)


def kept_ids(ids, gpus):
    """The IDs of `ids` that stay with `gpus` kept, in clang's bundle order: the host, then by --offload-arch."""
    order = ['host', 'gfx906', 'gfx90a']
    gpu = lambda i: 'host' if i.startswith('host-') else i.rsplit('-', 1)[1]
    return sorted((i for i in ids if gpu(i) == 'host' or gpu(i) in gpus), key=lambda i: order.index(gpu(i)))


def test_object_fatbin(root):
    d = objects_case(root)
    fatbin = dump_section(d, 'k.o', '.hip_fatbin')
    d.put('k.fatbin', fatbin)
    ids = llvm_list(d, 'k.fatbin')
    images = llvm_unbundle(d, 'k.fatbin', [i for i in ids if not i.startswith('host-')])
    for args, gpus in ((['--keep', 'gfx90a'], ['gfx90a']), (['--drop', 'gfx90a'], ['gfx906'])):
        tag = 'object .hip_fatbin %s' % ' '.join(args)
        if pruned(d, 'k.o', args) is None:
            continue
        got = dump_section(d, 'k.o.pruned', '.hip_fatbin')
        keep = kept_ids(ids, gpus)
        # as the driver bundles them: host "host-x86_64-unknown-linux" from /dev/null (LLVM 19 writes its ID
        # as "host-x86_64-unknown-linux--")
        want = harness.llvm_bundle(['-type=o', '-bundle-align=4096', '-targets=host-x86_64-unknown-linux,' + keep[1],
                                    '-input=/dev/null', '-input=i1'], {'i1': images[keep[1]]}, d.dir)
        check('%s: the section holds LLVM 19 bytes for the kept entries' % tag, got == want)
        readers_accept(tag, d, 'k.o.pruned')
        links_and_runs(tag, d, ['k.o.pruned'], [' '.join(keep)])
        d.put('ip.o', d.read('k.o'))
        r = run([OT, 'prune'] + args + ['ip.o', '--in-place'], cwd=d.dir)
        check('%s: --in-place gives the same object' % tag,
              r.returncode == 0 and d.read('ip.o') == d.read('k.o.pruned'), r.stderr)
        os.unlink(d.path('ip.o'))
    # compressed: LLVM 19 unbundles the kept entry from the pruned section, the same bytes
    if pruned(d, 'kc.o', ['--keep', 'gfx906']) is not None:
        d.put('kc.fatbin', dump_section(d, 'kc.o', '.hip_fatbin'))
        d.put('kcp.fatbin', dump_section(d, 'kc.o.pruned', '.hip_fatbin'))
        keep = kept_ids(llvm_list(d, 'kc.fatbin'), ['gfx906'])
        check('object ccob: LLVM 19 lists the kept entries', sorted(llvm_list(d, 'kcp.fatbin')) == sorted(keep))
        check('object ccob: the kept entries as LLVM 19 unbundles them from the input',
              llvm_unbundle(d, 'kcp.fatbin', keep[1:]) == llvm_unbundle(d, 'kc.fatbin', keep[1:]))
        readers_accept('object ccob', d, 'kc.o.pruned')
        links_and_runs('object ccob', d, ['kc.o.pruned'], ['ccob'])


def test_object_two_bundles(root):
    d = objects_case(root)
    ids = {}
    for o in ('k.o', 'b.o'):
        d.put(o + '.fatbin', dump_section(d, o, '.hip_fatbin'))
        ids[o] = llvm_list(d, o + '.fatbin')
    if pruned(d, 'kk.o', ['--keep', 'gfx906']) is None:
        return
    readers_accept('ld -r object, two bundles', d, 'kk.o.pruned')
    # each registration (a RELA addend into the section) still finds its own bundle, pruned
    links_and_runs('ld -r object, two bundles', d, ['kk.o.pruned'],
                   [' '.join(kept_ids(ids[o], ['gfx906'])) for o in ('k.o', 'b.o')])
    rc, out, err = d.run('--keep', 'gfx906', 'kk.o', '--dry-run', '--json')
    wheres = [e.get('where') for e in json.loads(out)['entries']] if rc == 0 else []
    second = (len(d.read('k.o.fatbin')) + 4095) // 4096 * 4096  # where ld -r put the second bundle
    check('ld -r object: the entries say which bundle holds them',
          wheres == ['section .hip_fatbin, bundle 1 at 0x0'] * 3 +
          ['section .hip_fatbin, bundle 2 at 0x%x' % second] * 3,
          out + err)


def test_object_rdc(root):
    d = objects_case(root)
    if pruned(d, 'krdc.o', ['--keep', 'gfx90a']) is None:
        return
    ids = llvm_list(d, 'krdc.o')
    keep = kept_ids(ids, ['gfx90a'])
    check('-fgpu-rdc object: LLVM 19 lists the kept entries', sorted(llvm_list(d, 'krdc.o.pruned')) == sorted(keep),
          llvm_list(d, 'krdc.o.pruned'))
    check('-fgpu-rdc object: the kept entries as LLVM 19 unbundles them from the input',
          llvm_unbundle(d, 'krdc.o.pruned', keep[1:]) == llvm_unbundle(d, 'krdc.o', keep[1:]))
    readers_accept('-fgpu-rdc object', d, 'krdc.o.pruned')
    r = run([READELF, '-S', '-W', d.path('krdc.o.pruned')], text=True)
    check('-fgpu-rdc object: the dropped section is gone', 'gfx906' not in r.stdout and 'gfx90a' in r.stdout, r.stdout)
    # the clang driver links it (LLVM's bundler unbundles it, lld links the device code)
    r = run([CLANGXX, '-fgpu-rdc', '--hip-link', '--offload-arch=gfx90a', '-no-hip-rt', '-fuse-ld=lld',
             'krdc.o.pruned', 'main.o', 'stubs.o', '-o', 'rdcprog'], cwd=d.dir)
    check('-fgpu-rdc object: clang -fgpu-rdc --hip-link links it', r.returncode == 0, r.stderr)
    if r.returncode == 0:
        r = run([d.path('rdcprog')], text=True)
        check('-fgpu-rdc object: the program runs', r.returncode == 0 and 'gfx90a' in r.stdout, r.stdout + r.stderr)


def test_object_openmp(root):
    d = objects_case(root)
    if pruned(d, 'om.o', ['--keep', 'gfx90a']) is None:
        return

    def extract(name, arch):
        out = d.path('%s.%s.img' % (name, arch))
        r = run([LLVM_PACKAGER, d.path(name), '--image=file=%s,arch=%s' % (out, arch)], cwd=d.dir)
        data = read(out) if r.returncode == 0 and os.path.exists(out) else None
        if os.path.exists(out):
            os.unlink(out)
        return data

    kept = extract('om.o.pruned', 'gfx90a')
    check('openmp object: clang-offload-packager 19 extracts the kept image, the same bytes',
          kept is not None and kept == extract('om.o', 'gfx90a'))
    check('openmp object: and not the dropped one', extract('om.o.pruned', 'gfx906') in (None, b''))
    readers_accept('openmp object', d, 'om.o.pruned')


def archive_index(tool, path):
    r = run([tool, '--print-armap', path], text=True)
    return r.returncode, r.stdout.split('\n\n')[0], r.stderr


def test_archive(root):
    d = objects_case(root)
    run([CLANG, '-c', '-x', 'c', '-', '-o', 'host_only_with_a_long_name.o'], cwd=d.dir, check=True,
        stdin=b'int plain_host(int v) { return v; }\n')
    d.put('notes.txt', b'not an object\n')
    d.put('k.fatbin', dump_section(d, 'k.o', '.hip_fatbin'))
    ids = llvm_list(d, 'k.fatbin')
    members = ['k.o', 'host_only_with_a_long_name.o', 'notes.txt', 'b.o']
    # (the archiver and its options, whether it writes the 64-bit symbol table)
    for archiver, sym64 in (([llvm('llvm-ar')], False), ([llvm('llvm-ar')], True), (['ar'], False),
                            ([llvm('llvm-ar'), '--format=bsd'], False)):
        env = dict(os.environ, SYM64_THRESHOLD='0') if sym64 else None
        tag = '%s archive%s' % (' '.join([os.path.basename(archiver[0])] + archiver[1:]), ' /SYM64/' if sym64 else '')
        for n in ('libk.a', 'libk.a.pruned', 'ref/libk.a'):
            if os.path.exists(d.path(n)):
                os.unlink(d.path(n))
        run(archiver + ['rcs', 'libk.a'] + members, cwd=d.dir, env=env, check=True)
        check('%s: the input has the table' % tag, (b'/SYM64/' in d.read('libk.a')) == sym64)
        if pruned(d, 'libk.a', ['--keep', 'gfx906']) is None:
            continue
        for tool in ('ar', llvm('llvm-ar')):
            a = run([tool, 't', 'libk.a'], cwd=d.dir, text=True)
            b = run([tool, 't', 'libk.a.pruned'], cwd=d.dir, text=True)
            check('%s: %s t lists the same members' % (tag, os.path.basename(tool)),
                  b.returncode == 0 and b.stdout == a.stdout and not b.stderr, b.stdout + b.stderr)
        # the reference: llvm-ar over the members as they are pruned one by one
        os.makedirs(d.path('ref'), exist_ok=True)
        for m in members:
            data = d.read(m)
            if m.endswith('.o') and m.startswith(('k', 'b')):
                got = pruned(d, m, ['--keep', 'gfx906'])
                data = got if got is not None else b''
            harness.write(d.path('ref/' + m), data)
        run(archiver + ['rcs', 'libk.a'] + members, cwd=d.path('ref'), env=env, check=True)
        check('%s: the bytes the archiver writes for the pruned members' % tag,
              d.read('libk.a.pruned') == d.read('ref/libk.a'))
        for tool in ('nm', llvm('llvm-nm')):
            got, want = archive_index(tool, d.path('libk.a.pruned')), archive_index(tool, d.path('libk.a'))
            check('%s: %s --print-armap maps the same symbols to the same members' % (tag, os.path.basename(tool)),
                  got[0] == 0 and got == want and 'host_side' in got[1], got[1] + got[2])
        rc, out, err = d.run('--keep', 'gfx906', 'libk.a', '--dry-run', '--json')
        j = json.loads(out) if rc == 0 else {}
        check('%s: the report names the members' % tag, rc == 0 and j['container'] == 'ar archive' and
              sorted(set(e['where'] for e in j['entries'])) == ['member b.o, section .hip_fatbin',
                                                                'member k.o, section .hip_fatbin'], out + err)
        os.replace(d.path('libk.a.pruned'), d.path('libkp.a'))
        # GNU ld reads no BSD symbol table (nor the input's)
        links_and_runs(tag, d, ['-L.', '-lkp'], [' '.join(kept_ids(ids, ['gfx906']))],
                       linkers=LINKERS[:1] if 'bsd' in tag else LINKERS)
        os.unlink(d.path('libkp.a'))


def elf_section_header(data, name):
    """(index, header offset, contents offset) of section `name` of a little-endian ELF64 file."""
    shoff, = struct.unpack_from('<Q', data, 0x28)
    shnum, shstrndx = struct.unpack_from('<HH', data, 0x3c)
    str_off, = struct.unpack_from('<Q', data, shoff + shstrndx * 64 + 0x18)
    for i in range(shnum):
        at = shoff + i * 64
        n, = struct.unpack_from('<I', data, at)
        if data[str_off + n:].split(b'\0', 1)[0] == name.encode():
            return i, at, struct.unpack_from('<Q', data, at + 0x18)[0]
    raise KeyError(name)


def elf_symbol(data, name):
    """(index, file offset) of the symbol `name` in .symtab (its names in .strtab)."""
    _, at, tab = elf_section_header(data, '.symtab')
    size, = struct.unpack_from('<Q', data, at + 0x20)
    strtab = elf_section_header(data, '.strtab')[2]
    for j in range(size // 24):
        n, = struct.unpack_from('<I', data, tab + 24 * j)
        if data[strtab + n:].split(b'\0', 1)[0] == name.encode():
            return j, tab + 24 * j
    raise KeyError(name)


def test_object_bad_input(root):
    d = objects_case(root)
    llvm_bundle(d, 'a.hipfb', GPUS, extra=['-bundle-align=4096'])
    fatbin = '.section .hip_fatbin,"a",@progbits\n.p2align 12\n'
    d.put('reloc.s', fatbin + 'fb:\n.incbin "a.hipfb"\n.data\n.quad fb+16\n')
    d.put('sym.s', fatbin + '.incbin "a.hipfb", 0, 16\n.globl mid\nmid:\n.incbin "a.hipfb", 16\n')
    d.put('def.s', '.section __CLANG_OFFLOAD_BUNDLE__hipv4-amdgcn-amd-amdhsa--gfx906,"e",@progbits\n.globl image\n'
                   'image:\n.byte 1\n.section __CLANG_OFFLOAD_BUNDLE__hipv4-amdgcn-amd-amdhsa--gfx90a,"e",@progbits\n'
                   '.byte 2\n')
    for n in ('reloc', 'sym', 'def'):
        run([CLANG, '-c', n + '.s', '-o', n + '.o'], cwd=d.dir, check=True)
        os.unlink(d.path(n + '.s'))
    run([CLANG, '-c', '-x', 'c', '-', '-o', 'host.o'], cwd=d.dir, check=True, stdin=b'int f(void) { return 1; }\n')
    run([llvm('llvm-ar'), 'rcT', 'thin.a', 'k.o'], cwd=d.dir, check=True)
    k = bytearray(d.read('k.o'))
    index, at, _ = elf_section_header(k, '.hip_fatbin')
    k[at + 0x18:at + 0x20] = (1 << 40).to_bytes(8, 'little')  # sh_offset far past the end
    d.put('damaged.o', bytes(k))
    run([llvm('llvm-ar'), 'rcS', 'damaged.a', 'host.o', 'damaged.o'], cwd=d.dir, check=True)
    run([llvm('llvm-ar'), 'rcs', 'host.a', 'host.o'], cwd=d.dir, check=True)
    d.before = set(d.files())
    before = d.names()
    rel_index, _, reloc_at = elf_section_header(d.read('reloc.o'), '.rela.data')
    fb_index = elf_section_header(d.read('reloc.o'), '.hip_fatbin')[0]
    sym_fb = elf_section_header(d.read('sym.o'), '.hip_fatbin')[0]
    sym_index, sym_at = elf_symbol(d.read('sym.o'), 'mid')
    def_sec = elf_section_header(d.read('def.o'), '__CLANG_OFFLOAD_BUNDLE__hipv4-amdgcn-amd-amdhsa--gfx906')[0]
    def_index, def_at = elf_symbol(d.read('def.o'), 'image')

    def bad(name, args, err):
        expect('bad object: ' + name, d, args + ['-o', 'x'], 1, '', E + err)
        check('bad object: %s: nothing written' % name, d.names() == before, d.names())

    bad('relocation into the middle of a bundle', ['--keep', 'gfx906', 'reloc.o'],
        'reloc.o: relocation 0 of section %d (.rela.data) points into section %d (.hip_fatbin) at 0x10, not at the '
        'start of a bundle, at offset 0x%x\n' % (rel_index, fb_index, reloc_at))
    bad('symbol into the middle of a bundle', ['--keep', 'gfx906', 'sym.o'],
        "sym.o: symbol %d ('mid') points into section %d (.hip_fatbin) at 0x10, not at the start of a bundle, at "
        'offset 0x%x\n' % (sym_index, sym_fb, sym_at))
    bad('a symbol defined in a dropped section', ['--keep', 'gfx90a', 'def.o'],
        "def.o: cannot remove section %d (__CLANG_OFFLOAD_BUNDLE__hipv4-amdgcn-amd-amdhsa--gfx906): symbol %d "
        "('image') is defined in it, at offset 0x%x\n" % (def_sec, def_index, def_at))
    bad('nothing kept', ['--keep', 'gfx1100', 'krdc.o'],
        'krdc.o: no device entry of the bundle sections would stay (--allow-empty writes it without any)\n')
    bad('no device code', ['--keep', 'gfx906', 'host.o'],
        'host.o: the object holds no offload container (.hip_fatbin, __CLANG_OFFLOAD_BUNDLE__ sections, '
        '.llvm.offloading, .nv_fatbin, __nv_relfatbin), at offset 0x0\n')
    bad('archive without device code', ['--keep', 'gfx906', 'host.a'],
        'host.a: no member of the archive holds device code (an object with it, a bundle, a compressed bundle, '
        'offload binaries), at offset 0x0\n')
    bad('thin archive', ['--keep', 'gfx906', 'thin.a'],
        'thin.a: thin archives are not pruned (their members live in other files), at offset 0x0\n')
    bad('damaged object', ['--keep', 'gfx906', 'damaged.o'],
        'damaged.o: section %d data (0x4978 bytes at 0x10000000000) extends past the end of the file (0x%x bytes), '
        'at offset 0x%x\n' % (index, len(k), at))
    bad('damaged archive member', ['--keep', 'gfx906', 'damaged.a'],
        'damaged.a(damaged.o): section %d data (0x4978 bytes at 0x10000000000) extends past the end of the file '
        '(0x%x bytes), at offset 0x%x\n' % (index, len(k), at))


def pe_pointers(image, count):
    """The first `count` pointers of .data in a PE32+ image, as offsets into its .hip_fatbin
    section (which the image names by its first 8 characters)."""
    pe, = struct.unpack_from('<I', image, 0x3c)
    nsec, = struct.unpack_from('<H', image, pe + 6)
    opt_size, = struct.unpack_from('<H', image, pe + 20)
    base, = struct.unpack_from('<Q', image, pe + 24 + 24)
    sections = {}
    for i in range(nsec):
        at = pe + 24 + opt_size + 40 * i
        name = image[at:at + 8].rstrip(b'\0').decode()
        sections[name] = struct.unpack_from('<IIII', image, at + 8)  # VirtualSize, VirtualAddress, size, raw offset
    data, fatbin = sections['.data'], sections['.hip_fat']
    return [struct.unpack_from('<Q', image, data[3] + 8 * k)[0] - base - fatbin[1] for k in range(count)]


def test_object_coff(root):
    d = harness.Case(root, 'prune', {'hw.c': b'int f(void) { return 1; }\n'})
    win = [CLANG, '--target=x86_64-pc-windows-msvc', '-c']
    bundle = llvm_bundle(d, 'a.fb', GPUS, extra=['-bundle-align=4096'])
    second = (len(bundle) + 4095) // 4096 * 4096
    # .hip_fatbin with two bundles; .data points at each, the last as "first + offset" (an addend in .data)
    d.put('w.s', '.section .hip_fatbin,"dr"\n.p2align 12\nfb1:\n.incbin "a.fb"\n.p2align 12\nfb2:\n.incbin "a.fb"\n'
                 '.data\n.globl ptrs\nptrs:\n.quad fb1\n.quad fb2\n.quad fb1+%d\n' % second)
    run(win + ['w.s', '-o', 'w.obj'], cwd=d.dir, check=True)
    check('coff: the input holds the bundles where the test puts them', dump_section(d, 'w.obj', '.hip_fatbin') ==
          bundle + bytes(second - len(bundle)) + bundle)
    want = llvm_bundle(d, 'want.fb', ['gfx90a:xnack+', 'gfx90a:xnack-'], extra=['-bundle-align=4096'])
    at = (len(want) + 4095) // 4096 * 4096  # where the second bundle goes
    if pruned(d, 'w.obj', ['--keep', 'gfx90a']) is not None:
        harness.check_reader_clean('coff .hip_fatbin', [llvm('llvm-readobj'), '-a', d.path('w.obj.pruned')])
        check('coff .hip_fatbin: each bundle LLVM 19 bytes for the kept entries, at the section alignment',
              dump_section(d, 'w.obj.pruned', '.hip_fatbin') == want + bytes(at - len(want)) + want)
        r = run([llvm('lld-link'), '/dll', '/noentry', '/out:w.dll', 'w.obj.pruned'], cwd=d.dir)
        check('coff .hip_fatbin: lld-link links it', r.returncode == 0, r.stderr)
        if r.returncode == 0:
            got = pe_pointers(d.read('w.dll'), 3)
            check('coff .hip_fatbin: in the linked image each pointer lands on its bundle', got == [0, at, at], got)
    # __CLANG_OFFLOAD_BUNDLE__ sections in a COFF object, as LLVM 19's bundler writes them
    run(win + ['hw.c', '-o', 'hw.obj'], cwd=d.dir, check=True)
    ids = ['host-x86_64-pc-windows-msvc', HIP + 'gfx906', HIP + 'gfx90a:xnack+']
    d.put('i1', IMAGES['gfx906'])
    d.put('i2', IMAGES['gfx90a:xnack+'])
    run([LLVM_BUNDLER, '-type=o', '-targets=' + ','.join(ids), '-input=hw.obj', '-input=i1', '-input=i2',
         '-output=fat.obj'], cwd=d.dir, check=True)
    if pruned(d, 'fat.obj', ['--keep', 'gfx90a']) is not None:
        check('coff bundle sections: LLVM 19 lists the kept entries',
              sorted(llvm_list(d, 'fat.obj.pruned')) == sorted(['host-x86_64-pc-windows-msvc-', HIP + 'gfx90a:xnack+']),
              llvm_list(d, 'fat.obj.pruned'))
        check('coff bundle sections: LLVM 19 unbundles the kept entry, the same bytes',
              llvm_unbundle(d, 'fat.obj.pruned', [HIP + 'gfx90a:xnack+']) ==
              {HIP + 'gfx90a:xnack+': IMAGES['gfx90a:xnack+']})
        harness.check_reader_clean('coff bundle sections', [llvm('llvm-readobj'), '-a', d.path('fat.obj.pruned')])
        r = run([llvm('lld-link'), '/dll', '/noentry', '/out:fat.dll', 'fat.obj.pruned'], cwd=d.dir)
        check('coff bundle sections: lld-link links it', r.returncode == 0, r.stderr)
    # a COFF archive (llvm-lib: two linker members, the second little-endian with an offset per member)
    run([llvm('llvm-lib'), '/out:w.lib', 'w.obj', 'hw.obj'], cwd=d.dir, check=True)
    if pruned(d, 'w.lib', ['--keep', 'gfx90a']) is not None and os.path.exists(d.path('w.obj.pruned')):
        os.makedirs(d.path('ref'))
        os.replace(d.path('w.obj.pruned'), d.path('ref/w.obj'))
        os.replace(d.path('hw.obj'), d.path('ref/hw.obj'))
        run([llvm('llvm-lib'), '/out:w.lib', 'w.obj', 'hw.obj'], cwd=d.path('ref'), check=True)
        check('coff archive: the bytes llvm-lib writes for the pruned members',
              d.read('w.lib.pruned') == d.read('ref/w.lib'))
        r = run([llvm('lld-link'), '/dll', '/noentry', '/include:ptrs', '/out:lib.dll', 'w.lib.pruned'], cwd=d.dir)
        check('coff archive: lld-link links from it', r.returncode == 0, r.stderr)
        if r.returncode == 0:
            got = pe_pointers(d.read('lib.dll'), 3)
            check('coff archive: in the linked image each pointer lands on its bundle', got == [0, at, at], got)


def test_object_large(root):
    """Payloads of MiBs in an object (copied by the kernel rather than through memory)."""
    d = harness.Case(root, 'prune', {})
    big = {g: payload(20 + i, (3 << 20) + i) for i, g in enumerate(GPUS)}
    llvm_bundle(d, 'big.fb', GPUS, extra=['-bundle-align=4096'], images=big)
    d.put('big.s', '.section .hip_fatbin,"a",@progbits\n.p2align 12\nfb:\n.incbin "big.fb"\n'
                   '.section .data.rel.ro,"aw",@progbits\n.quad fb\n')
    run([CLANG, '-c', 'big.s', '-o', 'big.o'], cwd=d.dir, check=True)
    if pruned(d, 'big.o', ['--drop', 'gfx90a']) is None:
        return
    want = llvm_bundle(d, 'bigwant.fb', ['gfx906', 'gfx1030'], extra=['-bundle-align=4096'], images=big)
    check('object, large payloads: the section holds LLVM 19 bytes',
          dump_section(d, 'big.o.pruned', '.hip_fatbin') == want)
    readers_accept('object, large payloads', d, 'big.o.pruned')


def cases(root):
    for t in (test_binary, test_text, test_ccob, test_offload_binary, test_report, test_bad_input, test_object_fatbin,
              test_object_two_bundles, test_object_rdc, test_object_openmp, test_object_coff, test_object_large,
              test_archive, test_object_bad_input, test_detected):
        t(root)


# No CUDA driver for --keep-detected whatever the machine has (NVIDIA GPUs: tests/real/cuda_detect_test.py).
NO_LIBCUDA = '/nonexistent/offloadtool-test/libcuda.so.1'


def main():
    os.environ['OFFLOADTOOL_LIBCUDA'] = NO_LIBCUDA
    return harness.run_suite('prune-test', cases, needs=[LLVM_BUNDLER, LLVM_PACKAGER])


if __name__ == '__main__':
    sys.exit(main())
