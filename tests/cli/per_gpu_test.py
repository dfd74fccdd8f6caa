"""Per-GPU files of ROCm installs: `prune` of a tree and a tarball, `size --per-file`.

The install is built here by clang (of the release under test), laid out as
hipBLASLt, rocBLAS and MIOpen lay theirs out:
  * hipblaslt/library: per-GPU compressed bundles (clang --offload-compress,
    one GPU each, two per GPU), the Tensile .dat beside each and a
    TensileLibrary_lazy_<gfx>.dat index per GPU -- MessagePack (Debian's
    python3-msgpack) naming the files of that GPU --, extop_<gfx>.co bare code
    objects, the TensileLiteLibrary_lazy_Mapping.dat named for no GPU, an
    index of gfx803 (no device code of the install is for gfx803), indexes in
    Tensile's feature spellings (gfx90a-xnack+, gfx90a:xnack-), and a bundle
    holding gfx908 code only (as Debian's hipblasltTransform.hsaco);
  * share/miopen/db: MIOpen's databases, named as miopen::Handle names them
    (<gfx><cus in hex> above 64, <gfx>_<cus> up to 64, _nosramecc, models);
  * share/doc: a Tensile-like name in a folder without device code (no
    per-GPU file: left alone).
The references: which GPU each file was built or named for (this script's
table), LLVM's bundler -list of the bundles, the bytes of the input, the
index read with msgpack; never offloadtool's own output.
"""
import json
import os
import shutil
import sys
import tarfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import OT, check, run  # noqa: E402

try:
    import msgpack  # Debian's python3-msgpack (scripts/install-deps)
except ImportError:  # a Python of another prefix (pyenv) of the same version
    sys.path.append('/usr/lib/python3/dist-packages')
    import msgpack  # noqa: E402

ARCHS = ['gfx908', 'gfx90a', 'gfx1100']
KEEP = 'gfx1100'
KERNEL = b'__global__ void k%d(int *p) { p[0] = %d; }\n'
PROBLEMS = ['Type_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk', 'Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk']


def sh(argv, cwd):
    r = run(argv, cwd=cwd, text=True)
    if r.returncode != 0:
        raise RuntimeError('%s: %s' % (' '.join(argv), r.stderr))
    return r.stdout


def compile_hip(work, name, arch, extra, n):
    harness.write(os.path.join(work, name + '.hip'), harness.HIP_PRELUDE + KERNEL % (n, n))
    sh([harness.CLANGXX, '-x', 'hip', '--cuda-device-only', '--offload-arch=' + arch, '-nogpuinc', '-nogpulib']
       + extra + ['-c', name + '.hip', '-o', name + '.out'], work)
    return os.path.join(work, name + '.out')


def build_install(root):
    """root/inst; returns (inst, table): table maps each file's relative path to
    (kind, gpu): kind 'code' (device code), 'per-gpu' (a per-GPU file of gpu),
    'other' (neither)."""
    work = os.path.join(root, 'build')
    os.makedirs(work)
    inst = os.path.join(root, 'inst')
    lib = 'hipblaslt/library'
    db = 'share/miopen/db'
    for d in (lib, db, 'share/doc'):
        os.makedirs(os.path.join(inst, d))
    table = {}

    def put(rel, data, kind, gpu):
        harness.write(os.path.join(inst, rel), data)
        table[rel] = (kind, gpu)

    n = 0
    for arch in ARCHS:
        stems = []
        for p in PROBLEMS:
            n += 1
            stem = 'TensileLibrary_%s_%s' % (p, arch)
            ccob = compile_hip(work, stem, arch, ['--gpu-bundle-output', '--offload-compress'], n)
            put('%s/%s.co' % (lib, stem), harness.read(ccob), 'code', arch)
            put('%s/%s.dat' % (lib, stem), msgpack.packb({'solutions': [{'name': 'k%d' % n, 'index': n}],
                                                          'library': {'type': 'Problem', 'codeObject': stem + '.co'}}),
                'per-gpu', arch)
            stems.append(stem)
        put('%s/TensileLibrary_lazy_%s.dat' % (lib, arch), msgpack.packb({'library': {'rows': stems}}), 'per-gpu', arch)
        n += 1
        put('%s/extop_%s.co' % (lib, arch), harness.read(compile_hip(work, 'extop_' + arch, arch, [], n)), 'code', arch)
    put('%s/TensileLiteLibrary_lazy_Mapping.dat' % lib, msgpack.packb({a: 'TensileLibrary_lazy_%s' % a for a in ARCHS}),
        'other', None)
    put('%s/TensileLibrary_Type_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback.dat' % lib, msgpack.packb({'f': 1}),
        'other', None)
    put('%s/TensileLibrary_lazy_gfx803.dat' % lib, msgpack.packb({'library': {'rows': []}}), 'per-gpu', 'gfx803')
    put('%s/TensileLibrary_fallback_gfx90a-xnack+.dat' % lib, msgpack.packb({'x': '+'}), 'per-gpu', 'gfx90a:xnack+')
    put('%s/TensileLibrary_fallback_gfx90a:xnack-.dat' % lib, msgpack.packb({'x': '-'}), 'per-gpu', 'gfx90a:xnack-')
    n += 1
    put('%s/hipblasltTransform.hsaco' % lib,
        harness.read(compile_hip(work, 'transform', 'gfx908', ['--gpu-bundle-output'], n)), 'code', 'gfx908')
    for name, gpu in (('gfx90a68.kdb', 'gfx90a'), ('gfx90a68.HIP.fdb.txt', 'gfx90a'), ('gfx1100_48.kdb', KEEP),
                      ('gfx1100_48.HIP.fdb.txt', KEEP), ('gfx908_nosramecc78.db', 'gfx908:sramecc-'),
                      ('gfx90a_metadata.tn.model', 'gfx90a'), ('gfx1030_36.kdb', 'gfx1030')):
        put('%s/%s' % (db, name), ('%s database\n' % name).encode() * 50, 'per-gpu', gpu)
    put('%s/miopen_readme.txt' % db, b'no GPU here\n', 'other', None)
    put('share/doc/TensileLibrary_lazy_gfx90a.dat', b'a copy in the docs\n', 'other', None)
    return inst, table


def llvm_ids(path, work):
    """LLVM's bundler -list of a (compressed) bundle file."""
    return sorted(sh([harness.LLVM_BUNDLER, '-list', '-type=o', '-input=' + path], work).split())


def fate(kind, gpu, keep):
    """What prune --keep `keep` must do with a file, by the rules of the issue."""
    present = {a for a in ARCHS}  # the GPUs the install's device code is for
    processor = gpu.split(':')[0] if gpu else None
    keep_processor = keep.split(':')[0]
    if kind == 'other':
        return 'copy'
    if kind == 'code':
        return 'copy' if processor == keep_processor else 'remove'
    if processor == keep_processor:
        # gfx90a:xnack- is not what a gfx90a:xnack+ GPU runs
        if ':' in keep and ':' in gpu and gpu.split(':')[1] != keep.split(':')[1]:
            return 'remove'
        return 'copy'
    return 'remove' if processor in present else 'copy'


def cases(root):
    inst, table = build_install(root)
    work = os.path.join(root, 'ref')
    os.makedirs(work)
    lib = os.path.join(inst, 'hipblaslt/library')
    for arch in ARCHS:
        ids = llvm_ids(os.path.join(lib, 'TensileLibrary_%s_%s.co' % (PROBLEMS[0], arch)), work)
        check('LLVM\'s bundler reads the compressed per-GPU bundle of %s: the host and %s' % (arch, arch),
              len(ids) == 2 and ids[0].endswith('--' + arch) and ids[1].startswith('host-'), ids)

    # prune --dry-run --json: every file with device code, and every per-GPU file with its target.
    before = {rel: harness.read(os.path.join(inst, rel)) for rel in table}
    r = run([OT, 'prune', '--keep', KEEP, '--dry-run', '--json', 'inst'], cwd=root, text=True)
    report = json.loads(r.stdout) if r.returncode == 0 else {}
    rows = {os.path.relpath(f['path'], 'inst'): f for f in report.get('files', [])}
    want = {rel: fate(kind, gpu, KEEP) for rel, (kind, gpu) in table.items() if kind != 'other'}
    got = {rel: rows[rel]['action'] if rel in rows else None for rel in want}
    check('prune --dry-run --json: device code and per-GPU files of the other GPUs go, the %s ones stay' % KEEP,
          r.returncode == 0 and got == want, '%s\n%s' % (r.stderr, {k: (got[k], want[k]) for k in want if got[k] != want[k]}))
    targets = {rel: rows[rel].get('per_gpu', {}).get('target') for rel, (kind, _) in table.items()
               if kind == 'per-gpu' and rel in rows}
    check('every per-GPU file is in the report with the target its name carries',
          targets == {rel: gpu for rel, (kind, gpu) in table.items() if kind == 'per-gpu'}, targets)
    check('files of no GPU, and a Tensile name in a folder without device code, are not per-GPU files',
          not any(rel in rows for rel, (kind, _) in table.items() if kind == 'other'),
          [rel for rel, (kind, _) in table.items() if kind == 'other' and rel in rows])
    notes = ' '.join(' '.join(rows.get(rel, {}).get('notes', [])) for rel in
                     ('hipblaslt/library/TensileLibrary_lazy_gfx803.dat', 'share/miopen/db/gfx1030_36.kdb'))
    check('a per-GPU file of a GPU no device code of the install is for stays, and the report says why',
          notes.count('neither kept nor dropped') == 2, notes)
    transform = rows.get('hipblaslt/library/hipblasltTransform.hsaco', {})
    check('a bundle of a dropped GPU only is left out (remove), its entries in the report',
          transform.get('action') == 'remove' and sorted(e['id'] for e in transform.get('entries', []))
          == llvm_ids(os.path.join(lib, 'hipblasltTransform.hsaco'), work)
          and not any(e['kept'] for e in transform['entries'] if not e['id'].startswith('host-')), transform)
    per_gpu_dropped = {}
    for rel, (kind, gpu) in table.items():
        if kind == 'per-gpu' and want[rel] == 'remove':
            files, size = per_gpu_dropped.get(gpu, (0, 0))
            per_gpu_dropped[gpu] = (files + 1, size + len(before[rel]))
    got_dropped = {d['target']: (d['per_gpu_files'], d['per_gpu_bytes']) for d in report.get('dropped', [])
                   if d['per_gpu_files']}
    check('dropped[]: the per-GPU files left out and their bytes, per target', got_dropped == per_gpu_dropped,
          '%s\n%s' % (got_dropped, per_gpu_dropped))

    # prune -o OUTDIR: the kept GPU's index names files that are all there, byte for byte; nothing of the others.
    r = run([OT, 'prune', '--keep', KEEP, 'inst', '-o', 'out'], cwd=root, text=True)
    check('prune --keep %s DIR -o OUTDIR: exit 0, nothing said (a file left without its GPUs stops nothing)' % KEEP,
          r.returncode == 0 and r.stderr == '', r.stderr)
    out = os.path.join(root, 'out')
    index = msgpack.unpackb(harness.read(os.path.join(out, 'hipblaslt/library/TensileLibrary_lazy_%s.dat' % KEEP)))
    named = [os.path.join('hipblaslt/library', s + e) for s in index['library']['rows'] for e in ('.co', '.dat')]
    check('every file the kept GPU\'s index names is there, byte for byte',
          len(named) == 2 * len(PROBLEMS) and all(os.path.isfile(os.path.join(out, p))
                                                  and harness.read(os.path.join(out, p)) == before[p] for p in named),
          named)
    left = sorted(left_files(out))
    check('the output holds exactly the files that stay, byte for byte',
          left == sorted(rel for rel, (kind, gpu) in table.items() if fate(kind, gpu, KEEP) == 'copy')
          and all(harness.read(os.path.join(out, rel)) == before[rel] for rel in left), left)

    # size --per-file: the per-GPU files' bytes per target, a column of their own.
    r = run([OT, 'size', '--per-file', '--json', 'inst'], cwd=root, text=True)
    sized = json.loads(r.stdout) if r.returncode == 0 else {}
    tree = (sized.get('trees') or [{}])[0]
    got = {row['target']: (row['per_gpu_files'], row['per_gpu_bytes']) for row in tree.get('targets', [])
           if row.get('per_gpu_files')}
    want_sizes = {}
    for rel, (kind, gpu) in table.items():
        if kind == 'per-gpu':
            files, size = want_sizes.get(gpu, (0, 0))
            want_sizes[gpu] = (files + 1, size + len(before[rel]))
    check('size --per-file --json DIR: per target, its per-GPU files and their bytes', got == want_sizes,
          '%s\n%s\n%s' % (r.stderr, got, want_sizes))
    r = run([OT, 'size', '--per-file', '--bytes', 'inst'], cwd=root, text=True)
    row = next((l for l in r.stdout.splitlines() if l.split()[:1] == ['gfx1030']), '')
    check('size --per-file DIR (text): a per-GPU files column', 'per-GPU files' in r.stdout
          and row.split()[-1] == str(want_sizes['gfx1030'][1]), r.stdout)

    # Another selection: --keep gfx90a:xnack+ keeps gfx90a's files in any spelling but the xnack- one.
    keep2 = 'gfx90a:xnack+'
    r = run([OT, 'prune', '--keep', keep2, 'inst', '-o', 'out2'], cwd=root, text=True)
    left = sorted(left_files(os.path.join(root, 'out2'))) if r.returncode == 0 else r.stderr
    check('prune --keep %s: the files of gfx90a and gfx90a:xnack+ stay, gfx90a:xnack- goes' % keep2,
          left == sorted(rel for rel, (kind, gpu) in table.items() if fate(kind, gpu, keep2) == 'copy'), left)

    # The same install as a tarball: the same members stay, the same bytes (compressed bundles among them).
    with tarfile.open(os.path.join(root, 'inst.tar.gz'), 'w:gz') as t:
        t.add(inst, arcname='inst')
    r = run([OT, 'prune', '--keep', KEEP, 'inst.tar.gz', '-o', 'out.tar.gz'], cwd=root, text=True)
    members = {}
    if r.returncode == 0:
        with tarfile.open(os.path.join(root, 'out.tar.gz')) as t:
            members = {os.path.relpath(m.name, 'inst'): t.extractfile(m).read() for m in t.getmembers() if m.isfile()}
    check('prune of the tarball: the members that stay are the files the tree prune kept, byte for byte',
          r.returncode == 0 and sorted(members) == sorted(left_files(out))
          and all(members[k] == before[k] for k in members), r.stderr + str(sorted(members)))

    # Alone on the command line, a file of dropped GPUs only stays an error.
    r = run([OT, 'prune', '--keep', KEEP, 'inst/hipblaslt/library/hipblasltTransform.hsaco', '-o', 't.hsaco'],
            cwd=root, text=True)
    check('prune of one bundle of dropped GPUs only: exit 1, one line, nothing written',
          r.returncode == 1 and r.stderr.count('\n') == 1 and 'no device entry' in r.stderr
          and not os.path.exists(os.path.join(root, 't.hsaco')), r.stderr)


def left_files(top):
    return [os.path.relpath(os.path.join(d, f), top) for d, _, fs in os.walk(top) for f in fs]


if __name__ == '__main__':
    sys.exit(harness.run_suite('per-gpu', cases, needs=[harness.CLANGXX, harness.LLVM_BUNDLER]))
