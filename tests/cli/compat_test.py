#!/usr/bin/env python3
"""`offloadtool compat`: one case per behaviour with the exact exit code, stdout
and stderr (or the parsed JSON), and a cross-check of the compatibility verdicts
against LLVM 19's clang-offload-bundler (bundle one entry, unbundle it for a
target, compare with `compat check --bundler` and, where the runtimes agree
with LLVM, with `compat check`).

Environment: OFFLOADTOOL = the offloadtool binary, OT_TEST_DATA = tests/data,
OT_SOURCE_ROOT = the source tree (sysfs fixtures). Needs
/usr/lib/llvm-19/bin (fails, not skips, without it).
Prints "N passed, M failed"; exits 1 on failure.
"""

import json
import os
import re
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import OT, binary_bundle, check, expect, golden, run  # noqa: E402

LLVM = harness.LLVM_BIN
BUNDLER = harness.LLVM_BUNDLER
SYSFS = os.path.join(harness.SOURCE_ROOT, 'tests', 'data', 'sysfs')
E = 'offloadtool compat: error: '
HIP = 'hip-amdgcn-amd-amdhsa--'


def Case(root, files):
    return harness.Case(root, 'compat', files)


def run_json(case, args):
    rc, out, err = case.run(*args)
    try:
        return rc, json.loads(out), err
    except ValueError:
        return rc, None, err


def run_large_ccob(root):
    """A compressed bundle larger than the 64 MiB decompressed in memory (LLVM 19
    writes it): select and verify read it from a scratch file, memory stays flat."""
    c = Case(root, {'e.ll': b'define void @f() { ret void }\n'})
    inputs = []
    for p in ('gfx906', 'gfx90a'):
        r = run([LLVM + '/llc', '-mtriple=amdgcn-amd-amdhsa', '-mcpu=' + p, '-filetype=obj', 'e.ll',
                 '-o', p + '.co'], cwd=c.dir, text=True)
        check('llc 19 writes %s.co' % p, r.returncode == 0, r.stderr)
        with open(c.path(p + '.co'), 'ab') as f:  # 40 MiB of padding after the code object
            f.truncate(os.path.getsize(c.path(p + '.co')) + (40 << 20))
        inputs.append('-input=%s.co' % p)
    r = run([BUNDLER, '-type=bc', '-compress', '-targets=%sgfx906,%sgfx90a' % (HIP, HIP)] + inputs
            + ['-output=big.hipfb'], cwd=c.dir, text=True)
    check('LLVM 19 compresses an 80 MiB bundle', r.returncode == 0, r.stderr)
    got = expect('select: compressed bundle over 64 MiB', c, ['select', 'big.hipfb', '-t', 'gfx90a:xnack+'], 0, None)
    check('select: compressed bundle over 64 MiB, the code object read',
          got[1].startswith('selected hip-amdgcn-amd-amdhsa--gfx90a (big.hipfb, compressed bundle at 0x0, entry 1')
          and 'rejected hip-amdgcn-amd-amdhsa--gfx906' in got[1], got[1])
    limit = harness.resident_budget_kib(32)
    for args in (['select', 'big.hipfb', '-t', 'gfx90a'], ['verify', 'big.hipfb']):
        rc, peak = harness.peak_resident_kib([OT, 'compat'] + args, cwd=c.dir)
        check('compat %s of an 80 MiB compressed bundle: peak resident %d KiB <= %d KiB' % (args[0], peak, limit),
              rc == 0 and peak <= limit, 'exit %d' % rc)


# detect's NVIDIA side (a stand-in driver reporting GPUs) is tests/real/cuda_detect_test.py.
NO_LIBCUDA = '/nonexistent/offloadtool-test/libcuda.so.1'
NO_NVIDIA = 'no NVIDIA driver (%s: No such file or directory)' % NO_LIBCUDA


def main():
    os.environ.pop('HSA_XNACK', None)  # detect reads it
    os.environ['OFFLOADTOOL_LIBCUDA'] = NO_LIBCUDA  # and asks the CUDA driver: none here, whatever the machine has
    return harness.run_suite('compat', run_cases, needs=[BUNDLER] + [harness.llvm(t) for t in (
        'llc', 'clang', 'ld.lld', 'llvm-ar', 'clang-offload-packager')])


def run_cases(root):
    for part in (run_check, run_canonical, run_select, run_verify, run_detect, run_code_objects,
                 run_offload_binary_features, run_large_ccob, run_llvm_cross_check):
        part(root)


def run_check(root):
    c = Case(root, {})
    expect('check: compatible', c, ['check', 'gfx906', 'gfx906:xnack+'], 0, 'compatible\n')
    expect('check: feature mismatch', c, ['check', HIP + 'gfx90a:xnack+', 'gfx90a:xnack-'], 1,
           'not compatible: the code object needs xnack on, the target runs with xnack off\n')
    expect('check: explain', c, ['check', HIP + 'gfx90a:xnack+', 'gfx90a:xnack-', '--explain'], 1,
           'code object: hip-amdgcn-amd-amdhsa--gfx90a:xnack+ (kind hip, triple amdgcn-amd-amdhsa-, processor gfx90a, '
           'sramecc any, xnack on)\n'
           'target:      gfx90a:xnack- (bare target ID, processor gfx90a, sramecc any, xnack off)\n'
           'rules:       the HIP and OpenMP runtimes\n'
           '  kind              skip  a bare target ID stands for any offload kind\n'
           '  triple            pass  both AMDGPU (amdgcn-amd-amdhsa-)\n'
           '  processor         pass  gfx90a\n'
           '  sramecc           pass  the code object is built for any sramecc setting\n'
           '  xnack             fail  the code object needs xnack on, the target runs with xnack off\n'
           'not compatible\n')
    expect('check: generic target covers the processor', c, ['check', 'gfx11-generic', 'gfx1151'], 0, 'compatible\n')
    expect('check: bundler rules know no generic targets', c,
           ['check', '--bundler', HIP + 'gfx11-generic', HIP + 'gfx1151'], 1,
           # 22 reads the whole gfx11-generic (19 only "generic"), then compares processors
           'not compatible: gfx11-generic / gfx1151\n' if harness.FIVE_PIECES else
           "not compatible: LLVM 19 cannot parse 'generic' as a target ID for amdgcn-amd-amdhsa--gfx11\n")
    expect('check: kinds', c, ['check', HIP + 'gfx906', 'openmp-amdgcn-amd-amdhsa--gfx906'], 1,
           'not compatible: the code object is for the hip runtime, the target asks for openmp '
           '(only with -hip-openmp-compatible)\n')
    expect('check: hip-openmp-compatible', c,
           ['check', '--hip-openmp-compatible', HIP + 'gfx906', 'openmp-amdgcn-amd-amdhsa--gfx906'], 0, 'compatible\n')
    expect('check: unknown processor is an error', c, ['check', 'gfx999', 'gfx906'], 2, '',
           E + "'gfx999': unknown processor 'gfx999' (did you mean 'gfx909'?)\n")
    expect('check: unsupported feature is an error', c, ['check', 'gfx906', 'gfx1030:xnack+'], 2, '',
           E + "'gfx1030:xnack+': gfx1030 does not support the xnack feature (its features: none)\n")
    expect('check: malformed bundle ID', c, ['check', 'cuda2-nvptx64-nvidia-cuda--sm_70', 'sm_70'], 2, '',
           E + "'cuda2-nvptx64-nvidia-cuda--sm_70': unknown offload kind 'cuda2' (host, hip, hipv4, openmp, cuda)\n")
    expect('check: usage error exits 2', c, ['check', 'gfx906'], 2, '',
           E + "target is required (see 'offloadtool compat --help')\n")
    rc, out, err = c.run('--help')
    check('help: documents the exit codes', rc == 0 and 'Exit codes: 0 compatible' in out and err == '', out)
    rc, out, err = c.run('check', '--help')
    check('help: check options', rc == 0 and '--explain' in out and '--json' in out, out)
    rc, j, err = run_json(c, ['check', 'gfx9-generic:xnack+', 'gfx90c:xnack+', '--json'])
    check('check --json', rc == 0 and j is not None and j['schema'] == 'offloadtool-compat/1' and j['compatible']
          and j['generic'] and j['code_object']['processor'] == 'gfx9-generic'
          and j['code_object']['features'] == {'sramecc': 'any', 'xnack': 'on'}
          and [s['rule'] for s in j['steps']] == ['kind', 'triple', 'processor', 'xnack'], j)


def run_canonical(root):
    c = Case(root, {})
    expect('canonical: feature order, aliases, triples', c,
           ['canonical', 'gfx90a:xnack+:sramecc-', 'polaris10', 'hip-amdgcn-amd-amdhsa-gfx906:xnack+',
            'openmp-x86_64-pc-linux-gnu', 'hip-amdgcn-amd-amdhsa-gfx10-3-generic'], 0,
           'gfx90a:sramecc-:xnack+\ngfx803\nhip-amdgcn-amd-amdhsa--gfx906:xnack+\nopenmp-x86_64-pc-linux-gnu-\n'
           'hip-amdgcn-amd-amdhsa--gfx10-3-generic\n')
    expect('canonical: errors say what is wrong, exit 2', c, ['canonical', 'gfx906', 'gfx90a:xnack', 'GFX1100'], 2,
           'gfx906\n',
           E + "'gfx90a:xnack': feature 'xnack' needs a sign: 'xnack+' (on) or 'xnack-' (off); leave it out for any\n" +
           E + "'GFX1100': unknown processor 'GFX1100' (names are lower case: did you mean 'gfx1100'?)\n")
    rc, j, err = run_json(c, ['canonical', '--json', 'fiji', 'gfx906:xnack+:xnack-'])
    check('canonical --json', rc == 2 and j == {
        'schema': 'offloadtool-compat/1', 'command': 'canonical', 'results': [
            {'input': 'fiji', 'canonical': 'gfx803', 'error': None},
            {'input': 'gfx906:xnack+:xnack-', 'canonical': None,
             'error': "'gfx906:xnack+:xnack-': feature 'xnack' is given twice"}]} and err == '', (j, err))


def hip_object(root, name, archs, extra=()):
    """A host object compiled by clang 19 with device code for `archs` in .hip_fatbin."""
    src = os.path.join(root, name + '.hip')
    harness.write(src, 'typedef struct { unsigned x, y, z; } dim3_;\n'
                  'extern "C" int hipLaunchKernel(const void*, dim3_, dim3_, void**, unsigned long, void*);\n'
                  '__attribute__((global)) void k_%s(int *p) { *p = 1; }\n' % name.replace('.', '_'))
    out = os.path.join(root, name)
    cmd = [LLVM + '/clang', '-x', 'hip', '-nogpulib', '-nogpuinc', '-c', src, '-o', out] + list(extra)
    cmd += ['--offload-arch=' + a for a in archs]
    r = run(cmd, text=True)
    check('clang 19 builds ' + name, r.returncode == 0, r.stderr)
    return harness.read(out)


def run_select(root):
    files = {n: golden(n) for n in ('19-hip2.bc', '19-hip2-compressed.bc', '19-mixed.bc', '19-text.i',
                                     '19-packager-3.bin')}
    c = Case(root, files)
    # The entry's size as people read it, exact with --bytes; its offset in hex.
    for flags, size in (([], '25 B'), (['--bytes'], '25 bytes')):
        expect('select %s: binary bundle' % ' '.join(flags), c,
               ['select', '19-hip2.bc', '--target', 'gfx906:xnack-'] + flags, 0,
               'selected hip-amdgcn-amd-amdhsa--gfx906 (19-hip2.bc, bundle at 0x0, entry 1, %s at 0xa3)\n'
               '  rejected hip-amdgcn-amd-amdhsa--gfx900 (19-hip2.bc, bundle at 0x0, entry 0): the code object is for '
               'gfx900, the target is gfx906\n' % size)
    expect('select: compressed bundle', c, ['select', '19-hip2-compressed.bc', '-t', 'gfx900'], 0,
           'selected hip-amdgcn-amd-amdhsa--gfx900 (19-hip2-compressed.bc, compressed bundle at 0x0, entry 0, 25 B '
           'at 0x8a of the decompressed bundle)\n'
           '  rejected hip-amdgcn-amd-amdhsa--gfx906 (19-hip2-compressed.bc, compressed bundle at 0x0, entry 1): the '
           'code object is for gfx906, the target is gfx900\n')
    expect('select: nothing fits, with reasons and a hint', c, ['select', '19-mixed.bc', '--target', 'gfx90a:xnack-'], 1,
           'no entry of 19-mixed.bc fits gfx90a:xnack-\n'
           '  rejected host-x86_64-unknown-linux-gnu- (19-mixed.bc, bundle at 0x0, entry 0): host code, not a device '
           'code object\n'
           '  rejected openmp-nvptx64-nvidia-cuda--sm_70 (19-mixed.bc, bundle at 0x0, entry 1): the code object is '
           'NVPTX code, the target is AMDGPU\n'
           '  rejected hip-amdgcn-amd-amdhsa--gfx90a:xnack+ (19-mixed.bc, bundle at 0x0, entry 2): the code object '
           'needs xnack on, the target runs with xnack off\n'
           'hint: hip-amdgcn-amd-amdhsa--gfx90a:xnack+ is built for gfx90a:xnack+; run with HSA_XNACK=1 if the GPU '
           'allows it, or build gfx90a (any xnack) or gfx90a:xnack-\n')
    expect('select: CUDA binary compatibility', c, ['select', '19-mixed.bc', '--target', 'sm_75'], 0, None)
    expect('select: generic hint', c, ['select', '19-text.i', '--target', 'gfx1031'], 1, None)
    rc, out, err = c.run('select', '19-text.i', '--target', 'gfx1031')
    check('select: generic hint text', out.endswith(
        'hint: build with --offload-arch=gfx1031, or with --offload-arch=gfx10-3-generic (code object v6, LLVM 19+), '
        'which serves gfx1030 gfx1031 gfx1032 gfx1033 gfx1034 gfx1035 gfx1036\n'), out)
    rc, j, err = run_json(c, ['select', '19-packager-3.bin', '--target', 'gfx908', '--json'])
    check('select --json: raw offload binaries', rc == 0 and j['selected'] == 0 and j['rules'] == 'runtime'
          and [e['id'] for e in j['entries']] == ['openmp-amdgcn-amd-amdhsa-gfx908', 'cuda-nvptx64-nvidia-cuda-sm_70',
                                                  'hip-x86_64-unknown-linux-gnu-']
          and [e['verdict'] for e in j['entries']] == ['selected', 'rejected', 'rejected']
          and j['hint'] is None and j['entries'][0]['canonical'] == 'openmp-amdgcn-amd-amdhsa--gfx908', j)
    c.put('plain.o', b'not device code\n')
    rc, out, err = c.run('select', 'plain.o', '--target', 'gfx906')
    check('select: a file without device code', rc == 1 and out.startswith(
        'no entry of plain.o fits gfx906: it holds no device code (no bundle, compressed bundle, offload binary, '
        'NVIDIA fatbin or bundle section)\nhint: build with --offload-arch=gfx906') and err == '', out + err)
    expect('select: missing file', c, ['select', 'nope.bc', '--target', 'gfx906'], 2, '',
           E + "'nope.bc': No such file or directory\n")
    expect('select: bad target', c, ['select', '19-hip2.bc', '--target', 'gfx906:sramecc'], 2, '',
           E + "'gfx906:sramecc': feature 'sramecc' needs a sign: 'sramecc+' (on) or 'sramecc-' (off); "
           'leave it out for any\n')

    # Host objects from clang 19: .hip_fatbin with a bundle, a compressed one,
    # two linked together (two bundles in one section), an archive of them.
    c = Case(root, {})
    # clang 23 goes through the new offload driver: its bundle IDs say hip-, 19's and 22's hipv4-.
    hipk = 'hip' if harness.RELEASE == '23' else 'hipv4'
    hip_object(c.dir, 'k.o', ['gfx906', 'gfx90a:xnack+'])
    hip_object(c.dir, 'kz.o', ['gfx1100', 'gfx11-generic'], ['--offload-compress', '-mcode-object-version=6'])
    expect('select: .hip_fatbin', c, ['select', 'k.o', '--target', 'gfx90a:sramecc+:xnack+'], 0, None)
    rc, j, err = run_json(c, ['select', 'k.o', '--target', 'gfx90a:sramecc+:xnack+', '--json'])
    check('select: .hip_fatbin picks the gfx90a entry', rc == 0 and j['entries'][j['selected']]['id'] ==
          hipk + '-amdgcn-amd-amdhsa--gfx90a:xnack+' and j['entries'][0]['reason'] == 'host code, not a device code object'
          and j['entries'][0]['location'].startswith('k.o, section .hip_fatbin, bundle at 0x'), j)
    rc, j, err = run_json(c, ['select', 'kz.o', '--target', 'gfx1100', '--json'])
    ids = [e['id'] for e in j['entries']] if j else []
    check('select: compressed .hip_fatbin, specific before generic',
          rc == 0 and j['entries'][j['selected']]['id'] == hipk + '-amdgcn-amd-amdhsa--gfx1100'
          and hipk + '-amdgcn-amd-amdhsa--gfx11-generic' in ids, (j, err))
    rc, j, err = run_json(c, ['select', 'kz.o', '--target', 'gfx1103', '--json'])
    check('select: a generic target serves gfx1103',
          rc == 0 and j['entries'][j['selected']]['id'] == hipk + '-amdgcn-amd-amdhsa--gfx11-generic', (j, err))
    r = run([LLVM + '/ld.lld', '-r', 'k.o', 'kz.o', '-o', 'both.o'], cwd=c.dir, text=True)
    check('ld.lld -r links the objects', r.returncode == 0, r.stderr)
    rc, j, err = run_json(c, ['select', 'both.o', '--target', 'gfx1100', '--json'])
    locs = sorted({e['location'].rsplit(', entry', 1)[0] for e in j['entries']}) if j else []
    check('select: two bundles in one .hip_fatbin', rc == 0 and len(locs) == 2
          and locs[0].startswith('both.o, section .hip_fatbin, bundle 0 at 0x')
          and locs[1].startswith('both.o, section .hip_fatbin, compressed bundle 1 at 0x'), (locs, err))
    r = run([LLVM + '/llvm-ar', 'rc', 'lib.a', 'k.o', 'kz.o'], cwd=c.dir, text=True)
    check('llvm-ar builds the archive', r.returncode == 0, r.stderr)
    rc, j, err = run_json(c, ['select', 'lib.a', '--target', 'gfx906', '--json'])
    check('select: archive members', rc == 0 and j['entries'][j['selected']]['location'].startswith(
        'lib.a(k.o), section .hip_fatbin, bundle at 0x'), j)
    # __CLANG_OFFLOAD_BUNDLE__ sections (clang-offload-bundler -type=o).
    c.put('dev', b'device code\n')
    r = run([BUNDLER, '-type=o', '-targets=host-x86_64-unknown-linux-gnu,' + HIP + 'gfx1030',
             '-input=k.o', '-input=dev', '-output=obj.o'], cwd=c.dir, text=True)
    check('LLVM 19 bundles an object', r.returncode == 0, r.stderr)
    expect('select: bundle sections', c, ['select', 'obj.o', '--target', 'gfx1030'], 0, None)
    rc, j, err = run_json(c, ['select', 'obj.o', '--target', 'gfx1030', '--json'])
    check('select: bundle section entry', rc == 0 and any(
        e['verdict'] == 'selected' and e['location'] == 'obj.o, __CLANG_OFFLOAD_BUNDLE__ sections, entry 1'
        and e['id'] == HIP + 'gfx1030' for e in j['entries']), j)

    # Bad input: errors name the file, member and offset.
    bad = binary_bundle([(HIP + 'gfx906', b'x')])[:-1]
    c = Case(root, {'bad.bc': bad})
    expect('select: truncated bundle', c, ['select', 'bad.bc', '--target', 'gfx906'], 2, '',
           E + "bad.bc: bundle entry 0 ('hip-amdgcn-amd-amdhsa--gfx906') payload at 0x55 of 0x1 bytes extends past "
           'the end of the file (0x55 bytes), at offset 0x20\n')
    run([LLVM + '/llvm-ar', 'rc', 'bad.a', 'bad.bc'], cwd=c.dir, check=True)
    expect('select: truncated bundle in an archive', c, ['select', 'bad.a', '--target', 'gfx906'], 2, '',
           E + "bad.a(bad.bc): bundle entry 0 ('hip-amdgcn-amd-amdhsa--gfx906') payload at 0x55 of 0x1 bytes extends "
           'past the end of the file (0x55 bytes), at offset 0x20\n')
    ccob = bytearray(golden('19-hip2-compressed.bc'))
    ccob[-8] ^= 0xff
    c = Case(root, {'z.bc': bytes(ccob), 'nested.a': b'!<arch>\n'})
    rc, out, err = c.run('select', 'z.bc', '--target', 'gfx906')
    check('select: corrupted CCOB', rc == 2 and out == '' and err.startswith(
        E + 'z.bc: cannot decompress the compressed bundle: ') and err.endswith(', at offset 0x0\n'), err)
    # Archives inside archive members are searched now (contents/walker): an
    # empty one holds no device code, one holding a bundle is found.
    run([LLVM + '/llvm-ar', 'rc', 'outer.a', 'nested.a'], cwd=c.dir, check=True)
    rc, out, err = c.run('select', 'outer.a', '--target', 'gfx906')
    check('select: nested empty archive', rc == 1 and err == '' and out.startswith(
        'no entry of outer.a fits gfx906: it holds no device code'), (rc, out, err))
    c = Case(root, {'hip2.bc': golden('19-hip2.bc')})
    run([LLVM + '/llvm-ar', 'rc', 'inner.a', 'hip2.bc'], cwd=c.dir, check=True)
    run([LLVM + '/llvm-ar', 'rc', 'outer.a', 'inner.a'], cwd=c.dir, check=True)
    rc, out, err = c.run('select', 'outer.a', '--target', 'gfx900')
    check('select: a bundle in an archive inside an archive', rc == 0 and err == '' and out.startswith(
        'selected hip-amdgcn-amd-amdhsa--gfx900 (outer.a(inner.a)(hip2.bc), bundle at 0x0, entry 0, '), (rc, out, err))
    # "<size> bytes at 0x..": the offset in outer.a itself, where the bundle's own header puts the payload
    rc, out, err = c.run('select', 'outer.a', '--target', 'gfx900', '--bytes')
    m = re.search(r'entry 0, ([0-9]+) bytes at 0x([0-9a-f]+)\)', out)
    hip2 = golden('19-hip2.bc')
    first_off, first_size = struct.unpack_from('<QQ', hip2, 32)  # entry 0's offset and size
    with open(os.path.join(c.dir, 'outer.a'), 'rb') as f:
        outer = f.read()
    check('select: the offset of an entry in a nested archive is its offset in the outer file', m is not None and
          outer[int(m.group(2), 16):int(m.group(2), 16) + int(m.group(1))] ==
          hip2[first_off:first_off + first_size] and int(m.group(1)) == first_size, out)


def run_verify(root):
    files = {
        'ok.bc': golden('19-hip2.bc'),
        'mixed.bc': binary_bundle([(HIP + 'gfx906', b'a'), (HIP + 'gfx906:xnack+', b'b')]),
        'dup.bc': binary_bundle([(HIP + 'gfx906:xnack+:sramecc+', b'a'), (HIP + 'gfx906:sramecc+:xnack+', b'b')]),
        'same.bc': binary_bundle([(HIP + 'gfx906', b'a'), (HIP + 'gfx906', b'b')]),
    }
    c = Case(root, files)
    expect('verify: clean', c, ['verify', 'ok.bc'], 0, 'ok: 2 entries in 1 container follow the composition rules\n')
    expect('verify: any mixed with on/off', c, ['verify', 'mixed.bc'], 1,
           "mixed.bc, bundle at 0x0: error: 'hip-amdgcn-amd-amdhsa--gfx906' and 'hip-amdgcn-amd-amdhsa--gfx906:xnack+' "
           'mix xnack any with xnack on/off for gfx906; a runtime cannot tell which to load (LLVM\'s bundler refuses '
           'such targets as conflicting) [mixed-features]\n1 violation, 0 warnings\n')
    expect('verify: the same target spelt twice', c, ['verify', 'dup.bc'], 1,
           "dup.bc, bundle at 0x0: warning: 'hip-amdgcn-amd-amdhsa--gfx906:xnack+:sramecc+' is not in canonical form; "
           "clang writes 'hip-amdgcn-amd-amdhsa--gfx906:sramecc+:xnack+' [non-canonical]\n"
           "dup.bc, bundle at 0x0: error: 'hip-amdgcn-amd-amdhsa--gfx906:xnack+:sramecc+' and "
           "'hip-amdgcn-amd-amdhsa--gfx906:sramecc+:xnack+' name the same target "
           '(hip-amdgcn-amd-amdhsa--gfx906:sramecc+:xnack+) [duplicate-id]\n1 violation, 1 warning\n')
    expect('verify: one ID stored twice', c, ['verify', 'same.bc'], 1,
           "same.bc, bundle at 0x0: error: 'hip-amdgcn-amd-amdhsa--gfx906' is stored twice [duplicate-id]\n"
           '1 violation, 0 warnings\n')
    rc, j, err = run_json(c, ['verify', '--json', 'ok.bc', 'mixed.bc'])
    check('verify --json', rc == 1 and j['violations'] == 1 and j['warnings'] == 0 and len(j['files']) == 2
          and j['files'][0]['containers'] == [{'name': 'ok.bc, bundle at 0x0',
                                               'ids': [HIP + 'gfx900', HIP + 'gfx906']}]
          and j['files'][1]['findings'][0]['rule'] == 'mixed-features', j)
    # LLVM 19 itself refuses to write the mixed bundle: the same rule.
    c.put('t', b't')
    r = run([BUNDLER, '-type=bc', '-targets=' + HIP + 'gfx906,' + HIP + 'gfx906:xnack+', '-input=t',
             '-input=t', '-output=x.bc'], cwd=c.dir, text=True)
    check('verify: LLVM 19 refuses the same composition', r.returncode != 0 and 'conflicting targets' in r.stderr,
          r.stderr)


def run_detect(root):
    c = Case(root, {})
    expect('detect: gfx906 and gfx90c', c, ['detect', '--sysfs', os.path.join(SYSFS, 'gfx906-gfx90c'), '--xnack', 'off'],
           0, 'node 1: gfx906:sramecc-:xnack- (gfx_target_version 90006, device 0x66af)\n'
              'node 2: gfx90c:xnack- (gfx_target_version 90012, device 0x1636)\n')
    expect('detect: xnack unknown', c, ['detect', '--sysfs', os.path.join(SYSFS, 'gfx90a-mi210')], 0,
           'node 1: gfx90a:sramecc+ (gfx_target_version 90010, device 0x740f)\n'
           '  note: xnack is chosen per process and not visible in sysfs: set HSA_XNACK or pass --xnack to fix it\n')
    r = run([OT, 'compat', 'detect', '--sysfs', os.path.join(SYSFS, 'gfx90a-mi210')], env={'HSA_XNACK': '1'},
            text=True)
    check('detect: HSA_XNACK=1', r.returncode == 0 and r.stdout ==
          'node 1: gfx90a:sramecc+:xnack+ (gfx_target_version 90010, device 0x740f)\n', r.stdout + r.stderr)
    rc, j, err = run_json(c, ['detect', '--sysfs', os.path.join(SYSFS, 'gfx1100-navi31'), '--json'])
    check('detect --json', rc == 0 and j['schema'] == 'offloadtool-compat/1' and j['cpu_nodes'] == [0] and j['gpus'] == [
        {'node': 1, 'gfx_target_version': 110000, 'processor': 'gfx1100', 'target_id': 'gfx1100', 'apu': False,
         'vendor_id': 4098, 'device_id': 0x744c, 'sramecc': None, 'xnack': None, 'note': None}], j)
    expect('detect: APU', c, ['detect', '--sysfs', os.path.join(SYSFS, 'kaveri-apu')], 0,
           'node 0: gfx700 (gfx_target_version 70000, APU, device 0x130f)\n')
    expect('detect: CPU only', c, ['detect', '--sysfs', os.path.join(SYSFS, 'cpu-only')], 1, '',
           E + 'no GPU found: no AMD GPU in ' + os.path.join(SYSFS, 'cpu-only', 'class/kfd/kfd/topology/nodes') + '; '
           + NO_NVIDIA + '\n')
    expect('detect: no driver', c, ['detect', '--sysfs', c.path('none')], 1, '',
           E + 'no GPU found: no amdkfd topology at ' + c.path('none') + '/class/kfd/kfd/topology/nodes (is the amdgpu '
           'driver loaded?); ' + NO_NVIDIA + '\n')
    expect('detect: malformed properties', c, ['detect', '--sysfs', os.path.join(SYSFS, 'malformed')], 2, '',
           E + os.path.join(SYSFS, 'malformed') + "/class/kfd/kfd/topology/nodes/1/properties: line 2: '4x' is not a "
           'decimal number (property simd_count)\n')
    expect('detect: bad --xnack', c, ['detect', '--sysfs', os.path.join(SYSFS, 'cpu-only'), '--xnack', 'maybe'], 2, '',
           E + "--xnack: 'maybe' is not on or off (1 or 0)\n")


LLVM19_PROCESSORS = ('gfx600 gfx601 gfx602 gfx700 gfx701 gfx702 gfx703 gfx704 gfx705 gfx801 gfx802 gfx803 gfx805 '
                     'gfx810 gfx900 gfx902 gfx904 gfx906 gfx908 gfx909 gfx90a gfx90c gfx940 gfx941 gfx942 gfx1010 '
                     'gfx1011 gfx1012 gfx1013 gfx1030 gfx1031 gfx1032 gfx1033 gfx1034 gfx1035 gfx1036 gfx1100 gfx1101 '
                     'gfx1102 gfx1103 gfx1150 gfx1151 gfx1152 gfx1200 gfx1201 gfx9-generic gfx10-1-generic '
                     'gfx10-3-generic gfx11-generic gfx12-generic').split()


def llc_processors():
    """The gfx processors the suite's llc lists (-mcpu=help's CPUs)."""
    r = run([LLVM + '/llc', '-mtriple=amdgcn-amd-amdhsa', '-mcpu=help'], text=True, cwd='/tmp')
    cpus = (r.stdout + r.stderr).split('Available CPUs for this target:', 1)[-1].split('Available features', 1)[0]
    return [m.group(1) for m in re.finditer(r'^\s+(gfx[0-9a-z-]+)\s+-', cpus, re.M)]


def run_code_objects(root):
    """AMDGPU code objects written by the suite's llc (19, 22 or 23) for every
    processor it knows (19: those of LLVM19_PROCESSORS; 22 and 23: its
    -mcpu=help, which no longer has gfx940 and gfx941 and has the processors
    added since): the ELF header names the target ID, and a feature is in
    offloadtool's target IDs exactly when llc takes it without its warning
    that the processor does not support it."""
    c = Case(root, {'e.ll': b'define void @f() { ret void }\n'})
    processors = LLVM19_PROCESSORS if not harness.FIVE_PIECES else llc_processors()
    check('llc lists the processors (gfx906 among them)', 'gfx906' in processors, processors)
    for p in processors:
        for mattr in ([''] if p in ('gfx700', 'gfx1100') else ['', '+xnack', '-xnack,+sramecc']):
            f = '%s%s.o' % (p, mattr.replace(',', '').replace('+', 'p').replace('-', 'm'))
            version = '6' if p.endswith('generic') else '5'
            r = run([LLVM + '/llc', '-mtriple=amdgcn-amd-amdhsa', '-mcpu=' + p, '-mattr=' + mattr,
                     '--amdhsa-code-object-version=' + version, '-filetype=obj', 'e.ll', '-o', f],
                    cwd=c.dir, text=True)
            if r.returncode != 0:
                check('llc 19 writes ' + f, False, r.stderr)
                continue
            for feature, sign in (('xnack', '+xnack'), ('xnack', '-xnack'), ('sramecc', '+sramecc')):
                if sign in mattr:
                    said = "%s '%s' was requested for a processor that does not support it" % (
                        feature, 'On' if sign[0] == '+' else 'Off')
                    ours = run([OT, 'compat', 'canonical', '%s:%s%s' % (p, feature, sign[0])]).returncode == 0
                    # LLVM 22 takes xnack on gfx1250 and gfx1251, 23 does not: offloadtool reads both
                    # releases' code objects, so it takes 22's (checked in the 22 run).
                    llc_takes = said not in r.stderr or (harness.RELEASE == '23' and feature == 'xnack'
                                                         and p in ('gfx1250', 'gfx1251'))
                    check('%s:%s%s: a target ID for offloadtool exactly when llc supports it' % (p, feature, sign[0]),
                          ours == llc_takes, (ours, r.stderr))
            info = run([OT, 'compat', 'check', '--json', f, p], cwd=c.dir, text=True)
            try:
                got = json.loads(info.stdout)
            except ValueError:
                check('check reads the code object ' + f, False, info.stderr)
                continue
            feats = got['code_object']['features']
            want = {'sramecc': 'any', 'xnack': 'any'}
            if 'xnack' in mattr:
                want['xnack'] = 'on' if '+xnack' in mattr else 'off'
            if '+sramecc' in mattr:
                want['sramecc'] = 'on'
            # What llc did not take it leaves as it was ("any"), saying so.
            if "xnack 'O" in r.stderr:
                want['xnack'] = 'any'
            if "sramecc 'O" in r.stderr:
                want['sramecc'] = 'any'
            check('code object %s: processor and features from the ELF header' % f,
                  got['code_object']['processor'] == p and feats == want
                  and got['source'].startswith(f + ': AMDGPU code object v' + version), (got, info.stderr))
    # A bundle whose ID disagrees with its code object's header.
    r = run([LLVM + '/llc', '-mtriple=amdgcn-amd-amdhsa', '-mcpu=gfx90a', '-mattr=+xnack', '-filetype=obj',
             'e.ll', '-o', 'x.co'], cwd=c.dir, text=True)
    r = run([BUNDLER, '-type=bc', '-targets=' + HIP + 'gfx90a:xnack-', '-input=x.co', '-output=lie.bc'],
            cwd=c.dir, text=True)
    check('LLVM 19 bundles the code object under another ID', r.returncode == 0, r.stderr)
    expect('verify: ID and code object disagree', c, ['verify', 'lie.bc'], 1,
           "lie.bc, bundle at 0x0: error: 'hip-amdgcn-amd-amdhsa--gfx90a:xnack-' names gfx90a:xnack-, but its code "
           'object is built for gfx90a:xnack+ [code-object-mismatch]\n1 violation, 0 warnings\n')
    expect('select: the loader would refuse it', c, ['select', 'lie.bc', '--target', 'gfx90a:xnack-'], 1,
           'no entry of lie.bc fits gfx90a:xnack-\n'
           '  rejected hip-amdgcn-amd-amdhsa--gfx90a:xnack- (lie.bc, bundle at 0x0, entry 0): the ID fits, but its code '
           'object is built for gfx90a:xnack+: the code object needs xnack on, the target runs with xnack off\n'
           'hint: build with --offload-arch=gfx90a:xnack-\n')
    expect('check: not a code object', c, ['check', 'e.ll', 'gfx906'], 2, '',
           E + 'e.ll: neither a target ID, a bundle entry ID nor an AMDGPU code object (64-bit ELF, EM_AMDGPU)\n')


def run_offload_binary_features(root):
    """An OffloadBinary entry whose arch sets a feature (LLVM 19's packager,
    arch=gfx90a:xnack-): its ID as stored, "openmp-amdgcn-amd-amdhsa-gfx90a:xnack-",
    read as a bundle ID would take "gfx90a:xnack" for the triple's 4th field and
    name no processor; select and verify read it with the triple in 4 fields."""
    c = Case(root, {'e.ll': b'define void @f() { ret void }\n'})
    for co, mattr, arch, out in (('xm.co', '-xnack', 'gfx90a:xnack-', 'dev.bin'),
                                 ('sx.co', '+sramecc,-xnack', 'gfx90a:xnack-:sramecc+', 'order.bin')):
        r = run([LLVM + '/llc', '-mtriple=amdgcn-amd-amdhsa', '-mcpu=gfx90a', '-mattr=' + mattr, '-filetype=obj',
                 'e.ll', '-o', co], cwd=c.dir, text=True)
        check('llc 19 writes ' + co, r.returncode == 0, r.stderr)
        r = run([harness.LLVM_PACKAGER, '-o', out,
                 '--image=file=%s,triple=amdgcn-amd-amdhsa,arch=%s,kind=openmp' % (co, arch)], cwd=c.dir, text=True)
        check('LLVM 19 packages %s as arch=%s' % (co, arch), r.returncode == 0, r.stderr)
    ob = 'openmp-amdgcn-amd-amdhsa-gfx90a:xnack-'
    rc, out, err = c.run('select', 'dev.bin', '--target', 'gfx90a:xnack-')
    check('select: an offload binary entry whose arch sets xnack', rc == 0 and err == '' and re.fullmatch(
        r'selected %s \(dev\.bin, offload binary at 0x0, entry 0, %s at 0x[0-9a-f]+\)\n' % (
            re.escape(ob), re.escape(harness.human_size(len(c.read('xm.co'))))), out), 'rc=%d\n%s%s' % (rc, out, err))
    expect('select: an offload binary entry for xnack off, a target with xnack on', c,
           ['select', 'dev.bin', '--target', 'gfx90a:xnack+'], 1,
           'no entry of dev.bin fits gfx90a:xnack+\n'
           '  rejected %s (dev.bin, offload binary at 0x0, entry 0): the code object needs xnack off, the target runs '
           'with xnack on\n'
           'hint: %s is built for gfx90a:xnack-; run with HSA_XNACK=0 if the GPU allows it, or build gfx90a (any '
           'xnack) or gfx90a:xnack+\n' % (ob, ob))
    rc, j, err = run_json(c, ['select', 'dev.bin', '--target', 'gfx90a:xnack-', '--json'])
    check('select --json: the stored ID, the canonical target with its feature', rc == 0 and j['selected'] == 0
          and j['entries'][0]['id'] == ob and j['entries'][0]['canonical'] == 'openmp-amdgcn-amd-amdhsa--gfx90a:xnack-',
          (j, err))
    # No code-object mismatch (the header says gfx90a:xnack-), and an arch's
    # feature order is the packager's input, not an ID clang wrote: no warning.
    expect('verify: offload binaries whose arch sets features', c, ['verify', 'dev.bin', 'order.bin'], 0,
           'ok: 2 entries in 2 containers follow the composition rules\n')


# (code object, requested target, whether the runtime rules agree with LLVM 19's bundler)
PAIRS = [
    (HIP + 'gfx906', HIP + 'gfx906', True),
    (HIP + 'gfx906', HIP + 'gfx906:xnack+', True),
    (HIP + 'gfx906', HIP + 'gfx906:xnack-', True),
    (HIP + 'gfx906:xnack+', HIP + 'gfx906', True),
    (HIP + 'gfx906:xnack+', HIP + 'gfx906:sramecc-:xnack+', True),
    (HIP + 'gfx906:xnack+', HIP + 'gfx906:xnack-', True),
    (HIP + 'gfx906:sramecc+:xnack+', HIP + 'gfx906:xnack+', True),
    (HIP + 'gfx906:sramecc-', HIP + 'gfx906:sramecc+', True),
    ('hipv4-amdgcn-amd-amdhsa--gfx906', HIP + 'gfx906', True),
    (HIP + 'gfx906', HIP + 'gfx908', True),
    (HIP + 'gfx90a:xnack-', HIP + 'gfx90a:xnack-', True),
    (HIP + 'gfx1100', HIP + 'gfx1100', True),
    (HIP + 'gfx1030', HIP + 'gfx1031', True),
    (HIP + 'gfx9-generic', HIP + 'gfx9-generic', True),
    (HIP + 'gfx9-generic', HIP + 'gfx906', False),    # the runtimes load generic code objects
    (HIP + 'gfx11-generic', HIP + 'gfx1103', False),
    (HIP + 'gfx906', 'openmp-amdgcn-amd-amdhsa--gfx906', True),
    # (22 takes a 3-field gfx906 for the environment and loses it: its bundler matches nothing)
    ('hip-amdgcn-amd-amdhsa-gfx906', HIP + 'gfx906', harness.RELEASE == '19'),
    ('openmp-nvptx64-nvidia-cuda--sm_70', 'openmp-nvptx64-nvidia-cuda--sm_70', True),
    ('openmp-nvptx64-nvidia-cuda--sm_70', 'openmp-nvptx64-nvidia-cuda--sm_75', False),  # CUDA binary compatibility
    ('openmp-nvptx64-nvidia-cuda--sm_80', 'openmp-nvptx64-nvidia-cuda--sm_70', True),
]


def llvm_compatible(d, code, target):
    """Bundle one entry with LLVM 19, unbundle it for `target`: found or not."""
    host = code.startswith('openmp')
    targets = ('host-x86_64-unknown-linux-gnu,' if host else '') + code
    inputs = (['-input=h.i'] if host else []) + ['-input=t']
    r = run([BUNDLER, '-type=i', '-targets=' + targets] + inputs + ['-output=b.i'], cwd=d, text=True)
    if r.returncode != 0:
        return None, r.stderr
    r = run([BUNDLER, '-type=i', '-unbundle', '-targets=' + target, '-input=b.i', '-output=o.i'], cwd=d, text=True)
    if r.returncode == 0:
        return True, ''
    if "Can't find bundles for" in r.stderr:
        return False, ''
    return None, r.stderr


def run_llvm_cross_check(root):
    c = Case(root, {'t': b'int device;\n', 'h.i': b'int host;\n'})
    for code, target, runtime_agrees in PAIRS:
        want, err = llvm_compatible(c.dir, code, target)
        check('LLVM 19 decides %s for %s' % (code, target), want is not None, err)
        if want is None:
            continue
        rc, out, e = c.run('check', '--bundler', code, target)
        check('check --bundler agrees with LLVM 19: %s for %s' % (code, target), rc == (0 if want else 1),
              'LLVM %s, compat rc=%d %s%s' % (want, rc, out, e))
        rc, out, e = c.run('check', code, target)
        if runtime_agrees:
            check('check agrees with LLVM 19: %s for %s' % (code, target), rc == (0 if want else 1),
                  'LLVM %s, compat rc=%d %s%s' % (want, rc, out, e))
        else:
            check('check (runtime rules) differs from LLVM 19 as documented: %s for %s' % (code, target),
                  rc == 0 and not want, 'LLVM %s, compat rc=%d %s%s' % (want, rc, out, e))


if __name__ == '__main__':
    sys.exit(main())
