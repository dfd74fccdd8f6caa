#!/usr/bin/env python3
"""`offloadtool unbundle INPUT --extract-dir DIR` over every container the
walker reads, from real inputs: a HIP object and shared library by clang 19
(gfx906, gfx90a:xnack+), a library linked from two HIP objects (two bundles in
its .hip_fatbin: the same IDs twice), an object bundle by
clang-offload-bundler-19 -type=o, a compressed (--offload-compress) library,
an ar archive, a tar.gz, a .deb (dpkg-deb) and a multi-block tar.xz (read
with --threads 2) of the library.

Each written file must be byte for byte the range `list --json` names in the
file (offset/size); for entries without one (inside a package member or a
compressed bundle) the bytes extracted from the plain library, or what
clang-offload-bundler-19 -unbundle gives of the compressed bundle; the host
entry of an object bundle is what `unbundle -t host...=FILE` writes (the
object without its bundle sections). Names follow the rule written out here,
not taken from the tool: LLVM's device-archive member name
<stem>-<bundle id><stem><ext> (':' as '_', .bc for gfx IDs) of the innermost
archive or package member, else of the input's file name, duplicates numbered
x.1.bc, x.2.bc in file order. (The ar and bundle inputs LLVM's bundler reads
are compared with LLVM's device archives in bundler_archive_diff_test.py.)"""
import io
import json
import os
import sys
import tarfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import LLVM_BUNDLER, OT, Case, check  # noqa: E402
from list_test import DPKG_DEB, OBJCOPY, READELF, SOURCE, build, make_deb, unbundled  # noqa: E402

E = 'offloadtool unbundle: error: '
HOST = 'host-x86_64-unknown-linux-gnu-'
G906 = 'hip-amdgcn-amd-amdhsa--gfx906'
# A second translation unit: other kernel names, so that both objects link into one library.
SOURCE2 = SOURCE.replace('void k(', 'void j(').replace('void k2(', 'void j2(')


def device_name(member, bundle_id):
    """LLVM's device-archive member name for `bundle_id` found in `member`."""
    stem, ext = os.path.splitext(os.path.basename(member))
    if 'gfx' in bundle_id:
        ext = '.bc'
    elif 'sm_' in bundle_id:
        ext = '.cubin'
    return (stem + '-' + bundle_id + stem + ext).replace(':', '_')


def numbered(names):
    """`names` with the second x.bc as x.1.bc, the third as x.2.bc, ..."""
    taken, out = set(), []
    for n in names:
        cand, k = n, 0
        stem, ext = os.path.splitext(n)
        while cand in taken:
            k += 1
            cand = '%s.%d%s' % (stem, k, ext)
        taken.add(cand)
        out.append(cand)
    return out


def listing(c, name):
    """list --json's entries of `name` in the case's folder."""
    r = harness.run([OT, 'list', '--json', name], cwd=c.dir, text=True)
    check('list --json %s' % name, r.returncode == 0, r.stderr)
    return json.loads(r.stdout)['entries'] if r.returncode == 0 else []


def extract(c, name, out, *flags):
    """unbundle NAME --extract-dir OUT -v: (exit code, [(file name, member, id)], stderr)."""
    rc, stdout, err = c.run(name, '--extract-dir', out, '-v', *flags)
    rows = []
    for line in stdout.splitlines():
        path, member, ident = line.split('\t')
        check('%s: -v names a file in %s' % (name, out), os.path.dirname(path) == out, line)
        rows.append((os.path.basename(path), member, ident))
    return rc, rows, err


def check_extracted(c, name, out, rows, members, want):
    """The files of `rows` are all DIR holds, named by the rule after `members`,
    and hold the bytes `want` (in file order)."""
    got = sorted(os.listdir(c.path(out))) if os.path.isdir(c.path(out)) else None
    check('%s: DIR holds the files -v names, nothing else (no staging folder)' % name,
          got == sorted(r[0] for r in rows), (got, rows))
    names = numbered([device_name(m, r[2]) for m, r in zip(members, rows)])
    check('%s: names by the device-archive rule, duplicates numbered in file order' % name,
          [r[0] for r in rows] == names, '\n'.join('%s  want %s' % (r[0], n) for r, n in zip(rows, names)))
    check('%s: one file per entry' % name, len(rows) == len(want), (rows, len(want)))
    for r, w in zip(rows, want):
        check('%s: %s holds the entry\'s bytes' % (name, r[0]), c.read(os.path.join(out, r[0])) == w, r)


def in_file_cases(root, d, built):
    """Object, library, two-bundle library, object bundle, ar: every entry's bytes at list's offset/size."""
    harness.write(os.path.join(d, 'j.hip'), SOURCE2)
    cc = [harness.CLANG, '-x', 'hip', '-nogpulib', '-nogpuinc', '-fPIC', '-c', 'j.hip', '-o', 'j.o',
          '--offload-arch=gfx906', '--offload-arch=gfx90a:xnack+']
    harness.run(cc, cwd=d, check=True)
    harness.run([harness.CLANG, '-shared', '-fuse-ld=lld', 'k.o', 'j.o', '-o', 'libkj.so'], cwd=d, check=True)
    files = dict(built, **{'libkj.so': harness.read(os.path.join(d, 'libkj.so'))})
    c = Case(root, 'unbundle', files)
    dev = unbundled(c.dir, 'libk.so', ['hipv4-amdgcn-amd-amdhsa--gfx906'])['hipv4-amdgcn-amd-amdhsa--gfx906']
    c.put('dev.co', dev)
    harness.run([LLVM_BUNDLER, '-type=o', '-targets=host-x86_64-unknown-linux-gnu,' + G906, '-input=k.o',
                 '-input=dev.co', '-output=ob.o'], cwd=c.dir, check=True)
    harness.run([harness.llvm('llvm-ar'), 'rc', 'libk.a', 'k.o', 'ob.o'], cwd=c.dir, check=True)
    for name in ('k.o', 'libk.so', 'libkj.so', 'ob.o', 'libk.a'):
        entries = listing(c, name)
        out = name + '.d'
        rc, rows, err = extract(c, name, out)
        check('%s: extracts' % name, rc == 0 and err == '', (rc, err))
        check('%s: every entry list finds, in its order' % name, [r[2] for r in rows] == [e['id'] for e in entries],
              (rows, entries))
        data = c.read(name)
        members = [e['path'][1] if name.endswith('.a') else name for e in entries]
        want = [data[e['offset']:e['offset'] + e['size']] for e in entries]
        host_section = [i for i, e in enumerate(entries) if e['id'] == HOST and e['size'] == 1 and
                        e['path'][-1] == '__CLANG_OFFLOAD_BUNDLE__ sections']
        for i in host_section:
            # the object without its bundle sections, as `unbundle -t host=FILE` writes it
            obj = 'obj.o'
            if name.endswith('.a'):
                harness.run([harness.llvm('llvm-ar'), 'x', name, entries[i]['path'][1]], cwd=c.dir, check=True)
                obj = entries[i]['path'][1]
            else:
                c.put(obj, data)
            r = harness.run([OT, 'unbundle', obj, '-t', 'host-x86_64-unknown-linux-gnu=host.o'], cwd=c.dir, text=True)
            check('%s: unbundle -t host of the object' % name, r.returncode == 0, r.stderr)
            want[i] = c.read('host.o')
            sections = harness.run([READELF, '-S', '-W', 'host.o'], cwd=c.dir, text=True, check=True).stdout
            check('%s: the host object lost its bundle sections' % name,
                  '__CLANG_OFFLOAD_BUNDLE__' not in sections and '.hip_fatbin' in sections, sections)
        check('%s: -v: the member column is the archive member, empty for the file itself' % name,
              [r[1] for r in rows] == (members if name.endswith('.a') else [''] * len(rows)), rows)
        check_extracted(c, name, out, rows, members, want)
    check('libkj.so: its .hip_fatbin holds two bundles', len({tuple(e['path']) for e in listing(c, 'libkj.so')}) == 2)
    check('ob.o: the object bundle\'s host entry is there', any(e['id'] == HOST and e['size'] == 1
                                                                 for e in listing(c, 'ob.o')))

    # Standard input: named after "stdin".
    entries = listing(c, 'libk.so')
    rc, stdout, err = c.run('-', '--extract-dir', 'in.d', '-v', stdin=c.read('libk.so'))
    rows = [tuple([os.path.basename(p)] + rest) for p, *rest in (line.split('\t') for line in stdout.splitlines())]
    check('stdin: extracts', rc == 0 and err == '', (rc, err))
    check_extracted(c, 'stdin', 'in.d', rows, ['stdin'] * len(entries),
                    [built['libk.so'][e['offset']:e['offset'] + e['size']] for e in entries])

    # Target selection (LLVM's rules: hip serves hipv4, gfx90a:xnack+ only gfx90a:xnack+).
    rc, rows, err = extract(c, 'libkj.so', 'sel.d', '--target', 'hip-amdgcn-amd-amdhsa--gfx90a:xnack+')
    check('--target selects the compatible entries of both bundles', rc == 0 and err == '' and
          [r[0] for r in rows] == numbered([device_name('libkj.so', 'hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+')] * 2),
          (rc, rows, err))
    rc, rows, err = extract(c, 'libk.so', 'none.d', '--target', G906, '--target', 'hip-amdgcn-amd-amdhsa--gfx1100')
    check('a target finding nothing: exit 1, nothing written (not even the folder)', rc == 1 and rows == [] and
          err == E + "no compatible code object found for the target 'hip-amdgcn-amd-amdhsa--gfx1100' in libk.so\n"
          and not os.path.exists(c.path('none.d')), (rc, rows, err))
    rc, rows, err = extract(c, 'libk.so', 'miss.d', '--target', 'hip-amdgcn-amd-amdhsa--gfx1100', '--allow-missing')
    check('--allow-missing: a target finding nothing is no error', rc == 0 and rows == [] and err == '', (rc, err))


def package_cases(root, d, built):
    """tar.gz, .deb: the files extracted from the plain library, named after the member."""
    so = built['libk.so']
    c = Case(root, 'unbundle', {'libk.so': so})
    entries = listing(c, 'libk.so')
    plain = [so[e['offset']:e['offset'] + e['size']] for e in entries]
    deb = make_deb(d, so)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w:gz') as t:
        for n, data in (('README', b'x'), ('lib/libk.so', so)):
            info = tarfile.TarInfo(n)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode='w') as t:
        info = tarfile.TarInfo('lib/libk.so')
        info.size = len(so)
        t.addfile(info, io.BytesIO(so))
    # several xz blocks, as dpkg-deb and xz -T write them: --threads 2 decodes them side by side
    txz = harness.run(['xz', '-T2', '--block-size=16KiB', '-c'], stdin=tar.getvalue(), check=True).stdout
    c = Case(root, 'unbundle', {'libk.deb': deb, 'k.tar.gz': buf.getvalue(), 'k.tar.xz': txz})
    listed = harness.run(['xz', '--robot', '--list', c.path('k.tar.xz')], text=True, check=True).stdout
    blocks = int([l for l in listed.splitlines() if l.startswith('file')][0].split('\t')[2])
    check('k.tar.xz: %d xz blocks' % blocks, blocks > 1, listed)
    for name, member, flags in (('libk.deb', './usr/lib/libk.so.1', ()), ('k.tar.gz', 'lib/libk.so', ()),
                                ('k.tar.xz', 'lib/libk.so', ('--threads', '2'))):
        rc, rows, err = extract(c, name, name + '.d', *flags)
        check('%s: extracts' % name, rc == 0 and err == '', (rc, err))
        check('%s: -v: the member column is the package member' % name,
              [r[1] for r in rows] == [member] * len(entries), rows)
        check('%s: the IDs of the library, in its order' % name, [r[2] for r in rows] == [e['id'] for e in entries])
        check_extracted(c, name, name + '.d', rows, [member] * len(entries), plain)

    # A damaged package: one error line naming it, nothing left in DIR.
    c = Case(root, 'unbundle', {'cut.deb': deb[:len(deb) - 200]})
    rc, out, err = c.run('cut.deb', '--extract-dir', 'x')
    left = os.listdir(c.path('x')) if os.path.isdir(c.path('x')) else []
    check('a truncated .deb: one error line naming it, nothing in DIR', rc == 1 and out == '' and
          err.startswith(E + 'cut.deb') and err.count('\n') == 1 and left == [], (rc, out, err, left))


def compressed_cases(root, d):
    """--offload-compress: the entries decompressed, as clang-offload-bundler-19 -unbundle gives them."""
    built = build(d, ['--offload-compress'])
    c = Case(root, 'unbundle', {'libkc.so': built['libk.so']})
    entries = listing(c, 'libkc.so')
    check('libkc.so: its entries are compressed', entries and all(e['compressed'] for e in entries), entries)
    ref = unbundled(c.dir, 'libkc.so', [e['id'] for e in entries])
    rc, rows, err = extract(c, 'libkc.so', 'x')
    check('libkc.so: extracts', rc == 0 and err == '', (rc, err))
    check_extracted(c, 'libkc.so', 'x', rows, ['libkc.so'] * len(entries), [ref[e['id']] for e in entries])


def failure_cases(root):
    """A failing extraction into a folder that did not exist leaves no folder behind."""
    c = Case(root, 'unbundle', {'junk.bin': b'no device code here'})
    r = harness.run([OT, 'unbundle', '--extract-dir', 'new', '-t', 'hipv4-amdgcn-amd-amdhsa--gfx90a', 'junk.bin'],
                    cwd=c.dir, text=True)
    check('a failing --extract-dir leaves no folder it created', r.returncode == 1 and
          not os.path.exists(os.path.join(c.dir, 'new')), (r.returncode, r.stderr, os.listdir(c.dir)))
    os.mkdir(os.path.join(c.dir, 'there'))
    r = harness.run([OT, 'unbundle', '--extract-dir', 'there', '-t', 'hipv4-amdgcn-amd-amdhsa--gfx90a', 'junk.bin'],
                    cwd=c.dir, text=True)
    check('a failing --extract-dir keeps a folder that was there, empty', r.returncode == 1 and
          os.listdir(os.path.join(c.dir, 'there')) == [], (r.returncode, r.stderr))


def cases(root):
    failure_cases(root)
    d = harness.Folder(root).dir
    built = build(d)
    in_file_cases(root, d, built)
    package_cases(root, d, built)
    compressed_cases(root, harness.Folder(root).dir)


if __name__ == '__main__':
    sys.exit(harness.run_suite('extract-dir', cases, needs=[harness.CLANG, LLVM_BUNDLER, READELF, OBJCOPY, DPKG_DEB,
                                                           harness.llvm('llvm-ar')]))
