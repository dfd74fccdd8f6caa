#!/usr/bin/env python3
"""`offloadtool prune` of whole packages, proven by the clients that install them:
  * a .deb (Debian's real librocrand1): dpkg installs the pruned package into a
    throw-away root (dpkg --root) and `dpkg --verify` finds every file's md5sum
    right; dpkg-deb -I shows Installed-Size changed by dpkg-gencontrol's rule
    (ceil(size / 1024) per file) for the files that changed, as dpkg-deb -c
    lists them; dpkg-deb -c lists the same members with the same owners, modes
    and times; `xz -t` accepts the new data.tar.xz; roc-obj-ls names only the
    kept GPU in the installed library;
  * tarballs (.tar, .tar.gz/.xz/.zst/.bz2, GNU and pax): gzip/xz/zstd/bzip2 -t
    accept them, Python's tarfile reads the same members, owners, modes and
    times, less the removed code object; the first header's magic (GNU or
    ustar) stays; roc-obj-ls and `offloadtool list` name only the kept GPU;
  * a Python wheel holding a HIP library made by clang 19 and bare code
    objects: RECORD's lines match the pruned members by hashlib's sha256 and
    their sizes, a removed file's line is gone, pip installs the wheel into a
    venv, and ctypes loads the installed library and calls it;
  * two runs write the same bytes; --in-place writes what -o writes;
  * refused with one line naming the file, exit 1, nothing left and the input
    unchanged: a truncated data.tar.xz, a RECORD that lies, member names that
    leave the folder, a signed wheel (unless --strip-signature; --strip-signatures is the
    same flag), an rpm.
(pip 23 does not check RECORD's hashes on install: hashlib does it here.)
"""
import base64
import glob
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import roc_obj_test as roc  # noqa: E402
from harness import CLANG, CLANGXX, OT, check, read, run, write  # noqa: E402

KEEP = 'gfx90a'
DEB_KEEP = 'gfx90a:xnack-'
KERNEL = harness.HIP_PRELUDE + b'''
__global__ void scale(int *x) { x[0] *= 2; }
extern "C" int host_side(int v) { return v + 1; }
'''
# What HIP's registration calls, so that the library loads without ROCm.
STUB = b'''void **__hipRegisterFatBinary(const void *w) { static void *h; (void)w; return &h; }
void __hipRegisterFunction(void) {}
void __hipUnregisterFatBinary(void **h) { (void)h; }
int __hipPopCallConfiguration(void) { return 0; }
int __hipPushCallConfiguration(void) { return 0; }
int hipLaunchKernel(void) { return 0; }
'''
HIP = ['-x', 'hip', '-nogpuinc', '-nogpulib']


def record_hash(data):
    return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()


def leftovers(folder, expected):
    return sorted(set(os.listdir(folder)) - set(expected))


def refused(name, folder, argv, inputs, message):
    """A refusal: exit 1, one 'offloadtool: error: <file>: ...' line containing
    `message`, nothing new in `folder`, the inputs unchanged."""
    before = {p: read(os.path.join(folder, p)) for p in inputs}
    names = os.listdir(folder)
    r = run([OT] + argv, cwd=folder, text=True, timeout=300)
    lines = r.stderr.splitlines()
    check(name, r.returncode == 1 and len(lines) == 1 and lines[0].startswith('offloadtool prune: error: ' + inputs[0])
          and message in lines[0] and not leftovers(folder, names)
          and all(read(os.path.join(folder, p)) == b for p, b in before.items()),
          'rc %s: %r; left: %s' % (r.returncode, r.stderr, leftovers(folder, names)))


def kept_ids(path):
    """roc-obj-ls's and offloadtool list's target IDs of a file."""
    listing, problem = roc.roc_obj_ls(path)
    ours, problem2 = roc.list_json(path)
    return ([e['id'] for e in listing or []], [e['id'] for e in (ours or {}).get('entries', [])], problem or problem2)


def only_kept(ids, keep):
    return ids and all(i.startswith('host-') or i.endswith('--' + keep) for i in ids) and \
        any(i.endswith('--' + keep) for i in ids)


# ---------------------------------------------------------------------------
# The .deb

def deb_listing(deb):
    """dpkg-deb -c: {name: (mode, owner, size, time)}."""
    out = run(['dpkg-deb', '-c', deb], text=True, check=True).stdout
    entries = {}
    for line in out.splitlines():
        f = line.split(None, 5)
        entries[f[5].split(' -> ')[0]] = (f[0], f[1], int(f[2]), f[3] + ' ' + f[4])
    return entries


def dpkg_install(folder, deb, what):
    """dpkg installs `deb` into a throw-away root below `folder` (checked) and
    verifies every installed file's md5sum (checked); the root."""
    dpkg_root = os.path.join(folder, 'root')
    os.makedirs(os.path.join(dpkg_root, 'var', 'lib', 'dpkg', 'info'))
    os.makedirs(os.path.join(dpkg_root, 'var', 'lib', 'dpkg', 'updates'))
    write(os.path.join(dpkg_root, 'var', 'lib', 'dpkg', 'status'), b'')
    r = run(['dpkg', '--root=' + dpkg_root, '--force-depends', '--force-script-chrootless', '--force-not-root',
             '--log=/dev/null', '-i', deb], text=True, timeout=300)
    check('dpkg -i installs the %s .deb' % what, r.returncode == 0, r.stdout + r.stderr)
    r = run(['dpkg', '--root=' + dpkg_root, '--force-not-root', '--verify'], text=True)
    check('dpkg --verify finds every installed file\'s md5sum right', r.returncode == 0 and not r.stdout,
          r.stdout + r.stderr)
    return dpkg_root


def deb_body(root):
    deb = roc.cached_deb('librocrand1')
    if deb is None:
        return
    d = os.path.join(root, 'deb')
    os.makedirs(d)
    orig = os.path.join(d, 'in.deb')
    shutil.copyfile(deb, orig)
    r = run([OT, 'prune', '--keep', DEB_KEEP, 'in.deb', '-o', 'out.deb'], cwd=d, text=True, timeout=600)
    if not check('prune --keep %s of librocrand1 .deb' % DEB_KEEP, r.returncode == 0 and not r.stderr, r.stderr):
        return
    pruned = os.path.join(d, 'out.deb')
    r2 = run([OT, 'prune', '--keep', DEB_KEEP, 'in.deb', '-o', 'again.deb'], cwd=d, timeout=600)
    check('.deb: two runs write the same bytes', r2.returncode == 0 and read(pruned) == read(os.path.join(d, 'again.deb')))
    os.unlink(os.path.join(d, 'again.deb'))

    a, b = deb_listing(orig), deb_listing(pruned)
    changed = sorted(n for n in a if n in b and a[n][2] != b[n][2])
    check('dpkg-deb -c: the same members, owners, modes and times; only the library changed size',
          list(a) == list(b) and all(a[n][:2] + a[n][3:] == b[n][:2] + b[n][3:] for n in a)
          and len(changed) == 1 and 'librocrand.so' in changed[0], changed)

    def installed_size(deb):
        return int(run(['dpkg-deb', '-f', deb, 'Installed-Size'], text=True, check=True).stdout)
    kib = lambda n: (n + 1023) // 1024  # noqa: E731
    want = installed_size(orig) + sum(kib(b[n][2]) - kib(a[n][2]) for n in changed)
    info = run(['dpkg-deb', '-I', pruned], text=True)
    check('dpkg-deb -I shows Installed-Size %d (dpkg-gencontrol\'s rule over the changed files)' % want,
          info.returncode == 0 and ' Installed-Size: %d\n' % want in info.stdout, info.stdout + info.stderr)

    members = run(['ar', 't', pruned], text=True, check=True).stdout.split()
    check('the ar layer keeps its members in order', members == run(['ar', 't', orig], text=True).stdout.split(), members)
    data = next(m for m in members if m.startswith('data.tar'))
    blob = run(['ar', 'p', pruned, data], check=True).stdout
    write(os.path.join(d, data), blob)
    r = run(['xz', '-t', data], cwd=d, text=True)
    check('xz -t accepts the new %s' % data, r.returncode == 0 and not r.stderr, r.stderr)
    os.unlink(os.path.join(d, data))

    # dpkg installs it into a throw-away root and verifies every md5sum.
    dpkg_root = dpkg_install(d, pruned, 'pruned')
    lib = next(p for p in glob.glob(os.path.join(dpkg_root, 'usr/lib/*/librocrand.so.*')) if not os.path.islink(p))
    theirs, ours, problem = kept_ids(lib)
    check('roc-obj-ls and offloadtool list name only %s in the installed library' % DEB_KEEP,
          problem is None and only_kept(theirs, DEB_KEEP) and theirs == ours, (problem, theirs, ours))

    shutil.copyfile(orig, os.path.join(d, 'inplace.deb'))
    r = run([OT, 'prune', '--keep', DEB_KEEP, '--in-place', 'inplace.deb'], cwd=d, timeout=600)
    check('.deb: --in-place writes what -o writes', r.returncode == 0 and read(os.path.join(d, 'inplace.deb')) == read(pruned))
    os.unlink(os.path.join(d, 'inplace.deb'))
    shutil.rmtree(dpkg_root)

    # A truncated data.tar.xz: refused, nothing written.
    h = os.path.join(d, 'hostile')
    os.makedirs(h)
    run(['ar', 'x', orig], cwd=h, check=True)
    blob = read(os.path.join(h, data))
    write(os.path.join(h, data), blob[:len(blob) // 2])
    run(['ar', 'rc', 'cut.deb', 'debian-binary', next(m for m in members if m.startswith('control.tar')), data],
        cwd=h, check=True)
    for m in os.listdir(h):
        if m != 'cut.deb':
            os.unlink(os.path.join(h, m))
    refused('a .deb with a truncated data.tar.xz is refused', h, ['prune', '--keep', DEB_KEEP, 'cut.deb', '-o', 'x.deb'],
            ['cut.deb'], 'cut.deb(data.tar.xz)')


# ---------------------------------------------------------------------------
# Tarballs and wheels, made here with clang 19

def build_payload(root):
    """{name: bytes}: a HIP library (gfx906 and gfx90a) and bare code objects."""
    b = os.path.join(root, 'build')
    os.makedirs(b)
    write(os.path.join(b, 'k.hip'), KERNEL)
    write(os.path.join(b, 'stub.c'), STUB)
    run([CLANGXX] + HIP + ['--offload-arch=gfx906', '--offload-arch=gfx90a', '-fPIC', '-c', 'k.hip', '-o', 'k.o'],
        cwd=b, check=True)
    run([CLANG, '-fPIC', '-c', 'stub.c', '-o', 'stub.o'], cwd=b, check=True)
    run([CLANGXX, '-shared', 'k.o', 'stub.o', '-o', 'libk.so'], cwd=b, check=True)
    out = {'libk.so': read(os.path.join(b, 'libk.so'))}
    for arch in ('gfx906', 'gfx90a'):
        run([CLANGXX] + HIP + ['--offload-arch=' + arch, '--cuda-device-only', '--no-gpu-bundle-output', 'k.hip',
                               '-o', 'k-%s.co' % arch], cwd=b, check=True)
        out['k-%s.co' % arch] = read(os.path.join(b, 'k-%s.co' % arch))
    return out


def make_tar(path, payload, fmt, compress):
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode='w', format=fmt) as t:
        def add(name, data=None, kind=tarfile.REGTYPE, mode=0o644, link=''):
            ti = tarfile.TarInfo(name)
            ti.type, ti.mode, ti.mtime, ti.uid, ti.gid = kind, mode, 1700000000 + len(name), 1000, 100
            ti.uname, ti.gname, ti.linkname = 'builder', 'staff', link
            if data is not None:
                ti.size = len(data)
            t.addfile(ti, io.BytesIO(data) if data is not None else None)
        add('./opt', kind=tarfile.DIRTYPE, mode=0o755)
        add('./opt/k', kind=tarfile.DIRTYPE, mode=0o755)
        add('./opt/k/README', b'hello\n' * 100)
        add('./opt/k/lib/libk.so.1', payload['libk.so'], mode=0o755)
        add('./opt/k/lib/libk.so', kind=tarfile.SYMTYPE, mode=0o777, link='libk.so.1')
        add('./opt/k/co/k-gfx906.co', payload['k-gfx906.co'])
        add('./opt/k/co/k-gfx90a.co', payload['k-gfx90a.co'])
        add('./opt/k/share/' + 'long-name-' * 12 + '.txt', b'x' * 3000)  # a GNU long name / pax path
    write(path, bio.getvalue())
    if compress:
        run([compress, '-q', path] if compress != 'zstd' else ['zstd', '-q', '--rm', path], check=True)


def tar_file(path):
    """A tarfile of `path` (zstd through the zstd program: Python 3.11's tarfile has none)."""
    if path.endswith('.zst'):
        return tarfile.open(fileobj=io.BytesIO(run(['zstd', '-dc', path], check=True).stdout))
    return tarfile.open(path)


def tar_members(path):
    with tar_file(path) as t:
        return [(m.name, m.type, m.mode, m.uid, m.gid, m.uname, m.gname, m.mtime, m.linkname) for m in t.getmembers()]


def tar_body(root, payload):
    d = os.path.join(root, 'tar')
    os.makedirs(d)
    cases = [('k.tar', None, tarfile.GNU_FORMAT, None), ('k.tar.gz', 'gzip', tarfile.GNU_FORMAT, 'gzip'),
             ('k.tar.xz', 'xz', tarfile.PAX_FORMAT, 'xz'), ('k.tar.zst', 'zstd', tarfile.GNU_FORMAT, 'zstd'),
             ('k.tar.bz2', 'bzip2', tarfile.PAX_FORMAT, 'bzip2')]
    for name, tester, fmt, compress in cases:
        base = os.path.join(d, name.split('.', 1)[0] + ('.tar' if compress else ''))
        src = os.path.join(d, 'in-' + name)
        make_tar(os.path.join(d, 'in-k.tar'), payload, fmt, compress)
        os.rename(os.path.join(d, 'in-k.tar' + name[len('k.tar'):]), src)
        out = os.path.join(d, 'out-' + name)
        r = run([OT, 'prune', '--keep', KEEP, src, '-o', out], text=True, timeout=300)
        if not check('%s: prune --keep %s' % (name, KEEP), r.returncode == 0 and not r.stderr, r.stderr):
            continue
        if tester:
            r = run([tester, '-q', '-t', out], text=True)
            check('%s: %s -t accepts it' % (name, tester), r.returncode == 0 and not r.stderr, r.stderr)
        r = run(['tar', '-tvf', out], text=True)
        check('%s: GNU tar lists it' % name, r.returncode == 0 and not r.stderr, r.stderr)
        want = [m for m in tar_members(src) if not m[0].endswith('gfx906.co')]
        check('%s: tarfile reads the same members, owners, modes and times, less the gfx906 code object' % name,
              tar_members(out) == want, tar_members(out))
        head_in = _first_header(src)
        head_out = _first_header(out)
        check('%s: the first header\'s magic stays (%r)' % (name, head_in[257:265]),
              head_in[257:265] == head_out[257:265], head_out[257:265])
        x = os.path.join(d, 'x-' + name)
        os.makedirs(x)
        run(['tar', '-xf', out, '-C', x], check=True)
        lib = os.path.join(x, 'opt/k/lib/libk.so.1')
        theirs, ours, problem = kept_ids(lib)
        check('%s: roc-obj-ls and offloadtool list name only %s in the library' % (name, KEEP),
              problem is None and only_kept(theirs, KEEP) and theirs == ours, (problem, theirs, ours))
        check('%s: the gfx90a code object is the original bytes' % name,
              read(os.path.join(x, 'opt/k/co/k-gfx90a.co')) == payload['k-gfx90a.co'])
        shutil.rmtree(x)
        again = out + '.again'
        run([OT, 'prune', '--keep', KEEP, src, '-o', again], timeout=300)
        check('%s: two runs write the same bytes' % name, os.path.exists(again) and read(again) == read(out))

    # Names that leave the folder; an rpm.
    for bad in ('../evil', '/etc/evil'):
        bio = io.BytesIO()
        with tarfile.open(fileobj=bio, mode='w', format=tarfile.GNU_FORMAT) as t:
            ti = tarfile.TarInfo(bad)
            ti.size = len(payload['libk.so'])
            t.addfile(ti, io.BytesIO(payload['libk.so']))
        h = os.path.join(d, 'hostile-%d' % len(bad))
        os.makedirs(h)
        write(os.path.join(h, 'bad.tar'), bio.getvalue())
        refused('a tar member named %s is refused' % bad, h, ['prune', '--keep', KEEP, 'bad.tar', '-o', 'o.tar'],
                ['bad.tar'], 'leaves the folder')
    h = os.path.join(d, 'rpm')
    os.makedirs(h)
    write(os.path.join(h, 'k.rpm'), b'\xed\xab\xee\xdb\x03\x00' + b'\0' * 200)
    refused('an rpm is refused', h, ['prune', '--keep', KEEP, 'k.rpm', '-o', 'o.rpm'], ['k.rpm'], 'rpm')


def _first_header(path):
    with tar_file(path) as t:
        f = t.fileobj
        f.seek(0)
        return f.read(512)


def make_wheel(path, payload, record_lie=False, signed=False):
    files = {'demok/__init__.py': b'import ctypes, os\n',
             'demok/libk.so': payload['libk.so'],
             'demok/co/k-gfx906.co': payload['k-gfx906.co'],
             'demok/co/k-gfx90a.co': payload['k-gfx90a.co'],
             'demok-1.0.dist-info/METADATA': b'Metadata-Version: 2.1\nName: demok\nVersion: 1.0\n',
             'demok-1.0.dist-info/WHEEL':
                 b'Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: py3-none-any\n'}
    lines = []
    for n, b in files.items():
        lines.append('%s,%s,%d\n' % (n, record_hash(b'lie' if record_lie and n.endswith('.so') else b), len(b)))
    lines.append('demok-1.0.dist-info/RECORD,,\n')
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
        for n, b in files.items():
            z.writestr(zipfile.ZipInfo(n, (2024, 1, 2, 3, 4, 6)), b,
                       zipfile.ZIP_STORED if n.endswith('.py') else zipfile.ZIP_DEFLATED)
        z.writestr(zipfile.ZipInfo('demok-1.0.dist-info/RECORD', (2024, 1, 2, 3, 4, 6)), ''.join(lines))
        if signed:
            z.writestr('demok-1.0.dist-info/RECORD.jws', b'{"signature": "x"}')


def wheel_body(root, payload):
    d = os.path.join(root, 'wheel')
    os.makedirs(d)
    name = 'demok-1.0-py3-none-any.whl'
    src = os.path.join(d, 'in', name)
    os.makedirs(os.path.dirname(src))
    make_wheel(src, payload)
    out = os.path.join(d, 'out', name)
    os.makedirs(os.path.dirname(out))
    r = run([OT, 'prune', '--keep', KEEP, src, '-o', out], text=True, timeout=300)
    if not check('wheel: prune --keep %s' % KEEP, r.returncode == 0 and not r.stderr, r.stderr):
        return
    with zipfile.ZipFile(out) as z:
        names = z.namelist()
        bad = z.testzip()
        contents = {n: z.read(n) for n in names}
        infos = {i.filename: (i.date_time, i.compress_type) for i in z.infolist()}
    with zipfile.ZipFile(src) as z:
        in_infos = {i.filename: (i.date_time, i.compress_type) for i in z.infolist()}
    check('wheel: zipfile reads every member (CRCs right); the same members but the gfx906 code object, in order',
          bad is None and names == [n for n in in_infos if not n.endswith('gfx906.co')], names)
    check('wheel: each member keeps its time and its method (stored or deflated)',
          all(infos[n] == in_infos[n] for n in names), infos)
    record = contents['demok-1.0.dist-info/RECORD'].decode().splitlines()
    listed = {l.split(',')[0]: l.split(',')[1:] for l in record}
    wrong = [n for n in names if not n.endswith('RECORD')
             and listed.get(n) != [record_hash(contents[n]), str(len(contents[n]))]]
    check('wheel: RECORD gives hashlib\'s sha256 and the size of every member; the removed file\'s line is gone',
          not wrong and 'demok/co/k-gfx906.co' not in listed and len(listed) == len(names), (wrong, record))
    theirs, ours, problem = kept_ids_bytes(d, contents['demok/libk.so'])
    check('wheel: roc-obj-ls and offloadtool list name only %s in the library' % KEEP,
          problem is None and only_kept(theirs, KEEP) and theirs == ours, (problem, theirs, ours))

    venv = os.path.join(d, 'venv')
    r = run([sys.executable, '-m', 'venv', venv], text=True, timeout=300)
    check('python3 -m venv', r.returncode == 0, r.stderr)
    py = os.path.join(venv, 'bin', 'python')
    r = run([py, '-m', 'pip', 'install', '--no-index', '-q', out], text=True, timeout=300)
    check('pip install --no-index takes the pruned wheel', r.returncode == 0, r.stdout + r.stderr)
    r = run([py, '-c', 'import ctypes, os, demok; '
             'print(ctypes.CDLL(os.path.join(os.path.dirname(demok.__file__), "libk.so")).host_side(41))'],
            text=True, timeout=120, cwd=d)
    check('the installed library loads (ctypes) and runs', r.returncode == 0 and r.stdout == '42\n', r.stdout + r.stderr)

    again = os.path.join(d, 'again.whl')
    run([OT, 'prune', '--keep', KEEP, src, '-o', again], timeout=300)
    check('wheel: two runs write the same bytes', os.path.exists(again) and read(again) == read(out))
    os.unlink(again)

    h = os.path.join(d, 'hostile')
    os.makedirs(h)
    make_wheel(os.path.join(h, 'lie.whl'), payload, record_lie=True)
    refused('a wheel whose RECORD lies is refused', h, ['prune', '--keep', KEEP, 'lie.whl', '-o', 'o.whl'],
            ['lie.whl'], 'does not match')
    make_wheel(os.path.join(h, 'signed.whl'), payload, signed=True)
    refused('a signed wheel is refused', h, ['prune', '--keep', KEEP, 'signed.whl', '-o', 'o.whl'],
            ['signed.whl'], '--strip-signature')
    r = run([OT, 'prune', '--keep', KEEP, '--strip-signatures', 'signed.whl', '-o', 'o.whl'], cwd=h, text=True)
    with zipfile.ZipFile(os.path.join(h, 'o.whl')) as z:
        gone = not any(n.endswith('RECORD.jws') for n in z.namelist())
    r2 = run([OT, 'prune', '--keep', KEEP, '--strip-signatures', '--dry-run', 'signed.whl'], cwd=h, text=True)
    check('--strip-signatures leaves RECORD.jws out and says so',
          r.returncode == 0 and gone and 'RECORD.jws was left out' in r2.stdout, r.stderr + r2.stdout + r2.stderr)


def kept_ids_bytes(folder, data):
    p = os.path.join(folder, 'libk-from-wheel.so')
    write(p, data)
    return kept_ids(p)


def body(root):
    deb_body(root)
    try:
        payload = build_payload(root)
    except subprocess.CalledProcessError as e:
        check('clang 19 builds the HIP library and code objects', False, e.stderr)
        return
    tar_body(root, payload)
    wheel_body(root, payload)


if __name__ == '__main__':
    sys.exit(harness.run_suite('prune-package', body,
                               needs=[roc.ROC_OBJ_LS, 'perl', 'dpkg', 'dpkg-deb', 'ar', 'tar', 'xz', 'gzip', 'bzip2',
                                      'zstd', CLANGXX, CLANG]))
