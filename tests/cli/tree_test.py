"""Directories as inputs: `list`, `size`, `compat verify` and `prune` of an install.

The install is built here by clang (of the release under test), laid out as
ROCm lays out rocBLAS: HIP shared libraries in lib/ (two GPUs each), a
symlink libx.so -> libx.so.1, a hard link, Tensile's bare code objects in
lib/library/ (one per GPU) and nested folders, a file without device code,
names whose byte order differs from a per-folder sort ("lib-extra" sorts
before "lib/"), a folder with mode 0750 and times with nanoseconds. The
references:
  * what each file holds: LLVM's clang-offload-bundler -list of the .hip_fatbin
    section (dumped by llvm-objcopy), llvm-readelf -h of a bare code object;
  * sizes: LLVM's bundler -unbundle of each entry, a bare code object's size;
  * the pruned tree: os.stat and the bytes of the input (cmp), os.readlink,
    st_ino for hard links, LLVM's bundler -list of the pruned libraries;
  * the order: Python's sort of the relative paths as bytes.
"""
import hashlib
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import OT, check, run  # noqa: E402

KERNELS = {
    'x': b'__global__ void kx(int *p) { p[0] = 1; }\nextern "C" int host_x(int v) { return v + 1; }\n',
    'y': b'__global__ void ky(int *p) { p[0] = 2; }\n__global__ void ky2(int *p) { p[1] = 3; }\n',
}
ARCHS = ['gfx906', 'gfx90a']
KEEP, DROP = 'gfx90a', 'gfx906'
MTIME_NS = 981173106123456789  # 2001-02-03 04:05:06.123456789 UTC


def sh(argv, cwd):
    r = run(argv, cwd=cwd, text=True)
    if r.returncode != 0:
        raise RuntimeError('%s: %s' % (' '.join(argv), r.stderr))
    return r.stdout


def build_install(root):
    """root/inst, as described above; returns its path."""
    work = os.path.join(root, 'build')
    os.makedirs(work)
    for name, body in KERNELS.items():
        harness.write(os.path.join(work, name + '.hip'), harness.HIP_PRELUDE + body)
        sh([harness.CLANGXX, '-x', 'hip'] + ['--offload-arch=' + a for a in ARCHS]
           + ['-nogpuinc', '-nogpulib', '-fPIC', '-c', name + '.hip', '-o', name + '.o'], work)
        sh([harness.CLANGXX, '-shared', name + '.o', '-o', 'lib%s.so.1' % name], work)
        for a in ARCHS:
            sh([harness.CLANGXX, '-x', 'hip', '--cuda-device-only', '--no-gpu-bundle-output', '--offload-arch=' + a,
                '-nogpuinc', '-nogpulib', '-c', name + '.hip', '-o', '%s-%s.co' % (name, a)], work)
    inst = os.path.join(root, 'inst')
    lib = os.path.join(inst, 'lib')
    for d in ('lib/library/sub/deep', 'lib-extra', 'share/doc'):
        os.makedirs(os.path.join(inst, d))
    shutil.copyfile(os.path.join(work, 'libx.so.1'), os.path.join(lib, 'libx.so.1'))
    shutil.copyfile(os.path.join(work, 'liby.so.1'), os.path.join(inst, 'lib-extra', 'liby.so.1'))
    os.symlink('libx.so.1', os.path.join(lib, 'libx.so'))
    os.symlink('../nowhere', os.path.join(lib, 'dangling.so'))
    os.link(os.path.join(lib, 'libx.so.1'), os.path.join(lib, 'libx-again.so.1'))
    for a in ARCHS:
        shutil.copyfile(os.path.join(work, 'x-%s.co' % a), os.path.join(lib, 'library', 'TensileLibrary_%s.co' % a))
        shutil.copyfile(os.path.join(work, 'y-%s.co' % a),
                        os.path.join(lib, 'library', 'sub', 'deep', 'Kernels.so-000-%s.hsaco' % a))
    harness.write(os.path.join(inst, 'share', 'doc', 'README'), b'no device code here\n')
    os.chmod(os.path.join(lib, 'libx.so.1'), 0o755)
    os.chmod(os.path.join(inst, 'share', 'doc', 'README'), 0o640)
    os.chmod(os.path.join(inst, 'share'), 0o750)
    # Times with nanoseconds on everything, folders last (filling them set theirs).
    for dirpath, dirs, files in os.walk(inst, topdown=False):
        for n in files:
            p = os.path.join(dirpath, n)
            os.utime(p, ns=(MTIME_NS - 7, MTIME_NS + len(n)), follow_symlinks=False)
        for n in dirs:
            os.utime(os.path.join(dirpath, n), ns=(MTIME_NS, MTIME_NS + 1000 * len(n)), follow_symlinks=False)
    os.utime(inst, ns=(MTIME_NS, MTIME_NS + 5))
    return inst


def walk_items(top):
    """(relative path, lstat) of everything under top, sorted as bytes."""
    out = []
    for dirpath, dirs, files in os.walk(top):
        for n in dirs + files:
            p = os.path.join(dirpath, n)
            out.append((os.path.relpath(p, top), os.lstat(p)))
    return sorted(out, key=lambda x: x[0].encode())


def snapshot(top):
    """Everything observable of a tree: per item its kind, mode, mtime, bytes or link text."""
    snap = {}
    for rel, st in walk_items(top):
        p = os.path.join(top, rel)
        if os.path.islink(p):
            what = ('link', os.readlink(p))
        elif os.path.isdir(p):
            what = ('dir',)
        else:
            what = ('file', hashlib.sha256(harness.read(p)).hexdigest())
        snap[rel] = (what, st.st_mode, st.st_mtime_ns)
    return snap


def llvm_bundle_ids(path, work):
    """LLVM's bundler -list of the .hip_fatbin section of a linked file (in bundle order)."""
    blob = os.path.join(work, os.path.basename(path) + '.hip_fatbin')
    sh([harness.llvm('llvm-objcopy'), '--dump-section', '.hip_fatbin=' + blob, path, os.path.join(work, 'scratch')], work)
    return sh([harness.LLVM_BUNDLER, '-list', '-type=bc', '-input=' + blob], work).split()


def llvm_entry_size(path, bundle_id, work):
    blob = os.path.join(work, os.path.basename(path) + '.hip_fatbin')
    out = os.path.join(work, 'entry.bin')
    sh([harness.LLVM_BUNDLER, '-unbundle', '-type=bc', '-input=' + blob, '-targets=' + bundle_id, '-output=' + out], work)
    return os.path.getsize(out)


def readelf_processor(path):
    line = next(l for l in sh([harness.llvm('llvm-readelf'), '-h', path], None).splitlines()
                if l.strip().startswith('Flags:'))
    return line.split(',')[1].strip()


def reference(inst, work):
    """Per regular file with device code (hard links once, in byte order): [(id or processor, size)]."""
    ref = {}
    seen = set()
    for rel, st in walk_items(inst):
        p = os.path.join(inst, rel)
        if not os.path.isfile(p) or os.path.islink(p) or (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        head = harness.read(p)[:20]
        if head[:4] != b'\x7fELF':
            continue
        if head[18] == 224:  # e_machine EM_AMDGPU: a bare code object
            ref[rel] = [(readelf_processor(p), st.st_size)]
        else:
            # (LLVM 19 cannot unbundle the host entry of a linked file's bundle by its ID: its size is not compared)
            ref[rel] = [(i, None if i.startswith('host-') else llvm_entry_size(p, i, work))
                        for i in llvm_bundle_ids(p, work)]
    return ref


def processor_of(target):
    return target.rsplit('--', 1)[-1] if '--' in target else target


def cases(root):
    inst = build_install(root)
    work = os.path.join(root, 'ref')
    os.makedirs(work)
    ref = reference(inst, work)
    check('the install has the device code it was built with (2 libraries, 4 code objects)', len(ref) == 6, ref)

    # list: the same files and entries as the references, in byte order of the paths.
    r = run([OT, 'list', '--json', 'inst'], cwd=root, text=True)
    listing = json.loads(r.stdout) if r.returncode == 0 else {}
    ours = {}
    for e in listing.get('entries', []):
        rel = os.path.relpath(e['file'], 'inst')
        ours.setdefault(rel, []).append((e['id'] if rel.endswith('.so.1') else e['processor'],
                                         None if e['id'].startswith('host-') else e['size']))
    # (LLVM's -list prints a bundle's IDs in its own order: compared as sets of (ID, size))
    check('list DIR --json names every entry the references name, file by file',
          r.returncode == 0 and {k: sorted(v, key=str) for k, v in ours.items()} == {k: sorted(v, key=str) for k, v in ref.items()},
          '%s\nours %s\nref  %s' % (r.stderr, ours, ref))
    order = [os.path.relpath(f['file'], 'inst') for f in listing.get('files', [])]
    check('files are listed in byte order of their paths (lib-extra before lib/)',
          order == sorted(ref, key=str.encode) and order[0].startswith('lib-extra'), order)
    skipped = [(s['path'], s['kind'], s['target']) for s in listing.get('skipped', [])]
    check('links are reported, not followed: a symlink with its text, the hard link as a link to the first name',
          skipped == [('inst/lib/dangling.so', 'symlink', '../nowhere'),
                      ('inst/lib/libx.so', 'symlink', 'libx.so.1'),
                      ('inst/lib/libx.so.1', 'hard link', 'inst/lib/libx-again.so.1')], skipped)
    r = run([OT, 'list', 'inst/'], cwd=root, text=True)
    check('list DIR/ (text) names files as typed and reports the links on lines of their own',
          r.returncode == 0 and 'inst/lib/libx.so: symbolic link to libx.so.1, not followed\n' in r.stdout
          and 'inst/lib/libx.so.1: hard link to inst/lib/libx-again.so.1, read once\n' in r.stdout
          and 'inst/lib/library/sub/deep/Kernels.so-000-gfx90a.hsaco: 1 entry in 1 container' in r.stdout
          and 'README' not in r.stdout, r.stdout + r.stderr)

    # size: per target, the bytes the references give.
    want = {}
    for entries in ref.values():
        for t, n in entries:
            if not t.startswith('host-'):
                want[processor_of(t)] = want.get(processor_of(t), 0) + n
    r = run([OT, 'size', '--per-file', '--json', 'inst'], cwd=root, text=True)
    sized = json.loads(r.stdout) if r.returncode == 0 else {}
    tree = (sized.get('trees') or [{}])[0]
    got = {}
    for row in tree.get('targets', []):
        if not row['target'].startswith('host-'):
            got[processor_of(row['target'])] = got.get(processor_of(row['target']), 0) + row['file_bytes']
    regular = {(st.st_dev, st.st_ino): st.st_size for rel, st in walk_items(inst)
               if os.path.isfile(os.path.join(inst, rel)) and not os.path.islink(os.path.join(inst, rel))}
    check('size --per-file DIR: bytes per GPU as LLVM unbundles them and the code objects weigh',
          r.returncode == 0 and got == want, '%s\nours %s\nref  %s' % (r.stderr, got, want))
    check('size --per-file DIR: the install\'s files and bytes on disk, hard links once',
          tree.get('files') == len(regular) and tree.get('bytes') == sum(regular.values())
          and tree.get('device_files') == len(ref) and tree.get('symlinks') == 2 and tree.get('hard_links') == 1,
          json.dumps(tree)[:400])

    # compat verify over the directory.
    r = run([OT, 'compat', 'verify', '--json', 'inst'], cwd=root, text=True)
    verified = json.loads(r.stdout) if r.stdout.startswith('{') else {}
    check('compat verify DIR checks each file holding device code, in byte order of the paths',
          r.returncode == 0 and [os.path.relpath(f['file'], 'inst') for f in verified.get('files', [])]
          == sorted(ref, key=str.encode), r.stdout + r.stderr)

    # unbundle --extract-dir DIR: each file's device code, named as for a file given alone.
    # (clang 23's bundles, made by clang-linker-wrapper, say hip-, older ones hipv4-)
    HIPK = 'hip' if harness.RELEASE == '23' else 'hipv4'
    r = run([OT, 'unbundle', '--extract-dir', 'ex', 'inst', '--target', HIPK + '-amdgcn-amd-amdhsa--' + KEEP], cwd=root,
            text=True)
    ex = os.path.join(root, 'ex')
    names = sorted(os.listdir(ex)) if os.path.isdir(ex) else []
    want_names = sorted(['TensileLibrary_%s.co' % KEEP, 'Kernels.so-000-%s.hsaco' % KEEP,
                         'libx-again.so-%s-amdgcn-amd-amdhsa--%slibx-again.so.bc' % (HIPK, KEEP),
                         'liby.so-%s-amdgcn-amd-amdhsa--%sliby.so.bc' % (HIPK, KEEP)])
    check('unbundle --extract-dir DIR: one file per %s entry of every file of the tree' % KEEP,
          r.returncode == 0 and names == want_names, '%s\n%s' % (r.stderr, names))
    same = []
    if names == want_names:
        llvm_entry_size(os.path.join(inst, 'lib-extra/liby.so.1'), HIPK + '-amdgcn-amd-amdhsa--' + KEEP, work)
        same = [harness.read(os.path.join(ex, want_names[3])) == harness.read(os.path.join(work, 'entry.bin')),
                harness.read(os.path.join(ex, 'TensileLibrary_%s.co' % KEEP))
                == harness.read(os.path.join(inst, 'lib/library/TensileLibrary_%s.co' % KEEP))]
    check('the extracted files are the bytes LLVM unbundles and the code object files', same == [True, True], same)

    # A directory without device code is the error a file without any gives.
    os.makedirs(os.path.join(root, 'empty', 'd'))
    harness.write(os.path.join(root, 'empty', 'd', 'f.txt'), b'text\n')
    for applet in (['list'], ['size']):
        r = run([OT] + applet + ['empty'], cwd=root, text=True)
        check('%s of a directory without device code: exit 1, one line naming it' % applet[0],
              r.returncode == 1 and r.stderr == 'offloadtool %s: error: empty: no device code found (no offload bundle, '
              'compressed bundle, offload binary, NVIDIA fatbin or bundle section, in any archive member)\n' % applet[0],
              r.stderr)

    before = snapshot(inst)
    # prune --dry-run: nothing written, the report names what goes.
    r = run([OT, 'prune', '--keep', KEEP, '--dry-run', '--json', 'inst'], cwd=root, text=True)
    report = json.loads(r.stdout) if r.returncode == 0 else {}
    actions = {os.path.relpath(f['path'], 'inst'): f['action'] for f in report.get('files', [])}
    want_actions = {k: ('remove' if DROP in k else 'copy') if not k.endswith('.so.1') else 'prune' for k in ref}
    check('prune --dry-run --json DIR: per file what happens (bare %s code objects removed, libraries pruned)' % DROP,
          r.returncode == 0 and report.get('schema') == 'offloadtool-prune-tree/1' and actions == want_actions
          and snapshot(inst) == before, '%s\n%s' % (r.stderr, actions))
    dropped_bytes = sum(d['bytes'] for d in report.get('dropped', []))
    check('prune --dry-run: the bytes dropped are the %s entries\' bytes the references give' % DROP,
          dropped_bytes == want.get(DROP), '%s vs %s' % (dropped_bytes, want.get(DROP)))

    # prune -o OUTDIR.
    r = run([OT, 'prune', '--keep', KEEP, 'inst', '-o', 'out'], cwd=root, text=True)
    check('prune --keep %s DIR -o OUTDIR: exit 0, nothing said' % KEEP, r.returncode == 0 and r.stderr == '', r.stderr)
    out = os.path.join(root, 'out')
    check('the input is unchanged', snapshot(inst) == before)
    after = snapshot(out) if os.path.isdir(out) else {}
    gone = sorted(set(before) - set(after))
    check('bare code objects of %s are gone, nothing else' % DROP,
          gone == sorted(k for k in ref if DROP in k and not k.endswith('.so.1')), gone)
    changed = sorted(k for k in after if k in before and before[k][0] != after[k][0])
    check('every file but the pruned libraries is byte-identical (and each link keeps its text)',
          changed == ['lib-extra/liby.so.1', 'lib/libx-again.so.1', 'lib/libx.so.1'], changed)
    meta = sorted(k for k in after if k in before and before[k][1:] != after[k][1:])
    check('modes and modification times (ns) of files, links and folders are kept', not meta,
          [(k, before[k][1:], after[k][1:]) for k in meta])
    check('the root folder keeps its mode and times',
          os.stat(out).st_mtime_ns == os.stat(inst).st_mtime_ns and os.stat(out).st_mode == os.stat(inst).st_mode)
    check('the hard link is still one file with two names',
          os.path.exists(os.path.join(out, 'lib/libx.so.1'))
          and os.stat(os.path.join(out, 'lib/libx.so.1')).st_ino == os.stat(os.path.join(out, 'lib/libx-again.so.1')).st_ino)
    check('symlinks are still symlinks with the same target',
          os.path.islink(os.path.join(out, 'lib/libx.so')) and os.readlink(os.path.join(out, 'lib/libx.so')) == 'libx.so.1'
          and os.readlink(os.path.join(out, 'lib/dangling.so')) == '../nowhere')
    pruned = {}
    for rel in ('lib/libx-again.so.1', 'lib-extra/liby.so.1'):
        try:
            pruned[rel] = llvm_bundle_ids(os.path.join(out, rel), work)
        except RuntimeError as e:
            pruned[rel] = str(e)
    check('LLVM\'s bundler lists only the host and %s entries in the pruned libraries' % KEEP,
          all(sorted(v) == sorted(i for i, _ in ref[k] if not i.endswith(DROP)) for k, v in pruned.items()), pruned)

    # --in-place: the same tree as -o.
    shutil.copytree(inst, os.path.join(root, 'ip'), symlinks=True, copy_function=shutil.copy2)
    ip = os.path.join(root, 'ip')
    os.link(os.path.join(ip, 'lib/libx.so.1'), os.path.join(ip, 'lib/libx-again.so.1.tmp'))
    os.replace(os.path.join(ip, 'lib/libx-again.so.1.tmp'), os.path.join(ip, 'lib/libx-again.so.1'))
    for dirpath, dirs, files in os.walk(ip, topdown=False):  # copytree gave the folders new times
        rel = os.path.relpath(dirpath, ip)
        src = os.path.join(inst, rel)
        os.utime(dirpath, ns=(os.stat(src).st_atime_ns, os.stat(src).st_mtime_ns))
    check('the in-place copy starts as the input', snapshot(ip) == before)
    r = run([OT, 'prune', '--keep', KEEP, 'ip', '--in-place'], cwd=root, text=True)
    check('prune --in-place DIR gives the tree -o gave (bytes, links, modes, times)',
          r.returncode == 0 and snapshot(ip) == after, r.stderr)

    # Failures: one line naming the file, exit 1, nothing left behind, the input unchanged.
    def nothing_left(name):
        return sorted(n for n in os.listdir(root) if n.startswith('.'))

    r = run([OT, 'prune', '--keep', KEEP, 'inst', '-o', 'out'], cwd=root, text=True)
    check('an OUTDIR that exists is refused',
          r.returncode == 1 and r.stderr == 'offloadtool prune: error: out: exists: prune of a directory writes a new '
          'one (remove it, or give another name)\n' and snapshot(out) == after, r.stderr)
    r = run([OT, 'prune', '--keep', KEEP, 'inst', '-o', 'inst/lib/slim'], cwd=root, text=True)
    check('an OUTDIR inside the input is refused',
          r.returncode == 1 and r.stderr == 'offloadtool prune: error: inst/lib/slim: lies inside the input directory '
          'inst\n' and snapshot(inst) == before, r.stderr)
    bad = os.path.join(root, 'bad')
    shutil.copytree(inst, bad, symlinks=True)
    lib = harness.read(os.path.join(bad, 'lib-extra/liby.so.1'))
    at = lib.find(b'__CLANG_OFFLOAD_BUNDLE__')
    hostile = bytearray(lib)
    hostile[at + 24:at + 32] = (1000).to_bytes(8, 'little')  # an entry count the section cannot hold
    harness.write(os.path.join(bad, 'lib-extra/liby.so.1'), bytes(hostile))
    bad_before = snapshot(bad)
    r = run([OT, 'prune', '--keep', KEEP, 'bad', '-o', 'bad-out'], cwd=root, text=True)
    check('hostile device code in the tree: exit 1, one line naming the file, no OUTDIR, no temporary folder',
          r.returncode == 1 and r.stderr.startswith('offloadtool prune: error: bad/lib-extra/liby.so.1: ')
          and r.stderr.count('\n') == 1 and not os.path.exists(os.path.join(root, 'bad-out'))
          and not nothing_left(root), r.stderr + str(nothing_left(root)))
    r = run([OT, 'prune', '--keep', KEEP, 'bad', '--in-place'], cwd=root, text=True)
    check('hostile device code in the tree, --in-place: exit 1, one line, the tree unchanged (checked before writing)',
          r.returncode == 1 and r.stderr.startswith('offloadtool prune: error: bad/lib-extra/liby.so.1: ')
          and snapshot(bad) == bad_before, r.stderr)
    r = run([OT, 'list', 'bad'], cwd=root, text=True)
    check('list DIR with a hostile file: the others listed, one error line naming it, exit 1',
          r.returncode == 1 and r.stderr.startswith('offloadtool list: error: bad/lib-extra/liby.so.1: ')
          and r.stderr.count('\n') == 1 and 'bad/lib/libx-again.so.1: 3 entries' in r.stdout, r.stdout + r.stderr)


if __name__ == '__main__':
    sys.exit(harness.run_suite('tree', cases, needs=[harness.CLANGXX, harness.LLVM_BUNDLER, harness.llvm('llvm-objcopy'),
                                                      harness.llvm('llvm-readelf')]))
