#!/usr/bin/env python3
"""`offloadtool prune`: one case per behaviour, the pruned bytes compared with
what LLVM 19 writes for the kept entries alone: clang-offload-bundler for
binary and text bundles (and its -compress for CCOBs, which `offloadtool
compress` also writes), clang-offload-packager for offload binaries. LLVM 19
unbundles the pruned CCOBs; `offloadtool list` reads the pruned binaries. Bad
inputs: one-line errors, exit 1, no file written.

Environment: OFFLOADTOOL = the offloadtool binary.
Needs LLVM 19's clang-offload-bundler and clang-offload-packager (fails without them).
Prints "N passed, M failed"; exits 1 on failure.
"""

import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import LLVM_BUNDLER, LLVM_PACKAGER, OT, check, expect, read, run  # noqa: E402

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
    out = ''.join('%s %s (%d bytes)\n' % ('keep' if g in (None, 'gfx906') else 'drop', HOST + '-' if g is None else HIP + g,
                                          0 if g is None else len(IMAGES[g])) for g in [None] + GPUS)
    out += 'binary bundle: 3 of 5 entries dropped, %d -> %d bytes (%d saved)\n' % (len(b), after, len(b) - after)
    expect('dry run: the report, nothing written', d, ['--keep', 'gfx906', 'a.hipfb', '--dry-run'], 0, out, '',
           files=['a.hipfb', 'k.hipfb'])
    rc, got, err = d.run('--keep', 'gfx906', 'a.hipfb', '--dry-run', '--json')
    j = json.loads(got) if rc == 0 else {}
    check('json: the report', rc == 0 and j.get('schema') == 'offloadtool.prune' and j['size_before'] == len(b) and
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
           E + '--keep-detected: no AMD GPU in %s\n' % os.path.join(SYSFS, 'cpu-only', 'class', 'kfd', 'kfd',
                                                                   'topology', 'nodes'))


def cases(root):
    for t in (test_binary, test_text, test_ccob, test_offload_binary, test_report, test_bad_input, test_detected):
        t(root)


def main():
    return harness.run_suite('prune-test', cases, needs=[LLVM_BUNDLER, LLVM_PACKAGER])


if __name__ == '__main__':
    sys.exit(main())
