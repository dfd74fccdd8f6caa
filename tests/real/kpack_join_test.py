#!/usr/bin/env python3
"""`offloadtool join`, the way back from the kpack split: split -> join gives
back the original's code objects, byte for byte, per target.

Inputs: HIP shared libraries and executables the real clang driver builds
(19; 22 in kpack-join-22)
(two translation units, three GPUs; one with -fgpu-rdc; executables PIE, non-PIE
and with RELR relocations), linked against Debian's HIP runtime
(libamdhip64-5), and Debian's librocrand1 (ROCm 5.2). Each is split with
`offloadtool split` into a tree (the binary and its .kpack/ archives) and the
tree joined again. Checks:
  * per bundle and per target, the code object LLVM 19's clang-offload-bundler
    unbundles from the joined .hip_fatbin is the one it unbundles from the
    original's; for clang 19's builds the whole .hip_fatbin is the original's,
    byte for byte (ROCm 5.2's clang wrote the host entry's ID with three
    fields: only that differs from the ID the release's clang writes);
  * the joined tree has no .kpack folder; the joined binary is loaded by
    Debian's HIP runtime (a library dlopen'ed, an executable run), roc-obj-ls
    (hipcc) lists what it lists for the original, readelf, llvm-readelf and
    eu-elflint say nothing they do not say of the original;
  * join writes the same bytes twice; archives of zstd frames (split
    --compress zstd) give the same file; the peak resident set stays within
    16 MiB of what the binary needs to start (code objects stream);
  * --keep gfx90a keeps only the host entry and the gfx90a code objects;
  * a binary whose archives are gone, and one whose record index lies: one
    line naming the file (and offset), exit 1, nothing written.
No ROCm is installed: -nogpulib -nogpuinc, as in prune_linked_test.py.
"""
import os
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import roc_obj_test as roc  # noqa: E402  (roc-obj-ls and the package cache)
from harness import CLANGXX, LLVM_BIN, OT, check, read, run, write  # noqa: E402

# The reference: LLVM 19's bundler (22's refuses ROCm 5.2's three-field host IDs).
BUNDLER = '/usr/lib/llvm-19/bin/clang-offload-bundler'
HIP_RUNTIME = '/usr/lib/x86_64-linux-gnu/libamdhip64.so.5'
ARCHS = ['--offload-arch=gfx906', '--offload-arch=gfx90a:xnack-', '--offload-arch=gfx1030']
HIP = ['-x', 'hip'] + ARCHS + ['-nogpulib', '-nogpuinc']
# The host entry's ID Debian's clang writes in .hip_fatbin, per release (observed; join writes the release's).
HOST_IDS = {'19': 'host-x86_64-unknown-linux--', '22': 'host-x86_64-unknown-linux-gnu-', '23': 'host-x86_64-pc-linux-gnu-'}

KERNELS = harness.HIP_PRELUDE.decode() + '''
__device__ int twice(int v) { return 2 * v; }
__global__ void scale(int *x, int n) { if (n > 0) x[0] = twice(x[0]); }
extern "C" int host_side(int v) { return v + 1; }
'''
MORE = harness.HIP_PRELUDE.decode() + '''
__device__ int thrice(int v) { return 3 * v; }
__global__ void other(int *x) { x[0] = thrice(7); }
extern "C" int other_side(int v) { return v * 2; }
'''
MAIN = harness.HIP_PRELUDE.decode() + '''#include <cstdio>
extern "C" int host_side(int v);
extern "C" int other_side(int v);
int main() { std::printf("host_side %d other_side %d\\n", host_side(5), other_side(4)); return 0; }
'''
LLD = ['-fuse-ld=lld', '--ld-path=' + os.path.join(LLVM_BIN, 'ld.lld')]


def section(path, name):
    s = next((x for x in harness.elf64_sections(path) if x['name'] == name), None)
    if s is None or s['type'] == 8:
        return None
    with open(path, 'rb') as f:
        f.seek(s['offset'])
        return f.read(s['size'])


def unbundled(blob, folder):
    """[{id: code object}] per bundle, as LLVM 19's clang-offload-bundler unbundles them."""
    return harness.unbundle_hip_fatbin(blob, folder, BUNDLER)


def device_only(per_bundle):
    return [{k: v for k, v in b.items() if not k.startswith('host-')} for b in per_bundle]


def load(path, root):
    """How Debian's HIP runtime takes the binary: a library dlopen'ed by the loader, an executable run."""
    if path.endswith('.so') or '.so.' in path:
        r = run([os.path.join(root, 'loader'), path], text=True, timeout=120)
    else:
        r = run([path], text=True, timeout=120)
    return r.returncode, r.stdout


def roc_ids(path):
    entries, problem = roc.roc_obj_ls(path)
    return [(e['bundle'], e['id']) for e in entries], problem


def split_join(root, name, binary, rel, same_clang=True):
    """Splits the tree holding `binary` at `rel` and joins it; checks the result against it."""
    base = os.path.join(root, name)
    tree = os.path.join(base, 'in')
    os.makedirs(os.path.dirname(os.path.join(tree, rel)))
    shutil.copy2(binary, os.path.join(tree, rel))
    orig = os.path.join(tree, rel)
    r = run([OT, 'split', tree, '-o', os.path.join(base, 'split')], text=True, timeout=600)
    if not check('%s: split writes the kpack\'d tree' % name, r.returncode == 0, r.stderr):
        return None
    joined_tree = os.path.join(base, 'joined')
    r = run([OT, 'join', os.path.join(base, 'split'), '-o', joined_tree], text=True, timeout=600)
    if not check('%s: join writes the joined tree' % name, r.returncode == 0 and not r.stderr, r.stderr):
        return None
    joined = os.path.join(joined_tree, rel)
    files = sorted(os.path.relpath(os.path.join(d, f), joined_tree) for d, _, fs in os.walk(joined_tree) for f in fs)
    dirs = sorted(os.path.relpath(os.path.join(d, x), joined_tree) for d, ds, _ in os.walk(joined_tree) for x in ds)
    check('%s: the joined tree holds the binary and no .kpack folder (%d bytes; the original %d, the kpack\'d %d)'
          % (name, os.path.getsize(os.path.join(joined_tree, rel)), os.path.getsize(orig),
             os.path.getsize(os.path.join(base, 'split', rel))),
          files == [rel] and not any(os.path.basename(d) == '.kpack' for d in dirs), (files, dirs))

    work = os.path.join(base, 'work')
    os.makedirs(work)
    a, b = section(orig, '.hip_fatbin'), section(joined, '.hip_fatbin')
    if not check('%s: the joined binary has a .hip_fatbin with contents' % name, b is not None):
        return None
    os.makedirs(os.path.join(work, 'a'))
    os.makedirs(os.path.join(work, 'b'))
    ua, ub = unbundled(a, os.path.join(work, 'a')), unbundled(b, os.path.join(work, 'b'))
    check('%s: clang-offload-bundler unbundles the original\'s code objects, bundle by bundle and target by '
          'target, from the joined binary (%d bundles, %d code objects)'
          % (name, len(ua), sum(len(x) for x in device_only(ua))),
          device_only(ua) == device_only(ub) and len(ua) > 0,
          [sorted(x) for x in device_only(ub)])
    if same_clang:
        check('%s: the joined .hip_fatbin is the original\'s, byte for byte' % name, a == b)
    else:
        host = HOST_IDS[harness.RELEASE]
        check('%s: the joined .hip_fatbin differs only in the host entries\' IDs (%s, clang %s\'s)'
              % (name, host, harness.RELEASE),
              len(ua) == len(ub) and all(sorted(x) == sorted(y) for x, y in zip(device_only(ua), device_only(ub)))
              and all([k for k in y if k.startswith('host-')] == [host] for y in ub))
    said_a, said_b = harness.elf_readers_say(orig), harness.elf_readers_say(joined)
    check('%s: readelf, llvm-readelf and eu-elflint say nothing new of the joined binary' % name,
          said_a == said_b, '%s\n---\n%s' % (said_a, said_b))
    la, lb = load(orig, root), load(joined, root)
    check('%s: Debian\'s HIP runtime loads the joined binary as it loads the original' % name,
          la == lb and la[0] == 0, (la, lb))
    again = os.path.join(base, 'joined-again')
    r = run([OT, 'join', os.path.join(base, 'split'), '-o', again], text=True, timeout=600)
    check('%s: join writes the same bytes again' % name,
          r.returncode == 0 and read(os.path.join(again, rel)) == read(joined), r.stderr)
    # Archives of zstd frames (AMD's zstd-per-kernel scheme): the same file, its frames decoded in pieces.
    zsplit, zjoined = os.path.join(base, 'split-zstd'), os.path.join(base, 'joined-zstd')
    r = run([OT, 'split', '--compress', 'zstd', tree, '-o', zsplit], text=True, timeout=600)
    r2 = run([OT, 'join', zsplit, '-o', zjoined], text=True, timeout=600)
    check('%s: split --compress zstd -> join gives the same file' % name,
          r.returncode == 0 and r2.returncode == 0 and read(os.path.join(zjoined, rel)) == read(joined),
          r.stderr + r2.stderr)
    # Memory stays flat: code objects stream from the archives.
    rc, kib = harness.peak_resident_kib([OT, 'join', os.path.join(zsplit, rel), '-o', os.path.join(base, 'rss.out')])
    budget = harness.resident_budget_kib(16)
    check('%s: join of a file peaks at %d KiB resident (at most %d: 16 MiB over --version)' % (name, kib, budget),
          rc == 0 and 0 < kib <= budget)
    ra, pa = roc_ids(orig)
    rb, pb = roc_ids(joined)
    if same_clang:
        check('%s: roc-obj-ls lists the joined binary as the original' % name, pa is None and pb is None and ra == rb,
              (pa, pb, ra, rb))
    else:
        strip = lambda ids: [(n, i) for n, i in ids if not i.startswith('host-')]  # noqa: E731
        check('%s: roc-obj-ls lists the joined binary\'s code objects as the original\'s' % name,
              pa is None and pb is None and strip(ra) == strip(rb) and ra, (pa, pb, ra, rb))
    return base


def keep_and_hostile(root, base, name, rel):
    split = os.path.join(base, 'split')
    orig = os.path.join(base, 'in', rel)
    kept = os.path.join(base, 'kept.so')
    r = run([OT, 'join', '--keep', 'gfx90a', os.path.join(split, rel), '-o', kept], text=True, timeout=600)
    if check('%s: join --keep gfx90a of the file writes it' % name, r.returncode == 0, r.stderr):
        work = os.path.join(base, 'keep')
        os.makedirs(work)
        os.makedirs(os.path.join(work, 'o'))
        ua = unbundled(section(orig, '.hip_fatbin'), work)
        uk = unbundled(section(kept, '.hip_fatbin'), os.path.join(work, 'o'))
        want = [{k: v for k, v in x.items() if '--gfx90a' in k} for x in ua]
        check('%s: --keep gfx90a keeps the host entry and the gfx90a code objects only, as they were' % name,
              device_only(uk) == want and all(any(k.startswith('host-') for k in x) for x in uk),
              [sorted(x) for x in uk])
        check('%s: the --keep gfx90a result loads' % name, load(kept, root)[0] == 0)

    # Hostile: the archives gone; a record index that lies.
    lone = os.path.join(base, 'lone')
    os.makedirs(lone)
    shutil.copy2(os.path.join(split, rel), os.path.join(lone, 'x.so'))
    out = os.path.join(base, 'hostile-out.so')
    r = run([OT, 'join', os.path.join(lone, 'x.so'), '-o', out], text=True)
    check('%s: without its archives: one error line naming the record and the paths looked at, exit 1, nothing '
          'written' % name,
          r.returncode == 1 and r.stderr.count('\n') == 1 and 'no archive holds a code object' in r.stderr
          and '.kpack' in r.stderr and not any(f.startswith(('hostile-out', '.hostile-out')) for f in os.listdir(base)),
          r.stderr)
    data = bytearray(read(os.path.join(split, rel)))
    rec = next(x for x in harness.elf64_sections(os.path.join(split, rel)) if x['name'] == '.hipFatBinSegment')
    struct.pack_into('<Q', data, rec['offset'] + 16, 99)
    bad = os.path.join(split, os.path.dirname(rel), 'bad.so')
    write(bad, bytes(data))
    r = run([OT, 'join', bad, '-o', out], text=True)
    check('%s: a record whose index lies: one line naming the file and the offset, exit 1, nothing written' % name,
          r.returncode == 1 and r.stderr.count('\n') == 1 and ('bad.so' in r.stderr)
          and ('at offset 0x%x' % (rec['offset'] + 16)) in r.stderr
          and not any(f.startswith(('hostile-out', '.hostile-out')) for f in os.listdir(base)), r.stderr)
    os.unlink(bad)


def body(root):
    harness.dlopen_loader(root)
    src = os.path.join(root, 'src')
    os.makedirs(src)
    for f, text in (('k.hip', KERNELS), ('m.hip', MORE), ('main.hip', MAIN)):
        write(os.path.join(src, f), text.encode())
    for flags, suffix in ((['-fPIC'], ''), (['-fno-pie'], '-nopie'), (['-fPIC', '-fgpu-rdc'], '-rdc')):
        for t in ('k', 'm', 'main'):
            run([CLANGXX] + HIP + flags + ['-c', t + '.hip', '-o', t + suffix + '.o'], cwd=src, check=True)
    # --hip-link links -lamdhip64: Debian's runtime under that name (libamdhip64-dev is not needed).
    os.symlink(HIP_RUNTIME, os.path.join(src, 'libamdhip64.so'))
    o = lambda *names: [os.path.join(src, n) for n in names]  # noqa: E731
    builds = [
        ('shared library', 'lib/libk.so', LLD + ['-shared'] + o('k.o', 'm.o') + [HIP_RUNTIME]),
        ('shared library, -fgpu-rdc', 'lib/libk.so', LLD + ['-fgpu-rdc', '--hip-link', '-nogpulib'] + ARCHS
         + ['-shared', '-L' + src] + o('k-rdc.o', 'm-rdc.o') + [HIP_RUNTIME]),
        ('executable, PIE', 'bin/prog', LLD + ['-pie'] + o('main.o', 'k.o', 'm.o') + [HIP_RUNTIME]),
        ('executable, non-PIE', 'bin/prog', LLD + ['-no-pie'] + o('main-nopie.o', 'k-nopie.o', 'm-nopie.o')
         + [HIP_RUNTIME]),
        ('executable, PIE, RELR', 'bin/prog', LLD + ['-pie', '-Wl,-z,pack-relative-relocs']
         + o('main.o', 'k.o', 'm.o') + [HIP_RUNTIME]),
    ]
    for i, (name, rel, argv) in enumerate(builds):
        binary = os.path.join(root, 'built%d' % i)
        run([CLANGXX] + argv + ['-o', binary], cwd=src, check=True)
        base = split_join(root, 'case%d' % i, binary, rel)
        if base and i == 0:
            keep_and_hostile(root, base, name, rel)

    unpacked = roc.unpacked_librocrand(root, 'rocrand')
    if unpacked is None:
        return
    lib = unpacked[1]
    base = split_join(root, 'librocrand', lib, 'lib/librocrand.so.1', same_clang=False)
    if base:
        keep_and_hostile(root, base, 'librocrand', 'lib/librocrand.so.1')


if __name__ == '__main__':
    sys.exit(harness.run_suite('kpack-join', body, needs=[roc.ROC_OBJ_LS, BUNDLER, HIP_RUNTIME, 'perl', 'dpkg-deb',
                                                          'readelf', 'eu-elflint', 'cc']))
