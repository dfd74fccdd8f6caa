#!/usr/bin/env python3
"""`offloadtool list` and `offloadtool size` over real inputs: a HIP object and
shared library built by clang 19 (gfx906, gfx90a:xnack+), packed the ways
software ships them (.deb by dpkg-deb, tar.xz, zip, cpio newc), and a
compressed (--offload-compress) library. Offsets are checked against
llvm-readelf-19's section offsets plus the bundle header (parsed here), and
the bytes there against what clang-offload-bundler-19 -unbundle extracts.
rpm is not covered here (no rpmbuild on the CI image); the unit suite covers
cpio, the format inside an rpm."""
import io
import json
import lzma
import os
import struct
import subprocess
import sys
import tarfile
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import LLVM_BUNDLER, OT, Case, check, expect  # noqa: E402

READELF = harness.llvm('llvm-readelf')
OBJCOPY = harness.llvm('llvm-objcopy')
DPKG_DEB = '/usr/bin/dpkg-deb'
ARCHS = ['gfx906', 'gfx90a:xnack+']
E = 'offloadtool list: error: '

SOURCE = ('typedef struct { unsigned x, y, z; } dim3_;\n'
          'extern "C" int hipLaunchKernel(const void*, dim3_, dim3_, void**, unsigned long, void*);\n'
          '__attribute__((global)) void k(int *p) { *p = 1; }\n'
          '__attribute__((global)) void k2(float *p) { p[0] = p[1] * 2.0f; }\n')


def build(d, extra=()):
    """k.o and libk.so from clang 19; returns {name: bytes}."""
    harness.write(os.path.join(d, 'k.hip'), SOURCE)
    cc = [harness.CLANG, '-x', 'hip', '-nogpulib', '-nogpuinc', '-fPIC', '-c', 'k.hip', '-o', 'k.o'] + list(extra)
    r = harness.run(cc + ['--offload-arch=' + a for a in ARCHS], cwd=d, text=True)
    check('clang 19 builds a HIP object %s' % ' '.join(extra), r.returncode == 0, r.stderr)
    r = harness.run([harness.CLANG, '-shared', '-fuse-ld=lld', 'k.o', '-o', 'libk.so'], cwd=d, text=True)
    check('clang 19 links a shared library %s' % ' '.join(extra), r.returncode == 0, r.stderr)
    return {n: harness.read(os.path.join(d, n)) for n in ('k.o', 'libk.so')}


def section(d, name, sec='.hip_fatbin'):
    """(offset, size) of `sec` by llvm-readelf -S."""
    out = harness.run([READELF, '-S', '-W', name], cwd=d, text=True, check=True).stdout
    for line in out.splitlines():
        f = line.replace('[ ', '[').split()
        if sec in f:
            i = f.index(sec)
            return int(f[i + 3], 16), int(f[i + 4], 16)
    raise AssertionError('no %s in %s' % (sec, name))


def bundle_table(blob):
    """[(id, offset, size)] of the binary bundle at the start of `blob`."""
    assert blob[:24] == b'__CLANG_OFFLOAD_BUNDLE__'
    n, = struct.unpack_from('<Q', blob, 24)
    at, out = 32, []
    for _ in range(n):
        off, size, idlen = struct.unpack_from('<QQQ', blob, at)
        out.append((blob[at + 24:at + 24 + idlen].decode(), off, size))
        at += 24 + idlen
    return out


def unbundled(d, name, ids):
    """{id: bytes} that LLVM 19's bundler extracts from `name`'s .hip_fatbin (the
    device entries: LLVM 19 cannot find clang's 5-field host ID it is given back;
    the host entry is empty)."""
    host = [i for i in ids if i.startswith('host-')]
    ids = [i for i in ids if not i.startswith('host-')]
    harness.run([OBJCOPY, '--dump-section=.hip_fatbin=fb.bin', name, 'dump.o'], cwd=d, check=True)
    outs = ['-output=u%d' % i for i in range(len(ids))]
    harness.run([LLVM_BUNDLER, '-type=bc', '-unbundle', '-input=fb.bin', '-targets=' + ','.join(ids)] + outs,
                cwd=d, check=True)
    return dict({i: harness.read(os.path.join(d, 'u%d' % n)) for n, i in enumerate(ids)}, **{h: b'' for h in host})


def id_triple(bundle_id):
    """The triple of a bundle entry ID "<kind>-<arch>-<vendor>-<os>-<env>-<target id>", empty fields at its end
    left out ("amdgcn-amd-amdhsa" of "hipv4-amdgcn-amd-amdhsa--gfx906")."""
    return '-'.join(bundle_id.split('-')[1:5]).rstrip('-')


def elf_triple(data):
    """The vendor triple of a bare code object by its ELF machine (EM_AMDGPU 224, EM_CUDA 190)."""
    return {224: 'amdgcn-amd-amdhsa', 190: 'nvptx64-nvidia-cuda'}[int.from_bytes(data[18:20], 'little')]


def list_json(c, *names):
    rc, out, err = c.run('--json', *names)
    try:
        return rc, json.loads(out), err
    except ValueError:
        return rc, None, err + out


def tar_xz(members, mode='w:xz'):
    """A tar of (name, bytes) members: xz-compressed by Python's lzma (one block), or as `mode` says."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def plain_cases(root, d, built):
    """Object and shared library: offsets = section offset + bundle offsets, bytes = LLVM's unbundled ones."""
    c = Case(root, 'list', built)
    rc, j, err = list_json(c, 'k.o', 'libk.so')
    check('list --json: object and library', rc == 0 and err == '' and j and j['schema'] == 'offloadtool-list/2' and
          j['files'] == [{'file': 'k.o', 'entries': 3}, {'file': 'libk.so', 'entries': 3}], (rc, j, err))
    if not j:
        return
    for name in ('k.o', 'libk.so'):
        sec_off, sec_size = section(c.dir, name)
        data = built[name]
        table = bundle_table(data[sec_off:])
        ids = [t[0] for t in table]
        got = [e for e in j['entries'] if e['file'] == name]
        check('%s: the IDs of the bundle header, in order' % name, [e['id'] for e in got] == ids, got)
        check('%s: offsets are the section offset (llvm-readelf) plus the bundle offsets' % name,
              [(e['offset'], e['size']) for e in got] == [(sec_off + o, s) for _, o, s in table], (sec_off, table, got))
        check('%s: path' % name, all(e['path'] == [name, 'section .hip_fatbin', 'bundle at 0x%x' % sec_off]
                                     for e in got), got)
        ref = unbundled(c.dir, name, ids)
        check('%s: the bytes at offset/size are what clang-offload-bundler-19 -unbundle extracts' % name,
              all(data[e['offset']:e['offset'] + e['size']] == ref[e['id']] for e in got), name)
        listed = harness.run([LLVM_BUNDLER, '-type=bc', '-list', '-input=fb.bin'], cwd=c.dir, text=True,
                             check=True).stdout.split()
        check('%s: "triple": the triple of the ID LLVM\'s bundler lists' % name,
              sorted((e['id'], e['triple']) for e in got) == sorted((i, id_triple(i)) for i in listed) and
              [e['triple'] for e in got][1:] == ['amdgcn-amd-amdhsa'] * 2, (listed, got))
        check('%s: processors from the code object headers' % name,
              [e['processor'] for e in got] == [None, 'gfx906', 'gfx90a:xnack+'], got)
        check('%s: canonical targets' % name, [e['target'] for e in got][1:] ==
              ['hipv4-amdgcn-amd-amdhsa--gfx906', 'hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+'], got)
        path = os.path.join(c.dir, name)
        check('%s: uri for every entry with an offset, the host entry of size 0 too' % name,
              all(e['uri'] == 'file://%s#offset=%d&size=%d' % (path, e['offset'], e['size']) for e in got), got)
    # The text form: one header per container, one line per entry, a total;
    # sizes as people read them (numfmt's figures), or exact with --bytes.
    got = [e for e in j['entries'] if e['file'] == 'libk.so']
    sec_off, _ = section(c.dir, 'libk.so')
    for flags, cell, total in (([], harness.human_size, harness.human_size),
                               (['--bytes'], str, lambda n: '%d bytes' % n)):
        iw, pw = max(len(e['id']) for e in got), max(len(e['processor'] or '-') for e in got)
        sw = max([10] + [len(cell(e['size'])) for e in got])
        want = ('libk.so, section .hip_fatbin, bundle at 0x%x: 3 entries\n' % sec_off +
                ''.join('  %3d  %-*s  %-*s  %*s  at 0x%x\n' % (e['index'], iw, e['id'], pw, e['processor'] or '-', sw,
                                                               cell(e['size']), e['offset']) for e in got) +
                'libk.so: 3 entries in 1 container, %s\n' % total(sum(e['size'] for e in got)))
        expect('list %s: text form' % ' '.join(flags), c, flags + ['libk.so'], 0, want, '')
    check('list --bytes: the entries\' exact sizes', '  %d  at 0x%x\n' % (got[1]['size'], got[1]['offset']) in
          c.run('--bytes', 'libk.so')[1], got)
    # An object bundle (clang-offload-bundler-19 -type=o): one entry per __CLANG_OFFLOAD_BUNDLE__ section.
    harness.write(os.path.join(c.dir, 'dev.co'), ref['hipv4-amdgcn-amd-amdhsa--gfx906'])
    harness.run([LLVM_BUNDLER, '-type=o', '-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906',
                 '-input=k.o', '-input=dev.co', '-output=ob.o'], cwd=c.dir, check=True)
    rc, j, err = list_json(c, 'ob.o')
    got = [e for e in (j['entries'] if j else []) if e['path'] == ['ob.o', '__CLANG_OFFLOAD_BUNDLE__ sections']]
    want = [(i, section(c.dir, 'ob.o', '__CLANG_OFFLOAD_BUNDLE__' + i)) for i in
            ('host-x86_64-unknown-linux-gnu-', 'hip-amdgcn-amd-amdhsa--gfx906')]
    check('object bundle: one entry per section, at llvm-readelf\'s offsets', rc == 0 and
          [(e['id'], (e['offset'], e['size'])) for e in got] == want and got[1]['processor'] == 'gfx906' and
          len(j['entries']) == 5, (rc, j, err))
    # A name that needs percent-encoding in the URI.
    c = Case(root, 'list', {'my lib+1.so': built['libk.so']})
    rc, j, err = list_json(c, 'my lib+1.so')
    check('list: uri percent-encodes the path as roc-obj-ls does (space, not +)', rc == 0 and j and all(
        e['uri'].startswith('file://%s/my%%20lib+1.so#offset=' % c.dir) for e in j['entries']), j)


def make_deb(d, so):
    """libk.deb by dpkg-deb in `d`: data.tar.xz holding `so` as ./usr/lib/libk.so.1 and a README; its bytes."""
    pkg = os.path.join(d, 'pkg')
    os.makedirs(os.path.join(pkg, 'DEBIAN'))
    os.makedirs(os.path.join(pkg, 'usr', 'lib'))
    harness.write(os.path.join(pkg, 'DEBIAN', 'control'),
                  'Package: libk\nVersion: 1.0\nArchitecture: amd64\nMaintainer: t <t@example.com>\nDescription: k\n')
    harness.write(os.path.join(pkg, 'usr', 'lib', 'libk.so.1'), so)
    harness.write(os.path.join(pkg, 'usr', 'lib', 'README'), b'no device code\n')
    r = harness.run([DPKG_DEB, '--root-owner-group', '-Zxz', '--build', 'pkg', 'libk.deb'], cwd=d, text=True)
    check('dpkg-deb builds a .deb', r.returncode == 0, r.stderr)
    return harness.read(os.path.join(d, 'libk.deb'))


def package_cases(root, d, built):
    """.deb, tar.xz, zip, cpio: the same three entries, chains through the members, no offsets."""
    so = built['libk.so']
    deb = make_deb(d, so)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w', zipfile.ZIP_DEFLATED) as z:
        z.writestr('k-1.0.dist-info/METADATA', 'Name: k\n')
        z.writestr('k/lib/libk.so', so)
    files = {'libk.deb': deb, 'k.tar.xz': tar_xz([('README', b'x'), ('lib/libk.so', so)]),
             'k.whl': buf.getvalue(), 'k.cpio': harness.cpio_newc([('lib/libk.so', so)])}
    chains = {'libk.deb': ['libk.deb', 'data.tar.xz', './usr/lib/libk.so.1'], 'k.tar.xz': ['k.tar.xz', 'lib/libk.so'],
              'k.whl': ['k.whl', 'k/lib/libk.so'], 'k.cpio': ['k.cpio', 'lib/libk.so']}
    sec_off, _ = section(d, 'libk.so')
    plain = bundle_table(so[sec_off:])
    c = Case(root, 'list', files)
    rc, j, err = list_json(c, *files)
    check('list --json: .deb, tar.xz, wheel, cpio', rc == 0 and err == '' and j and
          j['files'] == [{'file': f, 'entries': 3} for f in files], (rc, j, err))
    for name in files:
        got = [e for e in (j['entries'] if j else []) if e['file'] == name]
        check('%s: chain through the members' % name, len(got) == 3 and all(
            e['path'] == chains[name] + ['section .hip_fatbin', 'bundle at 0x%x' % sec_off] for e in got), got)
        check('%s: inside a compressed member: no offset, no uri' % name,
              all(e['offset'] is None and e['uri'] is None and not e['compressed'] for e in got), got)
        check('%s: IDs, sizes, processors' % name, [(e['id'], e['size']) for e in got] == [(i, s) for i, _, s in plain]
              and [e['processor'] for e in got] == [None, 'gfx906', 'gfx90a:xnack+'], got)
    # A damaged package: one error line naming the chain.
    c = Case(root, 'list', {'cut.deb': deb[:len(deb) - 200]})
    rc, out, err = c.run('cut.deb')
    check('list: a truncated .deb is one error line naming it', rc == 1 and out == '' and
          err.startswith(E + 'cut.deb') and err.count('\n') == 1, (rc, out, err))


def offload_binary_cases(root):
    """Offload binaries (LLVM 19's packager) whose arch turns a feature off: the
    ID as stored ("<kind>-<triple>-<arch>"), the target with the triple in 4
    fields and the feature kept (read with the 3-field triple, the sign's dash
    once made "gfx90a:xnack" the triple's 4th field)."""
    c = Case(root, 'list', {'e.ll': b'define void @f() { ret void }\n'})
    r = harness.run([harness.llvm('llc'), '-mtriple=amdgcn-amd-amdhsa', '-mcpu=gfx90a', '-mattr=-xnack',
                     '-filetype=obj', 'e.ll', '-o', 'x.co'], cwd=c.dir, text=True)
    check('llc 19 writes a gfx90a:xnack- code object', r.returncode == 0, r.stderr)
    r = harness.run([harness.LLVM_PACKAGER, '-o', 'dev.bin',
                     '--image=file=x.co,triple=amdgcn-amd-amdhsa,arch=gfx90a:xnack-,kind=openmp'], cwd=c.dir, text=True)
    check('LLVM 19 packages it', r.returncode == 0, r.stderr)
    rc, j, err = list_json(c, 'dev.bin')
    got = j['entries'] if j else []
    check('list --json: an offload binary entry whose arch turns xnack off', rc == 0 and err == '' and len(got) == 1
          and got[0]['id'] == 'openmp-amdgcn-amd-amdhsa-gfx90a:xnack-'
          and got[0]['target'] == 'openmp-amdgcn-amd-amdhsa--gfx90a:xnack-' and got[0]['processor'] == 'gfx90a:xnack-'
          and got[0]['path'] == ['dev.bin', 'offload binary at 0x0'] and got[0]['size'] == len(c.read('x.co'))
          and got[0]['triple'] == 'amdgcn-amd-amdhsa', (rc, j, err))
    # "triple" of bare code objects (by the ELF machine) and of NVIDIA fatbin entries.
    nv = os.path.join(harness.DATA, 'nvidia')
    bare = {'x.co': c.read('x.co'), 'k.sm_80.cubin': harness.read(os.path.join(nv, 'inputs', 'k.sm_80.cubin')),
            'zstd.fatbin': harness.read(os.path.join(nv, 'zstd.fatbin'))}
    b = Case(root, 'list', bare)
    rc, j, err = list_json(b, 'x.co', 'k.sm_80.cubin', 'zstd.fatbin')
    got = [(e['file'], e['triple']) for e in (j['entries'] if j else [])]
    check('list --json: "triple" of bare code objects by their ELF machine, nvptx64-nvidia-cuda for fatbin entries',
          rc == 0 and got == [('x.co', elf_triple(bare['x.co'])), ('k.sm_80.cubin', elf_triple(bare['k.sm_80.cubin'])),
                              ('zstd.fatbin', 'nvptx64-nvidia-cuda'), ('zstd.fatbin', 'nvptx64-nvidia-cuda')],
          (rc, got, err))
    c = Case(root, 'size', {'dev.bin': c.read('dev.bin')})
    rc, out, err = c.run('--json', 'dev.bin')
    rows = json.loads(out).get('targets', []) if rc == 0 else []
    check('size --json: an offload binary entry counts for its target with the feature', err == '' and
          [(r['target'], r['entries']) for r in rows] == [('openmp-amdgcn-amd-amdhsa--gfx90a:xnack-', 1)], (out, err))


def compressed_cases(root, d):
    """--offload-compress: entries inside a CCOB have no offset; size shares the CCOB's bytes out."""
    built = build(d, ['--offload-compress'])
    c = Case(root, 'list', built)
    rc, j, err = list_json(c, 'libk.so')
    got = j['entries'] if j else []
    check('list: compressed entries', rc == 0 and len(got) == 3 and all(
        e['compressed'] and e['offset'] is None and e['uri'] is None for e in got) and
        got[0]['path'][-1].startswith('compressed bundle at 0x'), (rc, j, err))
    sec_off, sec_size = section(c.dir, 'libk.so')
    ccob = built['libk.so'][sec_off:sec_off + sec_size]
    total, = struct.unpack_from('<I', ccob, 8) if ccob[4:6] == b'\x02\x00' else struct.unpack_from('<Q', ccob, 8)
    c = Case(root, 'compress', built)
    rc, out, err = c.run('--info', '--json', 'libk.so')
    info = json.loads(out) if rc == 0 else {}
    check('compress --info finds the CCOB inside the library, at the section offset (llvm-readelf)',
          rc == 0 and [(b['offset'], b['size'], b['compressed'], b['path']) for b in info.get('bundles', [])] ==
          [(sec_off, total, True, ['libk.so', 'section .hip_fatbin', 'compressed bundle at 0x%x' % sec_off])] and
          info['bundles'][0]['hash_match'], (out, err))
    c = Case(root, 'size', built)
    rc, out, err = c.run('--json', 'libk.so')
    s = json.loads(out) if rc == 0 else {}
    check('size: a compressed bundle is charged its bytes in the file (CCOB total size %d)' % total,
          rc == 0 and s.get('schema') == 'offloadtool-size/1' and abs(s['file_bytes'] - total) <= 3 and
          s['uncompressed_bytes'] == sum(e['size'] for e in got), (out, err))


def size_cases(root, d, built):
    c = Case(root, 'size', built)
    sec_off, _ = section(d, 'libk.so')
    table = {i: s for i, _, s in bundle_table(built['libk.so'][sec_off:])}
    g906, g90a = table['hipv4-amdgcn-amd-amdhsa--gfx906'], table['hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+']
    rc, out, err = c.run('--json', '--per-file', '--per-bundle', 'k.o', 'libk.so')
    s = json.loads(out) if rc == 0 else {}
    rows = s.get('targets', [])
    check('size --json: bytes per target over both files, largest first', rc == 0 and err == '' and
          [(r['target'], r['entries'], r['file_bytes'], r['uncompressed_bytes']) for r in rows[:2]] ==
          sorted([('hipv4-amdgcn-amd-amdhsa--gfx906', 2, 2 * g906, 2 * g906),
                  ('hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+', 2, 2 * g90a, 2 * g90a)], key=lambda t: -t[2]) and
          abs(rows[0]['share'] - max(g906, g90a) / (g906 + g90a)) < 1e-3, (out, err))
    check('size --json: per file and per bundle', len(s.get('files', [])) == 2 and len(s.get('bundles', [])) == 2 and
          s['bundles'][1]['path'] == ['libk.so', 'section .hip_fatbin', 'bundle at 0x%x' % sec_off], s)
    rc, out, err = c.run('--json', 'libk.so')
    rows = json.loads(out)['targets'] if rc == 0 else []
    check('size --json libk.so: the bundle\'s sizes', [(r['target'], r['file_bytes'], r['uncompressed_bytes'])
                                                      for r in rows][:2] ==
          sorted([('hipv4-amdgcn-amd-amdhsa--gfx906', g906, g906),
                  ('hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+', g90a, g90a)], key=lambda t: -t[1]) and len(rows) == 3,
          (out, err))
    # The text table: sizes as people read them (numfmt's figures), or exact with --bytes.
    for flags, cell, total in (([], harness.human_size, harness.human_size),
                               (['--bytes'], str, lambda n: '%d bytes' % n)):
        w = max([6] + [len(r['target']) for r in rows])
        fw = max([12] + [len(cell(r['file_bytes'])) for r in rows])
        uw = max([12] + [len(cell(r['uncompressed_bytes'])) for r in rows])
        want = ('%-*s  %7s  %*s  %6s  %*s\n' % (w, 'target', 'entries', fw, 'file bytes', 'share', uw, 'uncompressed') +
                ''.join('%-*s  %7d  %*s  %5.1f%%  %*s\n' % (w, r['target'], r['entries'], fw, cell(r['file_bytes']),
                                                           100.0 * r['file_bytes'] / (g906 + g90a), uw,
                                                           cell(r['uncompressed_bytes'])) for r in rows) +
                'total: 3 entries, %s in the files, %s uncompressed\n' % (total(g906 + g90a), total(g906 + g90a)))
        expect('size %s: text table' % ' '.join(flags), c, flags + ['libk.so'], 0, want, '')


def error_cases(root, built):
    c = Case(root, 'list', {'libk.so': built['libk.so'], 'notes.txt': b'hello\n'})
    rc, out, err = c.run('notes.txt', 'libk.so')
    check('list: a file without device code is an error, the others are still listed',
          rc == 1 and err == E + 'notes.txt: no device code found (no offload bundle, compressed bundle, offload binary, '
          'NVIDIA fatbin or bundle section, in any archive member)\n' and out.startswith('libk.so, section .hip_fatbin'), (rc, out, err))
    rc, j, err = list_json(c, 'notes.txt', 'libk.so')
    check('list --json: the failing file has 0 entries and its error, exit 1', rc == 1 and j and
          j['files'] == [{'file': 'notes.txt', 'entries': 0, 'error': 'notes.txt: no device code found (no offload '
                          'bundle, compressed bundle, offload binary, NVIDIA fatbin or bundle section, in any archive member)'},
                         {'file': 'libk.so', 'entries': 3}] and
          err == E + j['files'][0]['error'] + '\n', (rc, j, err))
    expect('list: missing file', c, ['nope'], 1, '', E + "'nope': No such file or directory\n")
    c = Case(root, 'size', {'notes.txt': b'hello\n'})
    rc, out, err = c.run('notes.txt')
    check('size: no device code is an error', rc == 1 and err.startswith('offloadtool size: error: notes.txt: no device '
                                                                          'code found'), (rc, out, err))


def partial_cases(root):
    """A file that fails part way lists what was found before the failure (entries
    go out as they are found), then the error; --json gives the file's count and
    its error. Version 1 of the schema left out the whole file."""
    ids = ['host-x86_64-unknown-linux-gnu-', 'hipv4-amdgcn-amd-amdhsa--gfx906', 'hipv4-amdgcn-amd-amdhsa--gfx90a']
    good = blob_bundle(ids, [b'', b'A' * 100, b'B' * 200])
    bad = b'__CLANG_OFFLOAD_BUNDLE__' + struct.pack('<Q', 5)  # five entries, and no table
    c = Case(root, 'list', {'x.tar.xz': tar_xz([('good.bundle', good), ('bad.bundle', bad)])})
    rc, out, err = c.run('x.tar.xz')
    lines = out.splitlines()
    check('list: the entries before the failure, no total line, then the error', rc == 1 and
          lines[:1] == ['x.tar.xz(good.bundle), bundle at 0x0: 3 entries'] and len(lines) == 4 and
          [l.split()[1] for l in lines[1:]] == ids and err.startswith(E + 'x.tar.xz(bad.bundle): ') and
          err.count('\n') == 1, (rc, out, err))
    rc, j, err2 = list_json(c, 'x.tar.xz')
    check('list --json: the entries before the failure; the file\'s count and error', rc == 1 and j and
          j['schema'] == 'offloadtool-list/2' and [e['id'] for e in j['entries']] == ids and
          [e['size'] for e in j['entries']] == [0, 100, 200] and
          j['files'] == [{'file': 'x.tar.xz', 'entries': 3, 'error': err[len(E):-1]}] and err2 == err, (rc, j, err2))
    # size adds entries as it finds them: a file that fails part way counts for nothing in the totals
    c = Case(root, 'size', {'x.tar.xz': tar_xz([('good.bundle', good), ('again.bundle', good), ('bad.bundle', bad)]),
                            'good.bundle': good})
    rc, out, err = c.run('--json', '--per-file', 'x.tar.xz', 'good.bundle')
    s = json.loads(out) if out else {}
    check('size: the entries of a file that fails part way are not in the totals', rc == 1 and
          err.startswith('offloadtool size: error: x.tar.xz(bad.bundle): ') and err.count('\n') == 1 and
          s.get('entries') == 3 and s.get('file_bytes') == 300 and
          [f['file'] for f in s.get('files', [])] == ['good.bundle'], (rc, s, err))


def threads_cases(root):
    """--threads N: a .tar.xz of several xz blocks (as dpkg-deb and xz -T write
    them) is decoded by liblzma's threaded decoder; the listing is the same as
    with one thread, and damaged or truncated xz data is one error line."""
    ids = ['host-x86_64-unknown-linux-gnu-', 'hipv4-amdgcn-amd-amdhsa--gfx906', 'hipv4-amdgcn-amd-amdhsa--gfx90a']
    members = [('b%d.bundle' % i, blob_bundle(ids, [b'', os.urandom(300 << 10), os.urandom(200 << 10)]))
               for i in range(6)]
    xz = harness.run(['xz', '-T2', '--block-size=256KiB', '-c'], stdin=tar_xz(members, mode='w'), check=True).stdout
    damaged = bytearray(xz)
    damaged[len(xz) // 2] ^= 0xff
    c = Case(root, 'list', {'p.tar.xz': xz, 'damaged.tar.xz': bytes(damaged), 'cut.tar.xz': xz[:len(xz) * 2 // 3]})
    listed = harness.run(['xz', '--robot', '--list', os.path.join(c.dir, 'p.tar.xz')], text=True, check=True).stdout
    nblocks = int([l for l in listed.splitlines() if l.startswith('file')][0].split('\t')[2])
    one = c.run('--json', 'p.tar.xz')
    for n in ('2', '3'):
        got = c.run('--threads', n, '--json', 'p.tar.xz')
        check('list --threads %s of a .tar.xz of %d xz blocks: the listing of one thread' % (n, nblocks),
              nblocks > 4 and one[0] == 0 and got == one and len(json.loads(one[1])['entries']) == 18, (got, one))
    for name in ('damaged.tar.xz', 'cut.tar.xz'):
        rc, out, err = c.run('--threads', '2', name)
        check('list --threads 2 of %s: one error line naming it, exit 1' % name,
              rc == 1 and err.startswith(E + name + ': ') and err.count('\n') == 1 and 'xz' in err, (rc, out, err))
    rc, out, err = c.run('--threads', '0', 'p.tar.xz')
    check('list --threads 0 is refused', rc != 0 and out == '' and '--threads' in err, (rc, out, err))


def blob_bundle(ids, payloads):
    """A binary bundle of `payloads` under `ids`, each payload 4 KiB aligned."""
    at = 32 + sum(24 + len(i) for i in ids)
    offsets = []
    for p in payloads:
        at = (at + 4095) // 4096 * 4096
        offsets.append(at)
        at += len(p)
    out = bytearray(b'__CLANG_OFFLOAD_BUNDLE__' + struct.pack('<Q', len(ids)))
    for i, o, p in zip(ids, offsets, payloads):
        out += struct.pack('<QQQ', o, len(p), len(i)) + i.encode()
    for o, p in zip(offsets, payloads):
        out += bytes(o - len(out)) + p
    return bytes(out)


def resident_cases(root):
    """list and size of a 51 MiB file of 400 concatenated bundles read the bundle
    tables only: before, every header was read through the mapping, and each
    fault mapped 64 KiB around it or a whole large folio (written at once, as
    here: the whole file, 55 MB resident)."""
    ids = ['host-x86_64-unknown-linux-gnu-'] + ['hipv4-amdgcn-amd-amdhsa--' + a
                                                for a in ('gfx906', 'gfx90a', 'gfx1030', 'gfx1100')]
    blob = b''.join(blob_bundle(ids, [b''] + [os.urandom(32 << 10) for _ in range(4)]) for _ in range(400))
    d = harness.Folder(root).dir
    with open(os.path.join(d, 'many.bundle'), 'wb') as fh:
        fh.write(blob)  # one write: the page cache may hold it in large folios
    # The same file as the only member of a tar.gz (its payloads do not
    # compress): the member is spooled, and the compressed input read so far
    # leaves memory as the one member is read, not only after it.
    t = io.BytesIO()
    with tarfile.open(fileobj=t, mode='w:gz', compresslevel=1) as tf:
        info = tarfile.TarInfo('many.bundle')
        info.size = len(blob)
        tf.addfile(info, io.BytesIO(blob))
    with open(os.path.join(d, 'many.tar.gz'), 'wb') as fh:
        fh.write(t.getvalue())
    limit = harness.resident_budget_kib(16)
    for applet, name, expected in (
            ('list', 'many.bundle', 'many.bundle: 2000 entries in 400 containers, 50.0 MiB\n'),
            ('size', 'many.bundle', 'total: 2000 entries, 50.0 MiB in the files'),
            ('list', 'many.tar.gz', 'many.tar.gz: 2000 entries in 400 containers, 50.0 MiB\n')):
        rc, peak = harness.peak_resident_kib([OT, applet, name], cwd=d)
        out = harness.run([OT, applet, name], cwd=d, text=True).stdout
        check('%s of %s (%d MiB of concatenated bundles) reads their tables only: peak resident %d KiB <= %d KiB' %
              (applet, name, len(blob) >> 20, peak, limit), rc == 0 and expected in out and peak <= limit, out[-300:])


def cases(root):
    d = harness.Folder(root).dir
    built = build(d)
    plain_cases(root, d, built)
    package_cases(root, d, built)
    offload_binary_cases(root)
    size_cases(root, d, built)
    error_cases(root, built)
    partial_cases(root)
    threads_cases(root)
    resident_cases(root)
    compressed_cases(root, harness.Folder(root).dir)


if __name__ == '__main__':
    sys.exit(harness.run_suite('list', cases, needs=[harness.CLANG, harness.llvm('llc'), LLVM_BUNDLER, harness.LLVM_PACKAGER, READELF, OBJCOPY, DPKG_DEB]))
