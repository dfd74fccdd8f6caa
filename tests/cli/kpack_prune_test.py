"""prune of kpack'd installs (docs/kpack.md "Pruning"), and list/size of a
directory counting each archive's code objects once.

The install is kpack_test.py's (clang 19, LLVM's clang-offload-bundler-19,
objcopy, tests/data/kpack/generate.py's writer), with two more archives
holding both architectures. The outputs are read here by an independent
reader: Debian's python3-msgpack parses each TOC, the blobs and zstd frames
are cut out of the file by the TOC's offsets, and the code objects are
compared with `cmp` to what clang-offload-bundler-19 -unbundle extracted from
the library before it was kpack'd.
"""
import io
import json
import os
import shutil
import struct
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data', 'kpack'))
import harness  # noqa: E402
from harness import OT, check, run  # noqa: E402
import generate  # noqa: E402
import kpack_test as kt  # noqa: E402  the install's builder

msgpack = generate.msgpack
KN = kt.KERNEL_NAME


def toc(data):
    """An archive's header and TOC, read with python3-msgpack alone."""
    assert data[:4] == b'KPAK', data[:4]
    version, at = struct.unpack_from('<IQ', data, 4)
    assert version == 1
    return msgpack.unpackb(data[at:], raw=False, strict_map_key=False)


def stored(data, t):
    """{(binary key, arch): (ordinal, stored bytes)}: blobs (none) or frames (zstd-per-kernel)."""
    if t['compression_scheme'] == 'none':
        blobs = [data[b['offset']:b['offset'] + b['size']] for b in t['blobs']]
    else:
        at, end = t['zstd_offset'], t['zstd_offset'] + t['zstd_size']
        n, = struct.unpack_from('<I', data, at)
        at += 4
        blobs = []
        for _ in range(n):
            size, = struct.unpack_from('<I', data, at)
            blobs.append(data[at + 4:at + 4 + size])
            at += 4 + size
        assert at == end, (at, end)
    return {(b, a): (e['ordinal'], blobs[e['ordinal']]) for b, arches in t['toc'].items() for a, e in arches.items()}


def cmp(a, b, cwd):
    return run(['cmp', a, b], cwd=cwd, text=True).returncode == 0


def cases(root):
    work = os.path.join(root, 'build')
    os.makedirs(work)
    code = kt.build(work)  # LLVM's code objects, also in build/<tu>-<arch>.co
    inst = os.path.join(root, 'inst')
    os.makedirs(os.path.join(inst, 'lib'))
    os.makedirs(os.path.join(inst, '.kpack'))
    kt.kpack_binary(os.path.join(work, 'libk.so.1'), os.path.join(inst, 'lib', 'libk.so.1'),
                    kt.marker(['../.kpack/k_@GFXARCH@.kpack']))
    archives = {
        'k_gfx906.kpack': kt.archive('gfx906', code, False),
        'k_gfx1100.kpack': kt.archive('gfx1100', code, True),
        # Both architectures, interleaved, the family naming the one to drop.
        'k_multi.kpack': generate.kpack(('m', 'gfx906', ['gfx906', 'gfx1100'],
                                         [('%s#%d' % (KN, i), a, code[(t, a)])
                                          for i, t in enumerate(kt.TUS) for a in ('gfx906', 'gfx1100')]), False),
        # zstd-per-kernel, gfx1100 first, a family that names no architecture.
        'z_multi.kpack': generate.kpack(('z', 'gfx9X', ['gfx1100', 'gfx906'],
                                         [('%s#%d' % (KN, i), a, code[(t, a)])
                                          for i, t in enumerate(kt.TUS) for a in ('gfx1100', 'gfx906')]), True),
    }
    for name, data in archives.items():
        harness.write(os.path.join(inst, '.kpack', name), data)
    lib_in = harness.read(os.path.join(inst, 'lib', 'libk.so.1'))

    # --- size and list of the directory: each archive's code objects once.
    n_in_archives = sum(len(stored(d, toc(d))) for d in archives.values())
    bytes_in_archives = sum(len(code[(t, a)]) for d in archives.values()
                            for (b, a) in stored(d, toc(d)) for t in [kt.TUS[int(b.rsplit('#', 1)[1])]])
    r = kt.ot(['size', '--json', inst], root)
    check('size --json of the install: exit 0', r.returncode == 0, r.stderr)
    if r.returncode == 0:
        s = json.loads(r.stdout)
        check('size of a directory counts each archive\'s entries once (not again through the kpack\'d binary)',
              s['entries'] == n_in_archives, (s['entries'], n_in_archives))
        check('size of a directory: uncompressed bytes are the archives\' code objects, once',
              s['uncompressed_bytes'] == bytes_in_archives, (s['uncompressed_bytes'], bytes_in_archives))
    r = kt.ot(['list', '--json', inst], root)
    check('list --json of the install: exit 0', r.returncode == 0, r.stderr)
    if r.returncode == 0:
        files = json.loads(r.stdout)['files']
        total = sum(f['entries'] for f in files)
        check('list of a directory: files[].entries count each archive\'s entries once', total == n_in_archives,
              (files, n_in_archives))
    # Alone, the library counts what the archives its marker's pattern k_@GFXARCH@.kpack finds hold for it
    # (k_gfx906 and k_gfx1100; not k_multi, whose name no GPU's loader asks for, nor z_multi).
    n_found = sum(len(stored(d, toc(d))) for n, d in archives.items() if n.startswith('k_gfx'))
    r = kt.ot(['size', '--json', os.path.join(inst, 'lib', 'libk.so.1')], root)
    check('size of the kpack\'d library alone still counts what its archives hold for it',
          r.returncode == 0 and json.loads(r.stdout)['entries'] == n_found, (n_found, r.stdout + r.stderr))

    # --- prune --keep gfx1100 of the tree.
    out = os.path.join(root, 'out')
    r = kt.ot(['prune', '--keep', 'gfx1100', inst, '-o', out], root)
    check('prune --keep gfx1100 of a kpack\'d install: exit 0', r.returncode == 0, r.stdout + r.stderr)
    okp = os.path.join(out, '.kpack')
    check('the archive of gfx906 alone is left out', not os.path.exists(os.path.join(okp, 'k_gfx906.kpack')),
          os.listdir(okp) if os.path.isdir(okp) else None)
    check('the archive of gfx1100 alone is copied unchanged',
          harness.read(os.path.join(okp, 'k_gfx1100.kpack')) == archives['k_gfx1100.kpack'])
    check('the kpack\'d library is copied unchanged', harness.read(os.path.join(out, 'lib', 'libk.so.1')) == lib_in)
    for name in ('k_multi.kpack', 'z_multi.kpack'):
        data = harness.read(os.path.join(okp, name))
        t, t_in = toc(data), toc(archives[name])
        check('%s: gfx_arches keeps gfx1100 only' % name, t['gfx_arches'] == ['gfx1100'], t['gfx_arches'])
        want_keys = {KN + '#0': ['gfx1100'], KN + '#1': ['gfx1100']}
        got_keys = {b: list(a) for b, a in t['toc'].items()}
        check('%s: the TOC holds gfx1100\'s entries only, binary keys in order' % name,
              got_keys == want_keys and list(t['toc']) == [KN + '#0', KN + '#1'], got_keys)
        ords = [t['toc'][KN + '#%d' % i]['gfx1100']['ordinal'] for i in range(2)]
        check('%s: ordinals renumbered 0..N-1 in the original order' % name, ords == [0, 1], ords)
        check('%s: group_name kept' % name, t['group_name'] == t_in['group_name'], t['group_name'])
        check('%s: format_version and scheme kept' % name,
              (t['format_version'], t['compression_scheme']) == (t_in['format_version'], t_in['compression_scheme']))
        got = stored(data, t)
        if t['compression_scheme'] == 'none':
            check('%s: blobs count matches' % name, len(t['blobs']) == 2, t['blobs'])
            for i, tu in enumerate(kt.TUS):
                blob = got[(KN + '#%d' % i, 'gfx1100')][1]
                harness.write(os.path.join(root, 'got.co'), blob)
                check('%s: record %d\'s code object is LLVM\'s (cmp)' % (name, i),
                      cmp(os.path.join(root, 'got.co'), os.path.join(work, '%s-gfx1100.co' % tu), root))
                check('%s: original_size is the code object\'s' % name,
                      t['toc'][KN + '#%d' % i]['gfx1100']['original_size'] == len(code[(tu, 'gfx1100')]))
        else:
            before = stored(archives[name], t_in)
            same = all(got[(KN + '#%d' % i, 'gfx1100')][1] == before[(KN + '#%d' % i, 'gfx1100')][1] for i in range(2))
            check('%s: the zstd frames are the input\'s, byte for byte' % name, same)
            check('%s: zstd_offset at 64, zstd_size covers the frames' % name,
                  t['zstd_offset'] == 64 and t['zstd_size'] == 4 + sum(4 + len(got[k][1]) for k in got), t)
    check('k_multi.kpack: gfx_arch_family named the dropped gfx906, now the first kept arch',
          toc(harness.read(os.path.join(okp, 'k_multi.kpack')))['gfx_arch_family'] == 'gfx1100')
    check('z_multi.kpack: gfx_arch_family naming no architecture is kept',
          toc(harness.read(os.path.join(okp, 'z_multi.kpack')))['gfx_arch_family'] == 'gfx9X')

    # --- --dry-run --json: its figures are the bytes the real prune removed.
    r = kt.ot(['prune', '--keep', 'gfx1100', '--dry-run', '--json', inst], root)
    check('prune --dry-run --json: exit 0', r.returncode == 0, r.stderr)
    if r.returncode == 0:
        j = json.loads(r.stdout)
        check('dry-run JSON: schema offloadtool-prune-tree/1', j['schema'] == 'offloadtool-prune-tree/1', j['schema'])
        def tree_bytes(d):
            return sum(os.path.getsize(os.path.join(p, f)) for p, _, fs in os.walk(d) for f in fs)
        check('dry-run JSON: size_before and size_after are the trees\' bytes',
              (j['size_before'], j['size_after']) == (tree_bytes(inst), tree_bytes(out)),
              (j['size_before'], j['size_after'], tree_bytes(inst), tree_bytes(out)))
        rows = {os.path.relpath(f['path'], inst): f for f in j['files']}
        row = rows.get('.kpack/k_gfx906.kpack', {})
        check('dry-run JSON: the gfx906 archive removed, its bytes saved',
              row.get('action') == 'remove' and row.get('saved') == len(archives['k_gfx906.kpack']), row)
        for name in ('k_multi.kpack', 'z_multi.kpack'):
            row = rows.get('.kpack/' + name, {})
            check('dry-run JSON: %s pruned to the bytes written' % name,
                  row.get('action') == 'prune' and row.get('size_after') == os.path.getsize(os.path.join(okp, name)), row)
        dropped = {d['target']: d for d in j['dropped']}
        want = sum(len(code[(t, 'gfx906')]) for t in kt.TUS) * 3  # three archives hold gfx906's two code objects
        check('dry-run JSON: dropped[] names gfx906, its 6 entries and their bytes',
              list(dropped) == ['gfx906'] and dropped['gfx906']['entries'] == 6 and dropped['gfx906']['bytes'] == want,
              j['dropped'])
        check('dry-run JSON: the kpack\'d library is not pruned', 'lib/libk.so.1' not in rows
              or rows['lib/libk.so.1']['action'] == 'copy', rows.get('lib/libk.so.1'))

    # --- --keep gfx906 removes the gfx1100 archive, and a target that names no arch of an archive.
    out2 = os.path.join(root, 'out2')
    r = kt.ot(['prune', '--drop', 'gfx1100', inst, '-o', out2], root)
    check('prune --drop gfx1100: exit 0, the gfx1100 archive left out, the multi ones hold gfx906',
          r.returncode == 0 and not os.path.exists(os.path.join(out2, '.kpack', 'k_gfx1100.kpack'))
          and toc(harness.read(os.path.join(out2, '.kpack', 'z_multi.kpack')))['gfx_arches'] == ['gfx906'],
          r.stdout + r.stderr)

    # --- A .tar.gz package of the install.
    pkg = os.path.join(root, 'inst.tar.gz')
    with tarfile.open(pkg, 'w:gz', format=tarfile.GNU_FORMAT) as tf:
        for p in sorted(['lib/libk.so.1'] + ['.kpack/' + n for n in archives]):
            data = harness.read(os.path.join(inst, p))
            ti = tarfile.TarInfo('inst/' + p)
            ti.size = len(data)
            ti.mode = 0o644
            tf.addfile(ti, io.BytesIO(data))
    opkg = os.path.join(root, 'out.tar.gz')
    r = kt.ot(['prune', '--keep', 'gfx1100', pkg, '-o', opkg], root)
    check('prune of a .tar.gz holding the install: exit 0', r.returncode == 0, r.stdout + r.stderr)
    if r.returncode == 0:
        with tarfile.open(opkg, 'r:gz') as tf:
            members = {m.name: tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}
        check('package: the gfx906 archive left out', 'inst/.kpack/k_gfx906.kpack' not in members, sorted(members))
        same = all(members.get('inst/.kpack/' + n) == harness.read(os.path.join(okp, n))
                   for n in ('k_gfx1100.kpack', 'k_multi.kpack', 'z_multi.kpack'))
        check('package: the archives pruned as in the tree', same, sorted(members))
        check('package: the kpack\'d library unchanged', members.get('inst/lib/libk.so.1') == lib_in)

    # --- --in-place: the tree -o gave.
    ip = os.path.join(root, 'ip')
    shutil.copytree(inst, ip)
    r = kt.ot(['prune', '--keep', 'gfx1100', ip, '--in-place'], root)
    def files_of(d):
        return {os.path.relpath(os.path.join(p, f), d): harness.read(os.path.join(p, f))
                for p, _, fs in os.walk(d) for f in fs}
    check('prune --in-place of a kpack\'d install gives the tree -o gave',
          r.returncode == 0 and files_of(ip) == files_of(out), r.stdout + r.stderr)

    # --- Per-GPU files follow the GPUs kpack archives hold: a Tensile index of gfx906, a GPU whose code
    # lies only in the archives, goes with it (per_gpu_rule.h: "some device entry of the input is of T").
    tens = os.path.join(root, 'tens')
    shutil.copytree(inst, tens)
    tl = os.path.join(tens, 'lib', 'rocblas', 'library')
    os.makedirs(tl)
    shutil.copyfile(os.path.join(work, 'a-gfx1100.co'), os.path.join(tl, 'Kernels.so-000-gfx1100.hsaco'))
    harness.write(os.path.join(tl, 'TensileLibrary_lazy_gfx906.dat'), b'index of gfx906 kernels\n')
    harness.write(os.path.join(tl, 'TensileLibrary_lazy_gfx1100.dat'), b'index of gfx1100 kernels\n')
    r = kt.ot(['prune', '--keep', 'gfx1100', tens, '-o', os.path.join(root, 'tens-out')], root)
    tol = os.path.join(root, 'tens-out', 'lib', 'rocblas', 'library')
    check('a Tensile file of gfx906 (whose code only kpack archives hold) is left out, gfx1100\'s kept',
          r.returncode == 0 and not os.path.exists(os.path.join(tol, 'TensileLibrary_lazy_gfx906.dat'))
          and os.path.exists(os.path.join(tol, 'TensileLibrary_lazy_gfx1100.dat')), r.stdout + r.stderr)

    # --- Arch keys with features, matched by the one target rule; entry metadata kept.
    feat = os.path.join(root, 'feat')
    os.makedirs(os.path.join(feat, '.kpack'))
    data = generate.kpack(('f', 'gfx906:xnack-', ['gfx906:xnack-', 'gfx1100'],
                           [('%s#0' % KN, 'gfx906:xnack-', code[('a', 'gfx906')]),
                            ('%s#0' % KN, 'gfx1100', code[('a', 'gfx1100')])]), False)
    at, = struct.unpack_from('<Q', data, 8)
    t = toc(data)
    for arch, e in t['toc'][KN + '#0'].items():
        e['metadata'] = {'target': 'hipv4-amdgcn-amd-amdhsa--' + arch, 'source_prefix': 'lib'}
    data = data[:at] + msgpack.packb(t, use_bin_type=True)
    harness.write(os.path.join(feat, '.kpack', 'f.kpack'), data)
    fout = os.path.join(root, 'feat-out')
    r = kt.ot(['prune', '--keep', 'gfx906', feat, '-o', fout], root)
    ok = r.returncode == 0
    if ok:
        t2 = toc(harness.read(os.path.join(fout, '.kpack', 'f.kpack')))
        check('--keep gfx906 keeps the gfx906:xnack- entry (the target leaves xnack unspecified)',
              t2['gfx_arches'] == ['gfx906:xnack-'] and list(t2['toc'][KN + '#0']) == ['gfx906:xnack-'], t2)
        check('the kept entry\'s metadata is kept',
              t2['toc'][KN + '#0']['gfx906:xnack-'].get('metadata') == t['toc'][KN + '#0']['gfx906:xnack-']['metadata'], t2)
        check('gfx_arch_family, an arch that stays, is kept', t2['gfx_arch_family'] == 'gfx906:xnack-', t2)
    check('prune --keep gfx906 of an archive with gfx906:xnack- keys: exit 0', ok, r.stdout + r.stderr)
    fout2 = os.path.join(root, 'feat-out2')
    r = kt.ot(['prune', '--keep', 'gfx906:xnack+', feat, '-o', fout2], root)
    check('--keep gfx906:xnack+: the xnack- code is not loadable there, the archive left out',
          r.returncode == 0 and not os.path.exists(os.path.join(fout2, '.kpack', 'f.kpack')), r.stdout + r.stderr)

    # --- AMD's test archives pruned alone, byte for byte what AMD's writer writes for the kept kernels
    # (generate.py reproduces AMD's writer: its frames are python-zstandard's level 3, ours copied).
    for name, spec, zstd, keep in (('test_noop.kpack', generate.NOOP, False, 'gfx906'),
                                   ('test_zstd.kpack', generate.ZSTD, True, 'gfx1100')):
        group, family, arches, kernels = spec
        want = generate.kpack((group, family, [a for a in arches if a == keep], [k for k in kernels if k[1] == keep]), zstd)
        got_path = os.path.join(root, 'pruned-' + name)
        r = kt.ot(['prune', '--keep', keep, os.path.join(harness.DATA, 'kpack', name), '-o', got_path], root)
        check('prune --keep %s %s: AMD\'s writer\'s bytes for the kept kernels' % (keep, name),
              r.returncode == 0 and harness.read(got_path) == want, r.stdout + r.stderr)

    # --- A damaged archive in a tree: one line naming it and the offset, exit 1, nothing written.
    bad = os.path.join(root, 'bad')
    os.makedirs(bad)
    data = bytearray(archives['k_multi.kpack'])
    struct.pack_into('<Q', data, 8, len(data) + 100)
    harness.write(os.path.join(bad, 'x.kpack'), bytes(data))
    r = kt.ot(['prune', '--keep', 'gfx1100', bad, '-o', os.path.join(root, 'bad-out')], root)
    check('prune of a tree with a damaged archive: exit 1, one line with the file and offset, nothing written',
          r.returncode == 1 and r.stderr.count('\n') == 1 and 'x.kpack' in r.stderr and 'at offset 0x8' in r.stderr
          and not os.path.exists(os.path.join(root, 'bad-out')), r.stderr)

    # --- An archive given alone: all of it dropped is an error, as for any container.
    r = kt.ot(['prune', '--keep', 'gfx1100', os.path.join(inst, '.kpack', 'k_gfx906.kpack'), '-o',
               os.path.join(root, 'alone.kpack')], root)
    check('prune of an archive alone whose architectures all go: exit 1, nothing written',
          r.returncode == 1 and not os.path.exists(os.path.join(root, 'alone.kpack')), r.stderr)


if __name__ == '__main__':
    sys.exit(harness.run_suite('kpack-prune', cases, needs=[harness.CLANGXX, harness.LLVM_BUNDLER, 'objcopy', 'cmp']))
