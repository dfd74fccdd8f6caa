"""NVIDIA GPUs found through the CUDA driver API: `compat detect` and `prune --keep-detected`.

The driver is a stand-in libcuda.so.1 (tests/real/stand_in_libcuda.c, built by
tests/real/meson.build: $OT_STAND_IN_LIBCUDA) reporting the GPUs chosen here
(OT_STAND_IN_CUDA_DEVICES=86,90: an sm_86 and an sm_90 GPU; its cuInit starts a
thread and uses thread-local storage, as the real driver does). It is found as
any CUDA program finds libcuda.so.1: through LD_LIBRARY_PATH (a folder holding
it under that name), or named by OFFLOADTOOL_LIBCUDA. The suite runs against
whichever build meson built: the static one (CI: scripts/test; the probe runs
in the helper the binary carries, "how": "helper") or the shared one (dlopen in
the process, "how": "dlopen"); which one is read from the binary (PT_INTERP).

What is checked:
 1. compat detect, text and --json, with no amdkfd topology: the stand-in's two
    GPUs (sm_86, sm_90: compute capability, name, ordinal; the driver version
    and cuInit's result in --json); with an AMD fixture as well (both vendors
    listed); and each way of finding none, its one error line: no driver (a
    path that is not there, "how": "none"; a name the dynamic loader does not
    find: its message), CUDA's stub library (CUDA_ERROR_STUB_LIBRARY, 34),
    cuInit failing with CUDA_ERROR_NO_DEVICE (100), the driver counting 0
    devices, cuInit failing otherwise (CUDA_ERROR_UNKNOWN, 999: a warning
    beside an AMD GPU; no word when there is no driver at all), a library that
    is not a CUDA driver (libz.so.1: no cuInit).
 2. prune --keep-detected of libcurand.so.10 (Debian 12's CUDA 11.8, from
    $OT_CUDA_CACHE: scripts/fetch-cuda-samples) with the stand-in's sm_86 and
    sm_90: `cuobjdump -all -lelf -lptx` of the output lists exactly what NVIDIA's
    rules keep for those two GPUs (cuda_prune_test.py's RULES: per fatbin, the
    cubin of the same major with the highest minor not above the GPU's, else
    the newest PTX not above it), the entries computed from the fatbin headers
    of the original (read by cuda_prune_test.py's parser, itself checked there
    against cuobjdump's listing of the original); the output's bytes are those
    of `prune --keep sm_86,sm_90`; and with the driver saying there is no GPU,
    prune --keep-detected fails naming why and writes nothing.

Nothing is skipped: a missing package, tool or file is a failing test.
"""
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import cuda_test as cu  # noqa: E402
import cuda_prune_test as cp  # noqa: E402  (fatbins, in_cuobjdump_order, listing, kept_by_rules)
from harness import OT, check, run  # noqa: E402

STAND_IN = os.environ.get('OT_STAND_IN_LIBCUDA', '')
SYSFS = os.path.join(harness.DATA, 'sysfs')
E = 'offloadtool compat: error: '
W = 'offloadtool compat: warning: '
PE = 'offloadtool prune: error: '
GPUS = '86,90'  # what the stand-in reports: an sm_86 GPU and an sm_90 GPU


def is_static(path):
    r = run(['readelf', '-lW', path], text=True)
    return r.returncode == 0 and 'INTERP' not in r.stdout


def env_for(libdir, devices=GPUS, init=None, library=None):
    """The environment a run sees: the stand-in found through LD_LIBRARY_PATH
    (libdir), or named by OFFLOADTOOL_LIBCUDA (library)."""
    return {'LD_LIBRARY_PATH': libdir, 'OFFLOADTOOL_LIBCUDA': library, 'OT_STAND_IN_CUDA_DEVICES': devices,
            'OT_STAND_IN_CUDA_INIT': init, 'HSA_XNACK': None}


def detect(env, *args):
    r = run([OT, 'compat', 'detect'] + list(args), env=env, text=True)
    return r.returncode, r.stdout, r.stderr


def expect(name, got, rc, out, err):
    check(name, got == (rc, out, err), 'got rc=%s\n--- stdout\n%s--- stderr\n%s' % got)


def check_detect(root, libdir, how):
    none = os.path.join(root, 'no-sysfs')  # no amdkfd topology: no AMD GPU driver
    topology = none + '/class/kfd/kfd/topology/nodes'
    no_amd = 'no amdkfd topology at %s (is the amdgpu driver loaded?)' % topology
    two = ('cuda 0: sm_86 (compute capability 8.6, Stand-in GPU sm_86)\n'
           'cuda 1: sm_90 (compute capability 9.0, Stand-in GPU sm_90)\n')
    expect('detect: the stand-in driver\'s sm_86 and sm_90, found through LD_LIBRARY_PATH',
           detect(env_for(libdir), '--sysfs', none), 0, two, '')
    expect('detect: the same named by OFFLOADTOOL_LIBCUDA (a path; LD_LIBRARY_PATH empty)',
           detect(env_for('', library=os.path.join(libdir, 'libcuda.so.1')), '--sysfs', none), 0, two, '')
    rc, out, err = detect(env_for(libdir), '--sysfs', none, '--json')
    try:
        j = json.loads(out)
    except ValueError as e:
        j = 'not JSON: %s' % e
    want = {'library': 'libcuda.so.1', 'how': how, 'loaded': True, 'driver_version': 12020, 'init_result': 0,
            'init_result_name': 'CUDA_SUCCESS', 'error': None}
    check('detect --json: schema offloadtool-compat/1, the cuda member (how: %s) and nvidia_gpus' % how,
          rc == 0 and err == '' and isinstance(j, dict) and j.get('schema') == 'offloadtool-compat/1'
          and j.get('command') == 'detect' and j.get('found_topology') is False and j.get('gpus') == []
          and j.get('cuda') == want and j.get('nvidia_gpus') == [
              {'ordinal': 0, 'compute_capability': '8.6', 'target': 'sm_86', 'name': 'Stand-in GPU sm_86', 'note': None},
              {'ordinal': 1, 'compute_capability': '9.0', 'target': 'sm_90', 'name': 'Stand-in GPU sm_90',
               'note': None}], '%s\n%s' % (j, err))
    expect('detect: both vendors (amdkfd fixture gfx90a, the stand-in\'s sm_86 and sm_90)',
           detect(env_for(libdir), '--sysfs', os.path.join(SYSFS, 'gfx90a-mi210'), '--xnack', 'off'), 0,
           'node 1: gfx90a:sramecc+:xnack- (gfx_target_version 90010, device 0x740f)\n' + two, '')

    absent = os.path.join(root, 'absent', 'libcuda.so.1')
    expect('detect: no driver (a path that is not there: nothing loaded)',
           detect(env_for('', library=absent), '--sysfs', none), 1, '',
           E + 'no GPU found: %s; no NVIDIA driver (%s: No such file or directory)\n' % (no_amd, absent))
    rc, out, err = detect(env_for('', library=absent), '--sysfs', none, '--json')
    check('detect --json: no driver at a path: how "none", loaded false, the reason in cuda.error',
          rc == 1 and json.loads(out)['cuda'] == {
              'library': absent, 'how': 'none', 'loaded': False, 'driver_version': None, 'init_result': None,
              'init_result_name': None, 'error': 'no NVIDIA driver (%s: No such file or directory)' % absent}, out + err)
    name = 'libcuda-absent-offloadtool-test.so.1'  # searched for as libcuda.so.1 is: the dynamic loader's words
    expect('detect: no driver (a library name the dynamic loader does not find): its message',
           detect(env_for(libdir, library=name), '--sysfs', none), 1, '',
           E + 'no GPU found: %s; no NVIDIA driver (%s: cannot open shared object file: No such file or directory)\n'
           % (no_amd, name))
    expect('detect: CUDA\'s stub library (cuInit returns CUDA_ERROR_STUB_LIBRARY, 34, and names no error)',
           detect(env_for(libdir, init='34'), '--sysfs', none), 1, '',
           E + 'no GPU found: %s; no NVIDIA driver (libcuda.so.1 is CUDA\'s stub library: cuInit returned '
           'CUDA_ERROR_STUB_LIBRARY (34))\n' % no_amd)
    expect('detect: driver, no GPU: cuInit returns CUDA_ERROR_NO_DEVICE (100)',
           detect(env_for(libdir, init='100'), '--sysfs', none), 1, '',
           E + 'no GPU found: %s; no NVIDIA GPU (the driver, libcuda.so.1, found none: cuInit returned '
           'CUDA_ERROR_NO_DEVICE (100))\n' % no_amd)
    expect('detect: driver, 0 devices',
           detect(env_for(libdir, devices=''), '--sysfs', none), 1, '',
           E + 'no GPU found: %s; no NVIDIA GPU (the driver, libcuda.so.1, reports 0 devices)\n' % no_amd)
    expect('detect: cuInit fails otherwise (CUDA_ERROR_UNKNOWN, 999)',
           detect(env_for(libdir, init='999'), '--sysfs', none), 1, '',
           E + 'no GPU found: %s; the NVIDIA driver (libcuda.so.1) failed: cuInit returned CUDA_ERROR_UNKNOWN (999)\n'
           % no_amd)
    expect('detect: an AMD GPU, and an NVIDIA driver that fails: listed, and a warning',
           detect(env_for(libdir, init='999'), '--sysfs', os.path.join(SYSFS, 'gfx1100-navi31')), 0,
           'node 1: gfx1100 (gfx_target_version 110000, device 0x744c)\n',
           W + 'the NVIDIA driver (libcuda.so.1) failed: cuInit returned CUDA_ERROR_UNKNOWN (999)\n')
    expect('detect: an AMD GPU, no NVIDIA driver: no word of it',
           detect(env_for('', library=absent), '--sysfs', os.path.join(SYSFS, 'gfx1100-navi31')), 0,
           'node 1: gfx1100 (gfx_target_version 110000, device 0x744c)\n', '')
    expect('detect: a library that is not a CUDA driver (libz.so.1)',
           detect(env_for('', library='libz.so.1'), '--sysfs', none), 1, '',
           E + 'no GPU found: %s; libz.so.1 is not a CUDA driver library: it has no cuInit\n' % no_amd)


def check_prune(root, libdir):
    lib = cp.LIBCURAND
    targets = GPUS.replace('86', 'sm_86').replace('90', 'sm_90').split(',')
    d = os.path.join(root, 'prune')
    os.makedirs(d)
    out = os.path.join(d, 'libcurand.so.10')
    none = os.path.join(root, 'no-sysfs')
    r = run([OT, 'prune', '--keep-detected', '--sysfs', none, lib, '-o', out], env=env_for(libdir), text=True)
    check('prune --keep-detected libcurand.so.10 (the stand-in\'s sm_86 and sm_90): exit 0, nothing said',
          r.returncode == 0 and r.stdout == '' and r.stderr == '' and os.path.isfile(out), r.stderr)
    if r.returncode != 0:
        return
    before = cp.fatbins(lib)
    expected = [[e for i, e in enumerate(fb['entries']) if i in cp.kept_by_rules(fb['entries'], targets)]
                for fb in before]
    want = cp.in_cuobjdump_order([{'section': fb['section'], 'entries': e} for fb, e in zip(before, expected)])
    got, problem = cp.listing(out)
    check('cuobjdump -all -lelf -lptx of the output lists exactly what an sm_86 and an sm_90 GPU load (%d of %d '
          'entries; kinds %s)' % (len(want), sum(len(fb['entries']) for fb in before), sorted(set(want))),
          problem is None and [x[1:] for x in got] == want and want,
          'cuobjdump: %s\nexpected: %s\n%s' % (got[:20], want[:20], problem))
    check('the output keeps some sm_86-loadable cubins (sm_80/sm_86) and sm_90 code: the two GPUs both count',
          any(a in ('sm_80', 'sm_86') for k, a in want) and any(a == 'sm_90' for k, a in want), want[:20])
    explicit = os.path.join(d, 'explicit.so')
    r2 = run([OT, 'prune', '--keep', ','.join(targets), lib, '-o', explicit], text=True)
    check('the output is the bytes of prune --keep sm_86,sm_90',
          r2.returncode == 0 and open(explicit, 'rb').read() == open(out, 'rb').read(), r2.stderr)
    gone = os.path.join(d, 'none.so')
    r3 = run([OT, 'prune', '--keep-detected', '--sysfs', none, lib, '-o', gone], env=env_for(libdir, init='100'),
             text=True)
    topology = none + '/class/kfd/kfd/topology/nodes'
    check('prune --keep-detected with no GPU: exit 1, why, nothing written',
          r3.returncode == 1 and r3.stdout == '' and r3.stderr ==
          PE + '--keep-detected: no GPU found: no amdkfd topology at %s (is the amdgpu driver loaded?); no NVIDIA '
          'GPU (the driver, libcuda.so.1, found none: cuInit returned CUDA_ERROR_NO_DEVICE (100))\n' % topology
          and sorted(os.listdir(d)) == ['explicit.so', 'libcurand.so.10'], r3.stderr)


def cases(root):
    check('the stand-in libcuda was built ($OT_STAND_IN_LIBCUDA: %s)' % STAND_IN, os.path.isfile(STAND_IN), STAND_IN)
    libdir = os.path.join(root, 'driver')
    os.makedirs(libdir)
    shutil.copy(STAND_IN, os.path.join(libdir, 'libcuda.so.1'))
    how = 'helper' if is_static(OT) else 'dlopen'
    print('offloadtool is %s: the CUDA probe runs %s' % (
        'static' if how == 'helper' else 'dynamically linked', 'in its helper' if how == 'helper' else 'in process'))
    check_detect(root, libdir, how)
    check_prune(root, libdir)


if __name__ == '__main__':
    sys.exit(harness.run_suite('cuda-detect', cases, needs=[STAND_IN, cu.CUOBJDUMP, cp.LIBCURAND, 'readelf']))
