#!/usr/bin/env python3
"""Every target form of `offloadtool unbundle INPUT --extract-dir DIR --target T`
(docs/targets.md), and what unbundle says of an input without device code.

AMD: a bundle made by the release's clang-offload-bundler from small payloads
(host, hipv4 gfx90a:xnack+, gfx90a:xnack-, gfx1100, gfx9-generic; LLVM refuses
gfx90a beside gfx90a:xnack+ as conflicting, so a second bundle holds an
openmp gfx90a). Each target form selects the entries the rule of --help names:
a bundle entry ID what LLVM's bundler unbundles for it, a bare target ID
exactly the entries of that target (a feature left out: any setting), a
generic target only its own entries, a comma list the union. Every written file
must hold what LLVM's bundler -unbundle gives for the entry's stored ID, under
the device-archive name of extract_dir_test.py.

NVIDIA: tests/data/nvidia/arch-specific.fatbin (cubins sm_80, sm_90, sm_90a,
sm_100f; PTX compute_80, compute_90a), whose entries are the files under
tests/data/nvidia/inputs (expected.txt): sm_XX selects the cubins of exactly
that target, compute_XX the PTX, named as cuobjdump -xelf/-xptx names them.

Errors: a bad target is the parser's error, as `compat check` gives it; an
input without device code is `list`'s error, with or without a target, and
leaves nothing behind."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import LLVM_BUNDLER, OT, Case, check  # noqa: E402
from extract_dir_test import device_name, extract  # noqa: E402

E = 'offloadtool unbundle: error: '
HOST = 'host-x86_64-unknown-linux-gnu'
X_ON = 'hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+'
X_OFF = 'hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-'
G1100 = 'hipv4-amdgcn-amd-amdhsa--gfx1100'
GENERIC = 'hipv4-amdgcn-amd-amdhsa--gfx9-generic'
OMP = 'openmp-amdgcn-amd-amdhsa--gfx90a'
NVIDIA = os.path.join(harness.DATA, 'nvidia')
sys.path.insert(0, NVIDIA)
from describe import ptx_as_stored  # noqa: E402


def llvm_unbundle(c, name, ident):
    """The bytes LLVM's bundler unbundles for `ident` from `name`."""
    harness.run([LLVM_BUNDLER, '-type=bc', '-unbundle', '-input=' + name, '-targets=' + ident, '-output=ref.bin'],
                cwd=c.dir, check=True)
    data = c.read('ref.bin')
    os.unlink(c.path('ref.bin'))
    return data


def stored_ids(c, name):
    """The IDs LLVM's bundler lists for `name`, in its order."""
    r = harness.run([LLVM_BUNDLER, '-type=bc', '-list', '-input=' + name], cwd=c.dir, text=True, check=True)
    return r.stdout.split()


def amd_cases(root):
    payloads = {'h': b'host', 'on': b'gfx90a xnack+ code', 'off': b'gfx90a xnack- code', 'g1100': b'gfx1100 code',
                'gen': b'gfx9-generic code', 'omp': b'openmp gfx90a code'}
    a = harness.llvm_bundle(['-type=bc', '-targets=' + ','.join([HOST, X_ON, X_OFF, G1100, GENERIC]),
                             '-input=h', '-input=on', '-input=off', '-input=g1100', '-input=gen'], payloads, root)
    b = harness.llvm_bundle(['-type=bc', '-targets=%s,%s' % (HOST, OMP), '-input=h', '-input=omp'], payloads, root)
    c = Case(root, 'unbundle', {'a.bc': a, 'b.bc': b})
    ids = {n: stored_ids(c, n) for n in ('a.bc', 'b.bc')}
    ref = {(n, i): llvm_unbundle(c, n, i) for n in ids for i in ids[n] if not i.startswith('host-')}
    stored = {i: n for n in ids for i in ids[n]}

    def selects(name, target, want):
        """`--target target` on `name` writes the entries `want` (stored IDs, file order), LLVM's bytes."""
        out = 'x%d.d' % selects.n
        selects.n += 1
        rc, rows, err = extract(c, name, out, '--target', target)
        check('%s --target %s: exits 0, silently' % (name, target), rc == 0 and err == '', (rc, err))
        check('%s --target %s: selects %s' % (name, target, want), sorted(r[2] for r in rows) == sorted(want), rows)
        got = sorted(os.listdir(c.path(out))) if os.path.isdir(c.path(out)) else []
        check('%s --target %s: DIR holds those files' % (name, target),
              got == sorted(device_name(name, i) for i in want), got)
        for i in want:
            f = os.path.join(out, device_name(name, i))
            check('%s --target %s: %s holds what LLVM unbundles for %s' % (name, target, f, i),
                  os.path.exists(c.path(f)) and c.read(f) == ref[(stored[i], i)])
    selects.n = 0

    std = lambda i: [s for s in ids['a.bc'] if s == i]  # noqa: E731 -- the stored spelling
    # A bundle entry ID: LLVM's compatibility rule, what LLVM's bundler unbundles for it.
    selects('a.bc', 'hip-amdgcn-amd-amdhsa--gfx90a:xnack-', std(X_OFF))
    check('bundle ID: LLVM unbundles the same entry',
          llvm_unbundle(c, 'a.bc', 'hip-amdgcn-amd-amdhsa--gfx90a:xnack-') == ref[('a.bc', X_OFF)])
    # Bare AMD target IDs: exactly that target; a feature left out is any setting.
    selects('a.bc', 'gfx90a', std(X_ON) + std(X_OFF))
    selects('a.bc', 'gfx90a:xnack-', std(X_OFF))
    selects('a.bc', 'gfx90a:xnack+', std(X_ON))
    selects('a.bc', 'gfx1100', std(G1100))
    selects('b.bc', 'gfx90a', [OMP])  # any offload kind
    # A generic target: its own entries only (not gfx90a's, which it does not name).
    selects('a.bc', 'gfx9-generic', std(GENERIC))
    # Lists: comma-separated, repeated, forms mixed.
    selects('a.bc', 'gfx1100,gfx90a:xnack+', std(X_ON) + std(G1100))
    selects('a.bc', 'gfx9-generic,' + X_OFF, std(X_OFF) + std(GENERIC))

    # A target finding nothing: exit 1, nothing written; --allow-missing lets it pass.
    rc, out, err = c.run('a.bc', '--extract-dir', 'none.d', '--target', 'gfx1100,gfx942')
    check('a bare target finding nothing: exit 1, its error, no folder', rc == 1 and out == '' and
          err == E + "no code object of the target 'gfx942' found in a.bc\n" and
          not os.path.exists(c.path('none.d')), (rc, out, err))
    rc, rows, err = extract(c, 'a.bc', 'miss.d', '--target', 'gfx942,gfx1100', '--allow-missing')
    check('--allow-missing: the others are written', rc == 0 and [r[2] for r in rows] == std(G1100), (rc, rows, err))

    # A bad target: the parser's error, word for word what compat check says of it.
    for bad in ('gfx9000', 'gfx90a:xnack', 'sm_8', 'GFX1100', 'gfx90a,,gfx1100'):
        rc, out, err = c.run('a.bc', '--extract-dir', 'bad.d', '--target', bad)
        item = [t for t in bad.split(',') if t != 'gfx90a' and t != 'gfx1100'] or ['']
        r = harness.run([OT, 'compat', 'check', item[0], 'gfx90a'], cwd=c.dir, text=True)
        want = r.stderr.replace('offloadtool compat: error: ', E, 1)
        check("--target %s: compat's error for %r" % (bad, item[0]), rc == 1 and out == '' and err == want and
              not os.path.exists(c.path('bad.d')), (rc, err, r.stderr))


def nvidia_cases(root):
    fatbin = harness.read(os.path.join(NVIDIA, 'arch-specific.fatbin'))
    inputs = os.path.join(NVIDIA, 'inputs')
    # PTX as fatbinary stores it (README: comments and blanks dropped), without its NUL, as cuobjdump writes it.
    known = {n: harness.read(os.path.join(inputs, n)) for n in os.listdir(inputs)}
    known.update({n: ptx_as_stored(d)[:-1] for n, d in known.items() if n.endswith('.ptx')})
    c = Case(root, 'unbundle', {'arch-specific.fatbin': fatbin})
    # cuobjdump's names: cubins and PTX numbered apart in file order (sm_80, sm_90, sm_90a, sm_100f;
    # compute_80, compute_90a); a family cubin named plainly, PTX by "sm_".
    cubin = {'sm_80': ('arch-specific.1.sm_80.cubin', 'k.sm_80.cubin'),
             'sm_90': ('arch-specific.2.sm_90.cubin', 'k.sm_90.cubin'),
             'sm_90a': ('arch-specific.3.sm_90a.cubin', 'k.sm_90a.cubin'),
             'sm_100f': ('arch-specific.4.sm_100.cubin', 'k.sm_100f.cubin'),
             'compute_80': ('arch-specific.1.sm_80.ptx', 'k.compute_80.ptx'),
             'compute_90a': ('arch-specific.2.sm_90a.ptx', 'k.compute_90a.ptx')}
    for n, (target, want) in enumerate((('sm_80', ['sm_80']), ('sm_90', ['sm_90']), ('sm_90a', ['sm_90a']),
                                        ('sm_100f', ['sm_100f']), ('compute_80', ['compute_80']),
                                        ('compute_90a', ['compute_90a']),
                                        ('sm_90a,compute_80', ['compute_80', 'sm_90a']),
                                        ('cuda-nvptx64-nvidia-cuda--sm_80', ['sm_80']))):
        out = 'n%d.d' % n
        rc, rows, err = extract(c, 'arch-specific.fatbin', out, '--target', target)
        check('fatbin --target %s: exits 0, silently' % target, rc == 0 and err == '', (rc, err))
        check('fatbin --target %s: selects %s' % (target, want), [r[2] for r in rows] == want, rows)
        got = sorted(os.listdir(c.path(out))) if os.path.isdir(c.path(out)) else []
        check('fatbin --target %s: cuobjdump\'s names' % target, got == sorted(cubin[w][0] for w in want), got)
        for w in want:
            f = os.path.join(out, cubin[w][0])
            check('fatbin --target %s: %s is (as stored) inputs/%s' % (target, cubin[w][0], cubin[w][1]),
                  os.path.exists(c.path(f)) and c.read(f) == known[cubin[w][1]])
    rc, out, err = c.run('arch-specific.fatbin', '--extract-dir', 'g.d', '--target', 'sm_86')
    check('sm_86: no entry of exactly that target (the sm_80 cubin it runs is not selected)', rc == 1 and
          err == E + "no code object of the target 'sm_86' found in arch-specific.fatbin\n", (rc, err))


def no_device_code_cases(root):
    c = Case(root, 'unbundle', {'junk.bin': b'no device code here', 'empty': b''})
    os.mkdir(c.path('tree'))
    harness.write(c.path('tree/readme.txt'), 'text')
    for name in ('junk.bin', 'empty', 'tree'):
        r = harness.run([OT, 'list', name], cwd=c.dir, text=True)
        want = r.stderr.replace('offloadtool list: error: ', E, 1)
        check('list %s: no device code, exit 1' % name, r.returncode == 1 and 'no device code found' in want, r.stderr)
        for flags in ((), ('--target', 'gfx90a'), ('--target', 'sm_80'), ('--target', X_OFF)):
            rc, out, err = c.run(name, '--extract-dir', 'out', *flags)
            check('unbundle %s --extract-dir %s: list\'s error, exit 1' % (name, ' '.join(flags)),
                  rc == 1 and out == '' and err == want, (rc, out, err, want))
            check('unbundle %s --extract-dir %s: nothing left' % (name, ' '.join(flags)),
                  not os.path.exists(c.path('out')))


def compat_list_cases(root):
    """compat select and check take a list (a machine's GPUs): each target's
    answer is what the target alone gets, the selected entries those LLVM's
    rule picks for the bundle IDs, exit 0 only when every target is served."""
    payloads = {'h': b'host', 'on': b'gfx90a xnack+ code', 'g1100': b'gfx1100 code'}
    a = harness.llvm_bundle(['-type=bc', '-targets=' + ','.join([HOST, X_ON, G1100]), '-input=h', '-input=on',
                             '-input=g1100'], payloads, root)
    c = Case(root, 'compat', {'a.bc': a})

    def ot(*args):
        r = harness.run([OT, 'compat', *args], cwd=c.dir, text=True)
        return r.returncode, r.stdout, r.stderr

    targets = ['gfx90a:xnack+', 'gfx1100', 'gfx942']
    alone = {t: ot('select', 'a.bc', '--target', t) for t in targets}
    check('select, one target at a time: gfx90a:xnack+ and gfx1100 served, gfx942 not',
          [alone[t][0] for t in targets] == [0, 0, 1], {t: alone[t][0] for t in targets})
    for t, ident in (('gfx90a:xnack+', X_ON), ('gfx1100', G1100)):
        check('select --target %s: the entry LLVM unbundles for %s' % (t, ident),
              alone[t][1].startswith('selected %s ' % ident), alone[t][1])
    rc, out, err = ot('select', 'a.bc', '--target', ','.join(targets))
    want = '\n'.join('%s:\n%s' % (t, alone[t][1]) for t in targets)
    check('select --target LIST: each target\'s block as the target alone gets it, exit 1 (gfx942 unserved)',
          rc == 1 and out == want and err == '', (rc, out, err))
    rc, out, err = ot('select', 'a.bc', '--target', 'gfx1100,gfx90a:xnack+')
    check('select --target LIST: exit 0 when every target is served', rc == 0, (rc, out, err))
    rc, out, err = ot('select', 'a.bc', '--target', ','.join(targets), '--json')
    doc = json.loads(out)
    singles = [json.loads(ot('select', 'a.bc', '--target', t, '--json')[1]) for t in targets]
    check('select --json with a list: "selections", each the members the target alone gets',
          rc == 1 and [{k: v for k, v in d.items() if k not in ('schema', 'command', 'file', 'rules')} for d in singles]
          == doc['selections'] and doc['schema'] == singles[0]['schema'], out)
    # check: a code object against each target of the list.
    lines = [ot('check', 'gfx90a:xnack+', t)[1] for t in targets]
    rc, out, err = ot('check', 'gfx90a:xnack+', ','.join(targets))
    check('check CODE LIST: one line per target, as each alone says it, exit 1 (not compatible with all)',
          rc == 1 and out == ''.join('%s: %s' % (t, l) for t, l in zip(targets, lines)), (rc, out, err))
    rc, out, err = ot('check', 'gfx90a', 'gfx90a:xnack+,gfx90a:xnack-', '--json')
    doc = json.loads(out)
    check('check --json with a list: "targets" with each verdict, "compatible" of them all',
          rc == 0 and doc['compatible'] is True and [t['target']['text'] for t in doc['targets']] ==
          ['gfx90a:xnack+', 'gfx90a:xnack-'] and all(t['compatible'] for t in doc['targets']), out)
    rc, out, err = ot('check', 'gfx90a', 'gfx90a,gfx9000')
    check('check with a bad item in the list: the parser\'s error, exit 2',
          rc == 2 and out == '' and "gfx9000" in err, (rc, out, err))


def cases(root):
    amd_cases(root)
    compat_list_cases(root)
    nvidia_cases(root)
    no_device_code_cases(root)


if __name__ == '__main__':
    sys.exit(harness.run_suite('target-syntax', cases, needs=[LLVM_BUNDLER]))
