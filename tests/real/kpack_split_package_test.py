#!/usr/bin/env python3
"""`offloadtool split` of packages (docs/kpack.md "Splitting"): a package in, a
package out, checked by the tools that read them and against `split` of the
package's files unpacked as a tree (whose rewrite and archives the
kpack-split suites check against AMD's splitter's rules):

  * a .deb (Debian's real librocrand1): dpkg-deb --info and --contents accept
    it; dpkg installs it into a throw-away root and `dpkg --verify` finds every
    file right; `xz -t` accepts its data.tar.xz; every md5sums line matches the bytes
    dpkg-deb -x unpacks (hashlib), and md5sums names every regular file, the
    new archives too; Installed-Size moved by exactly what dpkg-gencontrol's
    rule (ceil(size / 1024) per regular file, 1 per anything else, by lstat)
    says of the unpacked trees before and after; the archives are
    ./usr/.kpack/rand_<arch>.kpack (the library's install prefix, usr) after a
    ./usr/.kpack/ directory member, with the
    library's owner and time, modes 0644 and 0755;
  * tarballs (.tar GNU, .tar.gz, .tar.xz, .tar.zst) holding a HIP library
    made by clang 19: `tar -t` lists them, the compression is the input's,
    Python's tarfile reads the input's members unchanged in order and the new
    ones after them with the library's owner and time; two runs write the same
    bytes;
  * a wheel: Python's zipfile reads it (testzip), every RECORD line's sha256
    (urlsafe base64, unpadded) and size match the member (hashlib), RECORD
    names every member and stays last, the archives just before it;
  * in each, every file equals the same file of `split` of the unpacked
    package as a tree (the rewritten binary, the others, the .kpack archives);
  * refused with one error line, exit 1, nothing written: an rpm, a wheel whose
    RECORD comes before its HIP library, a member name that leaves the folder,
    a member already named as an archive to add, a signed wheel,
    a package without a HIP binary, an existing output, a package among
    several inputs.
"""
import hashlib
import io
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
import prune_package_test as ppt  # noqa: E402  the HIP library, tarballs and wheels it builds
import roc_obj_test as roc  # noqa: E402
from harness import CLANG, CLANGXX, OT, check, read, run, write  # noqa: E402

kib = lambda n: (n + 1023) // 1024  # noqa: E731


def files_of(folder):
    """{relative path: bytes} of the regular files under `folder` (symlinks not followed)."""
    out = {}
    for dirpath, _, names in os.walk(folder):
        for n in names:
            p = os.path.join(dirpath, n)
            if stat.S_ISREG(os.lstat(p).st_mode):
                out[os.path.relpath(p, folder)] = read(p)
    return out


def gencontrol_rule(folder):
    """dpkg-gencontrol's Installed-Size over a tree: ceil(size / 1024) per regular file, 1 per anything else."""
    total = 0
    for dirpath, dirs, names in os.walk(folder):
        for n in dirs + names:
            st = os.lstat(os.path.join(dirpath, n))
            total += kib(st.st_size) if stat.S_ISREG(st.st_mode) else 1
    return total


def tree_split(root, unpacked, name, prefix):
    """`split` of the unpacked package as a tree with its archives in `prefix`/.kpack
    (the install prefix split takes for the package): {relative path: bytes}, or None."""
    out = unpacked + '.split'
    r = run([OT, 'split', unpacked, '-o', out, '--name', name, '--root', prefix], cwd=root, text=True, timeout=600)
    if not check('split of %s unpacked as a tree' % os.path.basename(unpacked), r.returncode == 0, r.stderr):
        return None
    return files_of(out)


def same_as_tree(label, got, want):
    """Every file of the package's output equals the tree split's, and no file is missing or extra."""
    if want is None:
        return
    differ = sorted(p for p in want if p in got and got[p] != want[p])
    check('%s: the same files as split of the unpacked tree (the binary, the others, the .kpack archives)' % label,
          sorted(got) == sorted(want) and not differ and any('.kpack/' in p for p in got),
          'only in the package: %s; only in the tree: %s; differ: %s' %
          (sorted(set(got) - set(want)), sorted(set(want) - set(got)), differ))


def refused(name, folder, argv, message):
    """One 'offloadtool split: error: ...' line containing `message`, exit 1, nothing new in `folder`."""
    names = set(os.listdir(folder))
    r = run([OT] + argv, cwd=folder, text=True, timeout=300)
    lines = r.stderr.splitlines()
    check(name, r.returncode == 1 and len(lines) == 1 and lines[0].startswith('offloadtool split: error: ')
          and message in lines[0] and set(os.listdir(folder)) == names and not r.stdout,
          'rc %s: %r; new: %s' % (r.returncode, r.stderr, sorted(set(os.listdir(folder)) - names)))


# ---------------------------------------------------------------------------
# The .deb

def deb_body(root):
    deb = roc.cached_deb('librocrand1')
    if deb is None:
        return
    d = os.path.join(root, 'deb')
    os.makedirs(d)
    shutil.copyfile(deb, os.path.join(d, 'in.deb'))
    r = run([OT, 'split', 'in.deb', '-o', 'out.deb', '--name', 'rand'], cwd=d, text=True, timeout=600)
    if not check('split of librocrand1 .deb: exit 0', r.returncode == 0 and not r.stderr, r.stderr):
        return
    out = os.path.join(d, 'out.deb')
    info = run(['dpkg-deb', '--info', out], text=True)
    check('dpkg-deb --info accepts the package', info.returncode == 0, info.stderr)
    a, b = ppt.deb_listing(os.path.join(d, 'in.deb')), ppt.deb_listing(out)
    lib = [n for n in a if n.endswith('librocrand.so.1.1')]
    new = [n for n in b if n not in a]
    arches = ['gfx1030', 'gfx803', 'gfx900:xnack-', 'gfx906:xnack-', 'gfx908:xnack-', 'gfx90a:xnack+', 'gfx90a:xnack-']
    # The archives go to the install prefix of the library (usr/lib/x86_64-linux-gnu/...): /usr/.kpack.
    want_new = ['./usr/.kpack/'] + ['./usr/.kpack/rand_%s.kpack' % g for g in arches]
    check('dpkg-deb --contents: the members as they were, then ./usr/.kpack/ and an archive per architecture',
          list(b) == list(a) + want_new and len(lib) == 1
          and all(a[n][:2] + a[n][3:] == b[n][:2] + b[n][3:] for n in a),
          'new: %s' % new)
    if len(lib) == 1 and list(b)[len(a):] == want_new:
        check('dpkg-deb --contents: the new members have the library\'s owner and time, modes 0755 and 0644',
              b['./usr/.kpack/'][0] == 'drwxr-xr-x' and all(b[n][0] == '-rw-r--r--' for n in want_new[1:])
              and all(b[n][1] == a[lib[0]][1] and b[n][3] == a[lib[0]][3] for n in want_new), [b[n] for n in want_new])
    ar = os.path.join(d, 'ar')
    os.makedirs(ar)
    run(['ar', 'x', out], cwd=ar, check=True)
    check('the package\'s data.tar.xz passes xz -t', run(['xz', '-t', os.path.join(ar, 'data.tar.xz')]).returncode == 0)

    unpacked_in, unpacked_out, control = (os.path.join(d, x) for x in ('in', 'out', 'control'))
    run(['dpkg-deb', '-x', os.path.join(d, 'in.deb'), unpacked_in], check=True)
    run(['dpkg-deb', '-x', out, unpacked_out], check=True)
    run(['dpkg-deb', '-e', out, control], check=True)
    got = files_of(unpacked_out)
    lines = read(os.path.join(control, 'md5sums')).decode().splitlines()
    sums = {ln[34:]: ln[:32] for ln in lines}
    bad = sorted(p for p, s in sums.items() if p not in got or hashlib.md5(got[p]).hexdigest() != s)
    check('md5sums: every line matches the unpacked file (hashlib), every regular file has a line',
          not bad and sorted(sums) == sorted(got) and len(lines) == len(sums)
          and all(('usr/.kpack/rand_%s.kpack' % g) in sums for g in arches), 'wrong: %s; missing: %s' %
          (bad, sorted(set(got) - set(sums))))

    def installed_size(deb):
        return int(run(['dpkg-deb', '-f', deb, 'Installed-Size'], text=True, check=True).stdout)
    moved = installed_size(out) - installed_size(os.path.join(d, 'in.deb'))
    rule = gencontrol_rule(unpacked_out) - gencontrol_rule(unpacked_in)
    check('Installed-Size moved as dpkg-gencontrol\'s rule says of the trees (%d KiB)' % rule, moved == rule,
          'field moved by %d' % moved)
    same_as_tree('.deb', got, tree_split(d, unpacked_in, 'rand', 'usr'))

    # dpkg installs it into a throw-away root and verifies every md5sum, the archives' too.
    dpkg_root = ppt.dpkg_install(d, out, 'split')
    check('dpkg installed the archives at /usr/.kpack, the library\'s install prefix (not /.kpack)',
          sorted(os.listdir(os.path.join(dpkg_root, 'usr', '.kpack'))) == sorted('rand_%s.kpack' % g for g in arches)
          and not os.path.exists(os.path.join(dpkg_root, '.kpack'))
          if os.path.isdir(os.path.join(dpkg_root, 'usr', '.kpack')) else False)


# ---------------------------------------------------------------------------
# Tarballs

MAGIC = {None: None, 'gzip': b'\x1f\x8b', 'xz': b'\xfd7zXZ', 'zstd': b'\x28\xb5\x2f\xfd'}
TARS = [('k.tar', None), ('k.tar.gz', 'gzip'), ('k.tar.xz', 'xz'), ('k.tar.zst', 'zstd')]
# opt/k/lib/libk.so.1: the install prefix is opt/k.
NEW_TAR = ['./opt/k/.kpack', './opt/k/.kpack/k_gfx906.kpack', './opt/k/.kpack/k_gfx90a.kpack']


def tar_body(root, payload):
    d = os.path.join(root, 'tar')
    os.makedirs(d)
    for name, compress in TARS:
        ppt.make_tar(os.path.join(d, name.rsplit('.', 1)[0] if compress else name), payload, tarfile.GNU_FORMAT,
                     compress)
        out = 'out-' + name
        r = run([OT, 'split', name, '-o', out, '--name', 'k'], cwd=d, text=True, timeout=300)
        if not check('split of %s: exit 0' % name, r.returncode == 0 and not r.stderr, r.stderr):
            continue
        path = os.path.join(d, out)
        t = run(['tar', '-tvf', path], text=True)
        check('%s: tar -t lists it' % name, t.returncode == 0 and '.kpack/k_gfx90a.kpack' in t.stdout, t.stderr)
        if compress:
            check('%s: compressed with %s as the input' % (name, compress), read(path)[:len(MAGIC[compress])] ==
                  MAGIC[compress])
        a, b = ppt.tar_members(os.path.join(d, name)), ppt.tar_members(path)
        lib = [m for m in a if m[0].endswith('libk.so.1')]
        check('%s: the input\'s members in order (names, owners, modes, times), then the .kpack folder and archives' %
              name, [m for m in b if m[0] not in NEW_TAR] == a and [m[0] for m in b[len(a):]] == NEW_TAR,
              [m[0] for m in b])
        if len(lib) == 1 and len(b) == len(a) + 3:
            check('%s: the new members have the library\'s owner and time, modes 0755 and 0644' % name,
                  [m[1:3] for m in b[len(a):]] == [(tarfile.DIRTYPE, 0o755), (tarfile.REGTYPE, 0o644),
                                                   (tarfile.REGTYPE, 0o644)]
                  and all(m[3:8] == lib[0][3:8] for m in b[len(a):]), b[len(a):])
        got_dir = os.path.join(d, out + '.x')
        with ppt.tar_file(path) as tf:
            tf.extractall(got_dir)
        unpacked = os.path.join(d, name + '.x')
        with ppt.tar_file(os.path.join(d, name)) as tf:
            tf.extractall(unpacked)
        same_as_tree(name, files_of(got_dir), tree_split(d, unpacked, 'k', 'opt/k'))
        if name == 'k.tar.gz':
            r = run([OT, 'split', name, '-o', 'again-' + name, '--name', 'k'], cwd=d, timeout=300)
            check('%s: two runs write the same bytes' % name,
                  r.returncode == 0 and read(path) == read(os.path.join(d, 'again-' + name)))


# ---------------------------------------------------------------------------
# The wheel

def record_of(z):
    rec = [n for n in z.namelist() if n.endswith('.dist-info/RECORD')]
    return rec[0] if len(rec) == 1 else None


def wheel_body(root, payload):
    d = os.path.join(root, 'wheel')
    os.makedirs(d)
    name = 'demok-1.0-py3-none-any.whl'
    ppt.make_wheel(os.path.join(d, name), payload)
    r = run([OT, 'split', name, '-o', 'out.whl', '--name', 'k'], cwd=d, text=True, timeout=300)
    if not check('split of a wheel: exit 0', r.returncode == 0 and not r.stderr, r.stderr):
        return
    with zipfile.ZipFile(os.path.join(d, 'out.whl')) as z:
        check('the wheel: zipfile reads every member (testzip)', z.testzip() is None)
        names = z.namelist()
        rec = record_of(z)
        members = {n: z.read(n) for n in names}
    with zipfile.ZipFile(os.path.join(d, name)) as z:
        before = z.namelist()
    # demok/libk.so, in no lib/ folder: the archives stay in the package's folder.
    new = ['demok/.kpack/k_gfx906.kpack', 'demok/.kpack/k_gfx90a.kpack']
    check('the wheel: its members in order, the archives just before RECORD, RECORD last',
          rec is not None and names == before[:-1] + new + [before[-1]] and names[-1] == rec, names)
    if rec is None:
        return
    lines = [ln.split(',') for ln in members[rec].decode().splitlines()]
    listed = {f[0]: f for f in lines}
    bad = sorted(p for p, f in listed.items() if p != rec and
                 (p not in members or f[1] != ppt.record_hash(members[p]) or f[2] != str(len(members[p]))))
    check('RECORD: every line\'s sha256 and size match the member (hashlib), every member has a line',
          not bad and sorted(listed) == sorted(names) and listed[rec][1:] == ['', ''] and len(lines) == len(listed)
          and all(n in listed for n in new), 'wrong: %s; missing: %s' % (bad, sorted(set(names) - set(listed))))
    unpacked = os.path.join(d, 'in.x')
    with zipfile.ZipFile(os.path.join(d, name)) as z:
        z.extractall(unpacked)
    # RECORD aside: the package's lists the archives and the binary's new hash (checked above).
    want = tree_split(d, unpacked, 'k', 'demok')
    if want is not None:
        lib = 'demok/libk.so'
        expected = [ln if not ln.startswith(lib + ',') else '%s,%s,%d' % (lib, ppt.record_hash(members[lib]),
                                                                         len(members[lib]))
                    for ln in want.pop(rec).decode().splitlines()]
        expected += ['%s,%s,%d' % (n, ppt.record_hash(members[n]), len(members[n])) for n in new]
        check('the wheel: RECORD is the input\'s, the binary\'s line changed, then the archives\' lines',
              members[rec].decode().splitlines() == expected, members[rec].decode())
    same_as_tree('wheel', {n: b for n, b in members.items() if n != rec}, want)


# ---------------------------------------------------------------------------
# Refusals

def hostile_body(root, payload):
    d = os.path.join(root, 'hostile')
    os.makedirs(d)
    write(os.path.join(d, 'k.rpm'), b'\xed\xab\xee\xdb' + b'\0' * 200)
    refused('an rpm: refused', d, ['split', 'k.rpm', '-o', 'out.rpm'], 'k.rpm: rpm packages are not rewritten')

    # RECORD before the library: it could not list the archives.
    with zipfile.ZipFile(os.path.join(d, 'late.whl'), 'w') as z:
        z.writestr('demok-1.0.dist-info/RECORD', 'demok/libk.so,%s,%d\ndemok-1.0.dist-info/RECORD,,\n' %
                   (ppt.record_hash(payload['libk.so']), len(payload['libk.so'])))
        z.writestr('demok/libk.so', payload['libk.so'])
    refused('a wheel whose RECORD comes before its HIP library: refused', d,
            ['split', 'late.whl', '-o', 'out.whl'], 'comes after RECORD')

    ppt.make_wheel(os.path.join(d, 'signed.whl'), payload, signed=True)
    refused('a signed wheel: refused', d, ['split', 'signed.whl', '-o', 'out.whl'],
            'signed.whl(demok-1.0.dist-info/RECORD.jws): the wheel is signed: rewriting it would break the signature')

    def tarball(path, members):
        with tarfile.open(os.path.join(d, path), 'w', format=tarfile.GNU_FORMAT) as t:
            for n, data in members:
                ti = tarfile.TarInfo(n)
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
    tarball('evil.tar', [('lib/libk.so', payload['libk.so']), ('../evil', b'x')])
    refused('a member leaving the folder: refused', d, ['split', 'evil.tar', '-o', 'out.tar'],
            'leaves the folder')
    tarball('nohip.tar', [('README', b'hello\n'), ('co/k.co', payload['k-gfx906.co'])])
    refused('a tarball without a HIP binary: refused', d, ['split', 'nohip.tar', '-o', 'out.tar'], 'no HIP binary')
    tarball('taken.tar', [('lib/libk.so', payload['libk.so']), ('.kpack/k_gfx906.kpack', b'not ours')])
    refused('a member named as an archive to add: refused', d, ['split', 'taken.tar', '-o', 'out.tar', '--name', 'k'],
            'taken.tar(.kpack/k_gfx906.kpack): exists in the package')
    tarball('ok.tar', [('lib/libk.so', payload['libk.so'])])
    write(os.path.join(d, 'exists.tar'), b'')
    refused('an existing output: refused', d, ['split', 'ok.tar', '-o', 'exists.tar'], 'exists')
    write(os.path.join(d, 'libk.so'), payload['libk.so'])
    refused('a package among several inputs: refused', d, ['split', 'libk.so', 'ok.tar', '-o', 'out'],
            'a package is split alone')
    refused('--root naming a folder the HIP binary is not in: refused', d,
            ['split', 'ok.tar', '-o', 'out.tar', '--root', 'opt/rocm'], 'ok.tar(lib/libk.so): lies outside the root opt/rocm')
    refused('--root leaving the output: refused', d, ['split', 'ok.tar', '-o', 'out.tar', '--root', '../x'],
            "--root ../x: a folder inside the output, without '..'")


def body(root):
    deb_body(root)
    try:
        payload = ppt.build_payload(root)
    except subprocess.CalledProcessError as e:
        check('clang 19 builds the HIP library and code objects', False, e.stderr)
        return
    tar_body(root, payload)
    wheel_body(root, payload)
    hostile_body(root, payload)


if __name__ == '__main__':
    sys.exit(harness.run_suite('kpack-split-package', body,
                               needs=['dpkg', 'dpkg-deb', 'ar', 'tar', 'xz', 'gzip', 'zstd', CLANGXX, CLANG]))
