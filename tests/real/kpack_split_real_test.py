#!/usr/bin/env python3
"""`offloadtool split` of a real ROCm library (Debian's librocrand1, ROCm 5.3:
one bundle of seven GPUs, gfx90a:xnack+ and xnack- among them) as the
unpacked package's tree, checked as tests/interop/kpack_split_test.py checks
clang's output (its ELF parser and the splitter's rules; readelf,
llvm-readelf and eu-elflint; every archive against what clang-offload-
bundler-19 unbundles from the original's .hip_fatbin), and loaded:
  * by the dynamic linker with ctypes (RTLD_NOW), Debian's HIP runtime
    (libamdhip64-5, which knows no HIPK record) underneath;
  * with a stand-in __hipRegisterFatBinary preloaded, which must be handed
    the record: magic HIPK, index 0, its pointer at the marker
    {kpack_search_paths: ["../../../.kpack/rand_lib_@GFXARCH@.kpack"],
    kernel_name: "usr/lib/x86_64-linux-gnu/librocrand.so.1.1"};
  * the package's symlinks stay links; `offloadtool list --json` of the
    output names the archives' (binary key, architecture) pairs.
The package comes from scripts/fetch-rocm-samples' cache (never committed).
"""
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, os.path.join(HERE, '..', 'interop'))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import kpack_split_test as ks  # noqa: E402
import roc_obj_test as roc  # noqa: E402
from harness import CLANG, OT, check, run, write  # noqa: E402

LOAD = r'''import ctypes, os, sys
ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW)
print('loaded', flush=True)
'''


def body(root):
    unpacked = roc.unpacked_librocrand(root, 'tree')
    if unpacked is None:
        return
    tree = unpacked[0]
    rel = os.path.relpath(unpacked[1], tree)
    out = os.path.join(root, 'out')
    r = run([OT, 'split', tree, '-o', out, '--name', 'rand_lib'], text=True, timeout=600)
    if not check('split of the unpacked librocrand1: exit 0', r.returncode == 0, r.stderr):
        return
    problems = []
    os.makedirs(os.path.join(root, 'work'))
    want = ks.check_split('librocrand', os.path.join(root, 'work'), os.path.join(tree, rel), os.path.join(out, rel),
                          rel, 'lib', root, problems, name='rand_lib')
    if want is not None:
        ks.check_archives(out, want, problems, name='rand_lib')
    check('the split library and its archives follow the splitter\'s rules, the code objects clang-offload-bundler\'s',
          not problems, '; '.join(problems))
    links = [os.path.relpath(p, tree) for p in glob.glob(os.path.join(tree, 'usr/lib/*/librocrand.so*'))
             if os.path.islink(p)]
    check('the package\'s symlinks stay links', links and all(
        os.readlink(os.path.join(out, l)) == os.readlink(os.path.join(tree, l)) for l in links), links)

    write(os.path.join(root, 'load.py'), LOAD.encode())
    r = run([sys.executable, os.path.join(root, 'load.py'), os.path.join(out, rel)], text=True, timeout=120)
    check('ctypes dlopen(RTLD_NOW) of the split library, Debian\'s HIP runtime underneath',
          r.returncode == 0 and 'loaded' in r.stdout, (r.returncode, r.stdout, r.stderr[-2000:]))
    write(os.path.join(root, 'rt.c'), ks.RUNTIME.encode())
    run([CLANG, '-shared', '-fPIC', 'rt.c', '-o', 'librt.so'], cwd=root, check=True)
    env = dict(os.environ, LD_PRELOAD=os.path.join(root, 'librt.so'))
    r = run([sys.executable, os.path.join(root, 'load.py'), os.path.join(out, rel)], env=env, text=True, timeout=120)
    split = harness.read(os.path.join(out, rel))
    marker = ks.contents(split, ks.sec(ks.parse(split), '.rocm_kpack_ref'))
    recs = [l.split() for l in r.stdout.splitlines() if l.startswith('record ')]
    got = [(int(l[2], 16), int(l[4]), int(l[6]), bytes(int(x, 16) for x in l[8:])) for l in recs]
    check('the record is handed to __hipRegisterFatBinary: HIPK, index 0, pointing at the marker',
          r.returncode == 0 and got == [(0x4B504948, 1, 0, marker[:24])], (got, r.stderr[-2000:]))

    r = run([OT, 'list', '--json', out], text=True, timeout=300)
    listed = set()
    if r.returncode == 0:
        listed = {(e['kpack']['binary'], e['kpack']['arch']) for e in json.loads(r.stdout)['entries'] if e.get('kpack')}
    check('list --json of the output names the archives\' entries', want is not None and listed == set(want),
          (sorted(listed), r.stderr))


if __name__ == '__main__':
    sys.exit(harness.run_suite('kpack-split-real', body, needs=['dpkg-deb', 'readelf', 'eu-elflint', CLANG,
                                                                 harness.LLVM_BUNDLER]))
