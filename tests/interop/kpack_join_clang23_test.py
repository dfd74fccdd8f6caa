#!/usr/bin/env python3
"""split and join as LLVM 23 of the HIP shared libraries clang 23 builds, for
x86-64 and AArch64 (suite llvm23: clang 23 runs in scripts/fetch-llvm23's
chroot; the libraries are linked here, by gcc and aarch64-linux-gnu-gcc).

clang 23 writes the host entry of each .hip_fatbin bundle with the target's
normalised triple: host-x86_64-pc-linux-gnu- for Debian's default target,
host-aarch64-unknown-linux-gnu- for --target=aarch64-linux-gnu (the default
of Debian's arm64 clang). join lays the bundles out again as clang does, so
split then join, both as 23, must give back the .hip_fatbin clang 23 wrote
(the reference: its bytes), for both machines.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
import harness  # noqa: E402
from harness import OT, check, read, run, write  # noqa: E402

CLANG23 = os.path.join(harness.LLVM_BIN, 'clang')
ARCHS = ['--offload-arch=gfx906', '--offload-arch=gfx90a:xnack-', '--offload-arch=gfx1100']
KERNELS = harness.HIP_PRELUDE.decode() + '''
__device__ int twice(int v) { return 2 * v; }
__global__ void scale(int *x, int n) { if (n > 0) x[0] = twice(x[0]); }
extern "C" int host_side(int v) { return v + 1; }
'''
MACHINES = [  # clang 23's --target (none: Debian's default), the linker, the host ID clang 23 writes
    ([], 'gcc', 'host-x86_64-pc-linux-gnu-'),
    (['--target=aarch64-linux-gnu'], 'aarch64-linux-gnu-gcc', 'host-aarch64-unknown-linux-gnu-'),
]


def hip_fatbin(path):
    for s in harness.elf64_sections(path) or []:
        if s['name'] == '.hip_fatbin':
            return read(path)[s['offset']:s['offset'] + s['size']] if s['type'] != 8 else b''
    return None


def body(root):
    write(os.path.join(root, 'k.hip'), KERNELS.encode())
    for target, linker, host in MACHINES:
        name = 'aarch64' if target else 'x86_64'
        d = harness.Folder(root)
        obj, lib = d.path('k.o'), d.path('libk.so')
        r = run([CLANG23, '-x', 'hip'] + target + ARCHS + ['-nogpulib', '-nogpuinc', '-fPIC', '-c',
                                                             os.path.join(root, 'k.hip'), '-o', obj], text=True)
        if not check('%s: clang 23 compiles the HIP file' % name, r.returncode == 0, r.stderr):
            continue
        r = run([linker, '-shared', obj, '-o', lib], text=True)
        if not check('%s: %s links the shared library' % (name, linker), r.returncode == 0, r.stderr):
            continue
        original = hip_fatbin(lib)
        check('%s: clang 23 wrote the host entry %s' % (name, host), original is not None and host.encode() in original)
        r = run([OT, 'split', lib, '-o', d.path('split')], text=True)
        if not check('%s: split as 23 runs' % name, r.returncode == 0, r.stderr):
            continue
        check('%s: the split library holds no device code in .hip_fatbin' % name,
              hip_fatbin(d.path('split/libk.so')) == b'')
        r = run([OT, 'join', d.path('split'), '-o', d.path('joined')], text=True)
        if not check('%s: join as 23 runs' % name, r.returncode == 0, r.stderr):
            continue
        joined = hip_fatbin(d.path('joined/libk.so'))
        check('%s: split then join give back the .hip_fatbin clang 23 wrote, byte for byte (%d bytes)'
              % (name, len(original or b'')), joined == original and original,
              'joined %s bytes, host IDs in it: %s' % (
                  None if joined is None else len(joined),
                  sorted({m.decode() for m in re.findall(rb'host-[a-z0-9_.-]*', joined or b'')})))


if __name__ == '__main__':
    sys.exit(harness.run_suite('kpack-join-clang23', body,
                               needs=[CLANG23, 'gcc', 'aarch64-linux-gnu-gcc']))
