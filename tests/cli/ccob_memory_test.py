"""list, size and prune of a HIP library of many CCOBs keep memory flat: a
74 MB library of 48 compressed bundles that decompress to 1.1 GiB (four
6 MiB code objects each, each bundle's code object headers beyond the 16 MiB
that list decodes only as far as) is read, and pruned keeping one GPU or
three, within a resident budget far below the library's size, and under an
address-space limit. (Each CCOB's pages of
the input stayed resident once decoded, and prune held every pruned CCOB:
75 to 160 MiB over the budgets' base, growing with every bundle.)
The listing, the sizes and the pruned library's bundles are checked against
LLVM 19's clang-offload-bundler (-list, -unbundle) of each bundle."""
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import OT, check  # noqa: E402
import synthetic_ccob  # noqa: E402

ARCHES = ('gfx906', 'gfx90a', 'gfx942', 'gfx1100')
KEEP = 'gfx90a'
BUNDLES = 48
SIZE = 6 << 20        # each code object's bytes
NOISE = 512 << 10     # pseudo-random bytes heading each code object that is pruned away (its compressed size)
LIMIT = 384 << 20     # the address-space limit (the library is mapped whole: 74 MB)
# MiB over what the binary needs to start: list decodes a bundle whole (24 MiB) to read its code object
# headers, size only its table; prune holds the decoder's window (24 MiB: the bundle) and the compressor's
# buffers. (Each bundle's 1.5 MiB of input stayed resident: 100, 75 and 130 MiB over.)
BUDGET = {'list': 48, 'size': 48, 'prune': 88}
HIP = 'hipv4-amdgcn-amd-amdhsa--'


def ccob(bundle):
    objects = [synthetic_ccob.code_object(b'%d %s' % (bundle, a.encode()), SIZE,
                                          head=4096 if a == KEEP else NOISE) for a in ARCHES]
    return synthetic_ccob.ccob([(HIP + a).encode() for a in ARCHES], objects)


def bundler(d, *args):
    r = harness.run([harness.LLVM_BUNDLER] + list(args), cwd=d.dir)
    check('clang-offload-bundler %s' % ' '.join(args), r.returncode == 0, r.stderr)
    return r.stdout.decode()


def reference(d, name):
    """What LLVM 19 says of the bundle in file `name`: its IDs (sorted) with
    the size each device entry unbundles to (the host entry's: None; the
    bundler unbundles no host entry of a bundle that is not an object), and
    the sha256 of each device entry."""
    ids = sorted(bundler(d, '-list', '-type=o', '-input=' + name).split())
    device = [i for i in ids if not i.startswith('host-')]
    outs = ['ref-%d.bin' % i for i in range(len(device))]
    bundler(d, '-unbundle', '-type=o', '-input=' + name, '-targets=' + ','.join(device),
            *['-output=' + o for o in outs])
    sizes, shas = {}, {}
    for i, o in zip(device, outs):
        sizes[i] = os.path.getsize(d.path(o))
        with open(d.path(o), 'rb') as f:
            shas[i] = hashlib.sha256(f.read()).hexdigest()
        os.unlink(d.path(o))
    return [(i, sizes.get(i)) for i in ids], shas


def run_within(what, argv, d):
    """argv run under the address-space limit and then measured against its
    command's budget: its stdout."""
    mib = BUDGET[argv[1]]
    budget = harness.resident_budget_kib(mib)
    with open(OT, 'rb') as fh:
        sanitized = b'__asan_init' in fh.read()
    if not sanitized:  # (AddressSanitizer reserves terabytes of address space)
        p = subprocess.run(argv, cwd=d.dir, capture_output=True,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT)))
        check(what + ': under a %d MiB address-space limit' % (LIMIT >> 20), p.returncode == 0,
              p.stderr.decode('utf-8', 'replace'))
    rc, kib = harness.peak_resident_kib(argv, cwd=d.dir)
    check(what + ': within %d MiB of the start' % mib, rc == 0 and kib <= budget,
          'rc=%s, %d KiB (budget %d KiB)' % (rc, kib, budget))
    p = subprocess.run(argv, cwd=d.dir, capture_output=True)
    check(what + ': exit 0', p.returncode == 0, p.stderr.decode('utf-8', 'replace'))
    return p.stdout


def body(root):
    d = harness.Folder(root, files={})
    names, want, shas = [], [], []
    for b in range(BUNDLES):
        name = 'b%d.ccob' % b
        with open(d.path(name), 'wb') as f:
            f.write(ccob(b))
        names.append(name)
        entries, sha = reference(d, name)
        want.append(entries)
        shas.append(sha)
    with open(d.path('many.s'), 'w') as f:
        f.write(synthetic_ccob.hip_library_asm(names))
    r = harness.run([harness.CLANG, '-shared', '-fPIC', '-nostdlib', '-o', 'libmany.so', 'many.s'], cwd=d.dir)
    check('the library links', r.returncode == 0, r.stderr)
    for name in names:
        os.unlink(d.path(name))
    total = sum(n or 0 for entries in want for _, n in entries)
    check('the bundles decompress to more than 1 GiB, each to less than 100 MB',
          total > 1 << 30 and max(sum(n or 0 for _, n in e) for e in want) < 100 << 20, str(total))
    what = 'of a %d MB library of %d CCOBs holding %.1f GiB' % (os.path.getsize(d.path('libmany.so')) >> 20,
                                                                 BUNDLES, total / (1 << 30))

    listed = json.loads(run_within('list ' + what, [OT, 'list', '--json', '--bytes', 'libmany.so'], d))
    got = {}
    for e in listed['entries']:
        size = None if e['id'].startswith('host-') else e['uncompressed_size']
        got.setdefault(e['path'][-1], []).append((e['id'], size))
    got = {k: sorted(v) for k, v in got.items()}
    check('list ' + what + ': each bundle\'s IDs and sizes are what clang-offload-bundler unbundles',
          list(got.values()) == want, '%s\nwant %s' % (list(got.values())[:2], want[:2]))

    sized = json.loads(run_within('size ' + what, [OT, 'size', '--json', 'libmany.so'], d))
    per_target = {}
    for entries in want:
        for i, n in entries:
            if not i.startswith('host-'):
                c, s = per_target.get(i, (0, 0))
                per_target[i] = (c + 1, s + n)
    got = {t['target']: (t['entries'], t['uncompressed_bytes']) for t in sized['targets']
           if not t['target'].startswith('host-')}
    check('size ' + what + ': entries and bytes per target as clang-offload-bundler unbundles them',
          got == per_target, '%s\nwant %s' % (got, per_target))

    # --keep: the kept code objects compress to a few KiB; --drop: to 1 MiB a bundle, the pruned library's
    # 48 MB kept (beside the output) until it is written.
    for flags, stays in ((['--keep', KEEP], (KEEP,)), (['--drop', ARCHES[0]], ARCHES[1:])):
        run_within('prune %s %s' % (' '.join(flags), what), [OT, 'prune'] + flags + ['libmany.so', '-o', 'pruned.so'], d)
        r = harness.run(['objcopy', '-O', 'binary', '--only-section=.hip_fatbin', 'pruned.so', 'fatbin.bin'],
                        cwd=d.dir)
        check('objcopy extracts the pruned .hip_fatbin', r.returncode == 0, r.stderr)
        if flags[0] == '--drop':  # the reference of read_only_folder
            os.rename(d.path('pruned.so'), d.path('dropped.so'))
        else:
            os.unlink(d.path('pruned.so'))
        with open(d.path('fatbin.bin'), 'rb') as f:
            pruned = synthetic_ccob.split_ccobs(f.read())
        os.unlink(d.path('fatbin.bin'))
        check('prune %s %s: %d CCOBs stay' % (' '.join(flags), what, BUNDLES), len(pruned) == BUNDLES, str(len(pruned)))
        for b, data in enumerate(pruned):
            with open(d.path('p.ccob'), 'wb') as f:
                f.write(data)
            entries, got = reference(d, 'p.ccob')
            want_kept = [(i, n) for i, n in want[b] if i.startswith('host-') or i[len(HIP):] in stays]
            check('prune %s: bundle %d holds the host entry and %s as they were' % (' '.join(flags), b, ', '.join(stays)),
                  entries == want_kept and got == {i: shas[b][i] for i, _ in want_kept if i in shas[b]},
                  '%s %s\nwant %s' % (entries, got, want_kept))
        os.unlink(d.path('p.ccob'))
    read_only_folder(root, d)


def read_only_folder(root, d):
    """prune --drop of the library in a folder its user cannot write (an
    install in /opt/rocm/lib, say), as nobody, to a folder of nobody's: the
    re-compressed CCOBs kept until the file is written go to $TMPDIR, not
    beside the input (that failed: "cannot create a scratch file")."""
    what = 'prune --drop %s of the library in a read-only folder, as nobody' % ARCHES[0]
    if not check('%s: the suite runs as root (to run offloadtool as nobody)' % what, os.geteuid() == 0):
        return
    import pwd
    nobody = pwd.getpwnam('nobody')
    for folder in (root, d.dir):
        os.chmod(folder, 0o755)
    ro, out = os.path.join(root, 'ro'), os.path.join(root, 'out')
    os.makedirs(ro)
    os.makedirs(out)
    os.chown(out, nobody.pw_uid, nobody.pw_gid)
    os.rename(d.path('libmany.so'), os.path.join(ro, 'libmany.so'))
    ot = os.path.join(root, 'offloadtool')
    shutil.copy(OT, ot)
    os.chmod(ro, 0o555)
    r = harness.run(['setpriv', '--reuid=%d' % nobody.pw_uid, '--regid=%d' % nobody.pw_gid, '--clear-groups', '--',
                     ot, 'prune', '--drop', ARCHES[0], os.path.join(ro, 'libmany.so'), '-o',
                     os.path.join(out, 'pruned.so')], text=True, env={'TMPDIR': '/tmp'}, timeout=600)
    check('%s: exit 0, silent' % what, r.returncode == 0 and not r.stderr, r.stderr)
    check('%s: the same bytes as the prune beside it' % what,
          os.path.exists(os.path.join(out, 'pruned.so')) and
          harness.same_file(os.path.join(out, 'pruned.so'), d.path('dropped.so')))
    os.chmod(ro, 0o755)


if __name__ == '__main__':
    sys.exit(harness.run_suite('ccob-memory', body, needs=[harness.CLANG, harness.LLVM_BUNDLER]))
