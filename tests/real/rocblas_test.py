"""Real ROCm installs with per-GPU files: Debian's rocBLAS 6.4 (sid's librocblas4)
and rocBLAS 5.5 (trixie's librocblas0), as scripts/fetch-rocblas-samples unpacks
them, pruned to one GPU as a user would (`prune --keep gfx1100 usr -o slim`).

The references:
  * Tensile's own index: TensileLibrary_lazy_gfx1100.dat (MessagePack, read
    with Debian's python3-msgpack) names every code object library rocBLAS
    loads for gfx1100 -- each file it names is in the pruned install, byte for
    byte;
  * the file names: no file named for another GPU is left; every file named
    for none (the fallback indexes, rocBLAS 5's shared TensileLibrary.dat) is;
  * ROCm's roc-obj-ls (hipcc 5.2) on the pruned librocblas.so: only host and
    gfx1100 entries, and offloadtool's list agrees with it;
  * the input's bytes and sizes (size --per-file's per-GPU files column).
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import roc_obj_test as roc  # noqa: E402  (its readers of roc-obj-ls and list --json)
from harness import OT, check, run  # noqa: E402

try:
    import msgpack  # Debian's python3-msgpack (scripts/install-deps)
except ImportError:  # a Python of another prefix (pyenv) of the same version
    sys.path.append('/usr/lib/python3/dist-packages')
    import msgpack  # noqa: E402

CACHE = os.path.abspath(os.environ.get('OT_ROCBLAS_CACHE') or
                        os.path.join(os.path.expanduser('~'), '.cache', 'offloadtool', 'rocblas'))
KEEP = 'gfx1100'
# A GPU in a Tensile file name: the processor, then features spelled with '-' or ':'.
GPU = re.compile(r'(?:^|[_-])(gfx[0-9a-f]+(?:[-:](?:xnack|sramecc)[+-])*)\.(?:co|hsaco|dat)$')
LIB = 'lib/x86_64-linux-gnu'


def gpu_of(name):
    m = GPU.search(name)
    return m.group(1).replace('-', ':', 1).replace('-x', ':x').replace('-s', ':s') if m else None


def strings(o, out):
    if isinstance(o, str):
        out.append(o)
    elif isinstance(o, dict):
        for k, v in o.items():
            strings(k, out)
            strings(v, out)
    elif isinstance(o, (list, tuple)):
        for v in o:
            strings(v, out)


def files_of(top):
    return sorted(os.path.relpath(os.path.join(d, f), top) for d, _, fs in os.walk(top) for f in fs)


def check_so(what, so):
    after, problem = roc.roc_obj_ls(so)
    ids = sorted({e['id'] for e in after or []})
    check('%s: roc-obj-ls reads the pruned library: only host and %s entries' % (what, KEEP),
          problem is None and after and all(i.startswith('host-') or i.endswith('--' + KEEP) for i in ids)
          and any(i.endswith('--' + KEEP) for i in ids), problem or ids)
    listing, problem = roc.list_json(so)
    ours = [(e['id'], e['offset'], e['size']) for e in (listing or {}).get('entries', [])]
    check('%s: offloadtool list agrees with roc-obj-ls on the pruned library' % what,
          problem is None and ours == [(e['id'], e['offset'], e['size']) for e in after], problem or ours[:3])


def rocblas4(root):
    usr = os.path.join(CACHE, 'unpacked', 'librocblas4', 'usr')
    library = os.path.join(usr, LIB, 'rocblas', '4.4.1', 'library')
    if not check('rocBLAS 6.4 unpacked in %s (scripts/fetch-rocblas-samples)' % CACHE, os.path.isdir(library)):
        return
    names = os.listdir(library)
    gpus = sorted({gpu_of(n) for n in names if gpu_of(n)})
    check('the install has per-GPU files for 10 GPUs, %s among them' % KEEP, len(gpus) >= 10 and KEEP in gpus, gpus)

    # The dry run's report: every per-GPU file with the target its name carries.
    r = run([OT, 'prune', '--keep', KEEP, usr, '--dry-run', '--json'], text=True, timeout=600)
    report = json.loads(r.stdout) if r.returncode == 0 else {}
    rows = {os.path.basename(f['path']): f for f in report.get('files', []) if f['path'].startswith(library)}
    dats = [n for n in names if n.endswith('.dat') and gpu_of(n)]
    wrong = [(n, rows.get(n, {}).get('per_gpu')) for n in dats
             if rows.get(n, {}).get('per_gpu', {}).get('target') != gpu_of(n)
             or rows[n]['action'] != ('copy' if gpu_of(n) == KEEP else 'remove')]
    check('prune --dry-run --json: each of the %d per-GPU .dat files with its target, removed unless %s' % (len(dats), KEEP),
          r.returncode == 0 and dats and not wrong, r.stderr + str(wrong[:5]))

    out = os.path.join(root, 'slim4')
    r = run([OT, 'prune', '--keep', KEEP, usr, '-o', out], text=True, timeout=600)
    if not check('prune --keep %s of the install: exit 0, nothing said' % KEEP, r.returncode == 0 and not r.stderr, r.stderr):
        return
    slim = os.path.join(out, LIB, 'rocblas', '4.4.1', 'library')
    index = msgpack.unpackb(harness.read(os.path.join(library, 'TensileLibrary_lazy_%s.dat' % KEEP)), raw=False,
                            strict_map_key=False)
    named = []
    strings(index, named)
    stems = sorted({s for s in named if s.startswith('TensileLibrary')})
    wanted = [n for n in names if n.rsplit('.', 1)[0] in stems]
    bad = [n for n in wanted if not os.path.isfile(os.path.join(slim, n))
           or harness.read(os.path.join(slim, n)) != harness.read(os.path.join(library, n))]
    check('every file Tensile\'s %s index names (%d libraries, %d files) is there, byte for byte'
          % (KEEP, len(stems), len(wanted)), len(stems) >= 60 and len(wanted) >= len(stems) and not bad, bad[:5])
    left = os.listdir(slim)
    check('no file named for another GPU is left', not [n for n in left if gpu_of(n) not in (None, KEEP)],
          [n for n in left if gpu_of(n) not in (None, KEEP)][:5])
    stay = sorted(n for n in names if gpu_of(n) in (None, KEEP))
    check('every file named for %s or for no GPU stays, byte for byte' % KEEP,
          sorted(left) == stay and all(harness.read(os.path.join(slim, n)) == harness.read(os.path.join(library, n))
                                       for n in stay), sorted(set(stay) ^ set(left))[:5])
    check_so('rocBLAS 6.4', os.path.join(out, LIB, 'librocblas.so.4.4'))
    before = sum(os.path.getsize(os.path.join(usr, p)) for p in files_of(usr))
    after = sum(os.path.getsize(os.path.join(out, p)) for p in files_of(out))
    print('rocBLAS 6.4 pruned to %s: %.1f MB -> %.1f MB' % (KEEP, before / 1e6, after / 1e6))
    check('the pruned install is at most an eighth of the input', after * 8 < before, (before, after))

    # size --per-file: the per-GPU files' bytes per target, as the names and sizes give them.
    r = run([OT, 'size', '--per-file', '--json', usr], text=True, timeout=600)
    tree = ((json.loads(r.stdout) if r.returncode == 0 else {}).get('trees') or [{}])[0]
    got = {row['target']: row['per_gpu_bytes'] for row in tree.get('targets', []) if row.get('per_gpu_files')}
    want = {}
    for n in dats:
        want[gpu_of(n)] = want.get(gpu_of(n), 0) + os.path.getsize(os.path.join(library, n))
    check('size --per-file --json: per target, the bytes of its per-GPU files', got == want, '%s\n%s' % (got, want))


def rocblas0(root):
    usr = os.path.join(CACHE, 'unpacked', 'librocblas0', 'usr')
    library = os.path.join(usr, LIB, 'rocblas', '2.47.0', 'library')
    if not check('rocBLAS 5.5 unpacked in %s (scripts/fetch-rocblas-samples)' % CACHE, os.path.isdir(library)):
        return
    out = os.path.join(root, 'slim0')
    r = run([OT, 'prune', '--keep', KEEP, usr, '-o', out], text=True, timeout=600)
    if not check('rocBLAS 5.5: prune --keep %s: exit 0, nothing said' % KEEP, r.returncode == 0 and not r.stderr, r.stderr):
        return
    slim = os.path.join(out, LIB, 'rocblas', '2.47.0', 'library')
    names = os.listdir(library)
    stay = sorted(n for n in names if gpu_of(n) in (None, KEEP))
    check('rocBLAS 5.5: the shared TensileLibrary.dat and the %s files stay, byte for byte; the others go' % KEEP,
          'TensileLibrary.dat' in stay and 'TensileLibrary_%s.co' % KEEP in stay and sorted(os.listdir(slim)) == stay
          and all(harness.read(os.path.join(slim, n)) == harness.read(os.path.join(library, n)) for n in stay),
          sorted(set(stay) ^ set(os.listdir(slim))))
    check_so('rocBLAS 5.5', os.path.join(out, LIB, 'librocblas.so.0.1'))


def body(root):
    rocblas4(root)
    rocblas0(root)


if __name__ == '__main__':
    sys.exit(harness.run_suite('rocblas', body, needs=[roc.ROC_OBJ_LS, 'perl']))
