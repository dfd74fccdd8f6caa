#!/usr/bin/env python3
"""`offloadtool split` of Windows PE images (DLLs, EXEs; docs/kpack.md
"Splitting", PE).

The images are pe_image_test.py's: two HIP translation units built by clang
for x86_64-pc-windows-msvc, linked by lld-link (the DLL with /release, so
that it carries a CheckSum). References, none of them offloadtool:
  * the image split is the one kpack_pe.py writes by AMD's rules (rocm-kpack
    coff/kpack_transform.py at e3483286), byte for byte, but for the one
    deliberate difference, checked on its own: where the input has a
    CheckSum, split computes it again (the PE checksum, computed here), where
    AMD's splitter leaves the input's;
  * the archives .kpack/t_<arch>.kpack are byte for byte what AMD's writer
    (tests/data/kpack/generate.py) writes from the code objects LLVM's
    clang-offload-bundler unbundles, with the splitter's metadata;
  * llvm-readobj and llvm-objdump read the split image without a warning;
  * join of the split tree gives back the image lld-link wrote, byte for byte;
  * Windows' loader (wine) runs a split EXE linked /dynamicbase with a
    stand-in HIP runtime: both records reach it as HIPK with their index,
    pointing (relocated) at the marker;
  * a tarball holding the folder: split writes a tarball whose members are
    the split folder's files (Python's tarfile); prune --keep gfx90a of it
    keeps the host entries and gfx90a code objects of the DLL only
    (clang-offload-bundler);
  * a wheel holding the DLL in its package's folder: the DLL and archives are
    AMD's rules' for that folder, RECORD lists them (hashlib);
  * an ARM64 DLL (aarch64-pc-windows-msvc) as the x86_64 ones;
  * hostile images (no room for .kpackrf's section header below
    SizeOfHeaders; bytes after the last section's raw data: an overlay, and
    the COFF symbol table of a MinGW image that ld.lld links as GNU ld; a record of
    .hipFatB pointing into the middle of a bundle or outside .hip_fat; a
    signed image; a base-relocated pointer, no record's, into .hip_fat): one
    error line naming the file and the offset, exit 1, nothing written.
"""
import base64
import hashlib
import os
import shutil
import struct
import sys
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import pe_image_test as pe  # noqa: E402  (its builds and readers)
from harness import OT, check, read, run, write  # noqa: E402
import kpack_pe  # noqa: E402
from kpack_pe import BUNDLER, headers, kpack, u32, unbundle  # noqa: E402  (AMD's PE splitter and archive writer, reproduced)


def files(top):
    return sorted(os.path.relpath(os.path.join(p, f), top) for p, _, fs in os.walk(top) for f in fs)


def split_tree(image, name, folder):
    """The folder `folder`/in holding bin/<name>, split by offloadtool into `folder`/ours."""
    src = os.path.join(folder, 'in')
    os.makedirs(os.path.join(src, 'bin'))
    shutil.copyfile(image, os.path.join(src, 'bin', name))
    out = os.path.join(folder, 'ours')
    return src, out, run([OT, 'split', src, '-o', out, '--name', 't'], text=True)


def same_image(label, mine, want, orig):
    """`mine` (split's) is `want` (AMD's rules') byte for byte, but for CheckSum where `orig` has one."""
    at = pe.checksum_offset(orig)
    stale = u32(orig, at)
    if stale:
        check('%s: split computes CheckSum again (0x%x), where AMD\'s splitter leaves the input\'s (0x%x)'
              % (label, u32(mine, at), stale),
              u32(want, at) == stale and u32(mine, at) == pe.pe_checksum(mine, at) and u32(mine, at) != stale)
        check('%s: the split image is AMD\'s splitter\'s byte for byte, CheckSum aside' % label,
              mine[:at] + mine[at + 4:] == want[:at] + want[at + 4:], (len(mine), len(want)))
    else:
        check('%s: the split image is AMD\'s splitter\'s byte for byte (CheckSum 0, as in the input)' % label,
              mine == want, (len(mine), len(want)))


def case(root, d, name, label=None):
    label = label or name
    image = d.path(name)
    base = os.path.join(root, label)
    work = os.path.join(base, 'work')
    os.makedirs(work)
    amd = os.path.join(base, 'amd')
    os.makedirs(os.path.join(amd, 'bin'))
    kpack(image, amd, 'bin/' + name, work)
    src, ours, r = split_tree(image, name, base)
    if not check('%s: split writes the folder' % label, r.returncode == 0 and not r.stderr, r.stdout + r.stderr):
        return
    check('%s: split writes the image and AMD\'s archives, nothing else' % label, files(ours) == files(amd),
          (files(ours), files(amd)))

    mine, want, orig = read(os.path.join(ours, 'bin', name)), read(os.path.join(amd, 'bin', name)), read(image)
    if name == 'k.dll':
        stale = u32(orig, pe.checksum_offset(orig))
        check('k.dll: lld-link /release wrote a CheckSum (the case of the deliberate difference)',
              stale != 0 and stale == pe.pe_checksum(orig, pe.checksum_offset(orig)), hex(stale))
    same_image(label, mine, want, orig)
    for f in files(amd):
        if f.startswith('.kpack/'):
            check('%s: archive %s is AMD\'s writer\'s byte for byte' % (name, f),
                  read(os.path.join(ours, f)) == read(os.path.join(amd, f)))
    _, _, _, secs = headers(mine)
    fat, orig_fat = (next(s for s in headers(x)[3] if s['name'] == '.hip_fat') for x in (mine, orig))
    check('%s: .hip_fat lost whole pages of raw data, kept its address and size' % label,
          fat['raw'] < orig_fat['raw'] and (fat['va'], fat['vs']) == (orig_fat['va'], orig_fat['vs']) and
          secs[-1]['name'] == '.kpackrf', (fat, orig_fat))

    path = os.path.join(ours, 'bin', name)
    rc, _, err = pe.readobj(path, '--sections', '--file-headers', '--coff-basereloc')
    check('%s: llvm-readobj reads the split image without a warning' % label, rc == 0 and not err, err)
    rr = run([pe.OBJDUMP, '-p', '-h', path], text=True)
    check('%s: llvm-objdump -p -h reads it without a warning' % label, rr.returncode == 0 and not rr.stderr, rr.stderr)

    joined = os.path.join(base, 'joined')
    r = run([OT, 'join', ours, '-o', joined], text=True)
    check('%s: join of the split folder gives back the image lld-link wrote, byte for byte' % label,
          r.returncode == 0 and files(joined) == ['bin/' + name] and read(os.path.join(joined, 'bin', name)) == orig,
          (r.stderr, files(joined) if os.path.isdir(joined) else None))

    again = os.path.join(base, 'again')
    r = run([OT, 'split', src, '-o', again, '--name', 't'], text=True)
    check('%s: split again writes the same bytes (deterministic)' % label,
          r.returncode == 0 and files(again) == files(ours) and
          all(read(os.path.join(again, f)) == read(os.path.join(ours, f)) for f in files(ours)), r.stderr)

    if label == 'k.dll':
        package(base, src, ours)
        wheel(base, image, work)


def package(base, src, ours):
    """A tarball of the folder, split: a tarball whose members are the split folder's files."""
    tgz = os.path.join(base, 'k.tar.gz')
    with tarfile.open(tgz, 'w:gz') as t:
        t.add(os.path.join(src, 'bin'), arcname='bin')
    out = os.path.join(base, 'split.tar.gz')
    r = run([OT, 'split', tgz, '-o', out, '--name', 't'], text=True)
    if not check('tarball: split writes a tarball', r.returncode == 0 and not r.stderr, r.stdout + r.stderr):
        return
    with tarfile.open(out) as t:
        got = {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}
    check('tarball: its members are the split folder\'s files, byte for byte',
          got == {f: read(os.path.join(ours, f)) for f in files(ours)}, sorted(got))
    # prune reads the package's DLL too (the same sniffing hands it over).
    pruned = os.path.join(base, 'pruned.tar.gz')
    r = run([OT, 'prune', '--keep', 'gfx90a', tgz, '-o', pruned], text=True)
    if not check('tarball: prune --keep gfx90a writes a tarball', r.returncode == 0, r.stderr):
        return
    work = os.path.join(base, 'prune-work')
    for sub in ('o', 'p'):
        os.makedirs(os.path.join(work, sub))
    with tarfile.open(pruned) as t:
        write(os.path.join(work, 'k.dll'), t.extractfile('bin/k.dll').read())
    image = os.path.join(src, 'bin', 'k.dll')
    orig = unbundle(pe.dump_section(image, '.hip_fat', os.path.join(work, 'orig.fat')), os.path.join(work, 'o'))
    mine = unbundle(pe.dump_section(os.path.join(work, 'k.dll'), '.hip_fat', os.path.join(work, 'k.fat')),
                    os.path.join(work, 'p'))
    want = [{k: v for k, v in b.items() if k.startswith('host-') or '--gfx90a' in k} for b in orig]
    check('tarball: prune --keep gfx90a left the DLL\'s host entries and original gfx90a code objects only '
          '(clang-offload-bundler)', mine == want, [sorted(b) for b in mine])


def record_hash(b):
    return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()


def wheel(base, image, work):
    """A wheel holding the DLL in its package's folder, split: the DLL and archives as AMD's rules write them
    for the folder demok (the wheel's install prefix: kernel name k.dll), and RECORD lists them."""
    whl = os.path.join(base, 'demok-1.0-py3-none-any.whl')
    members = {'demok/__init__.py': b'', 'demok/k.dll': read(image),
               'demok-1.0.dist-info/METADATA': b'Metadata-Version: 2.1\nName: demok\nVersion: 1.0\n',
               'demok-1.0.dist-info/WHEEL': b'Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\n'}
    record = ''.join('%s,%s,%d\n' % (n, record_hash(b), len(b)) for n, b in members.items())
    with zipfile.ZipFile(whl, 'w', zipfile.ZIP_DEFLATED) as z:
        for n, b in members.items():
            z.writestr(zipfile.ZipInfo(n, (2024, 1, 2, 3, 4, 6)), b)
        z.writestr(zipfile.ZipInfo('demok-1.0.dist-info/RECORD', (2024, 1, 2, 3, 4, 6)),
                   record + 'demok-1.0.dist-info/RECORD,,\n')
    out = os.path.join(base, 'split.whl')
    r = run([OT, 'split', whl, '-o', out, '--name', 't'], text=True)
    if not check('wheel: split writes a wheel', r.returncode == 0 and not r.stderr, r.stdout + r.stderr):
        return
    with zipfile.ZipFile(out) as z:
        got = {n: z.read(n) for n in z.namelist()}
    amd = os.path.join(base, 'amd-wheel')
    os.makedirs(amd)
    os.makedirs(os.path.join(work, 'wheel'))
    kpack(image, amd, 'k.dll', os.path.join(work, 'wheel'))
    same_image('wheel: demok/k.dll', got.get('demok/k.dll', b''), read(os.path.join(amd, 'k.dll')), read(image))
    archives = sorted(f for f in files(amd) if f.startswith('.kpack/'))
    check('wheel: its archives are demok/.kpack/t_<arch>.kpack, AMD\'s writer\'s byte for byte',
          archives and all(got.get('demok/' + f) == read(os.path.join(amd, f)) for f in archives),
          (sorted(got), archives))
    lines = [ln.split(',') for ln in got.get('demok-1.0.dist-info/RECORD', b'').decode().splitlines()]
    check('wheel: RECORD lists every member with its sha256 and size (hashlib)',
          sorted(n for n, _, _ in lines) == sorted(got) and
          all(h == record_hash(got[n]) and int(size) == len(got[n]) for n, h, size in lines if h),
          lines)


def refused(label, root, data, offset, what):
    """`data` split as a file of a folder: one error line naming it and `offset`, exit 1, nothing written."""
    folder = os.path.join(root, 'hostile', label)
    os.makedirs(os.path.join(folder, 'in', 'bin'))
    path = os.path.join(folder, 'in', 'bin', 'k.dll')
    write(path, data)
    out = os.path.join(folder, 'out')
    r = run([OT, 'split', os.path.join(folder, 'in'), '-o', out, '--name', 't'], text=True)
    lines = r.stderr.splitlines()
    check('hostile: %s: one error line naming the file and offset 0x%x, exit 1, nothing written' % (label, offset),
          r.returncode == 1 and len(lines) == 1 and
          lines[0].startswith('offloadtool split: error: %s: ' % path) and
          lines[0].endswith(', at offset 0x%x' % offset) and what in lines[0] and
          not os.path.exists(out) and not [f for f in os.listdir(folder) if f not in ('in',)], r.stderr)


def hostile(root, d):
    orig = read(d.path('k.dll'))
    coff, opt, table, secs = headers(orig)
    n = len(secs)
    # SizeOfHeaders ending where the section table ends: no room for one more header.
    data = bytearray(orig)
    struct.pack_into('<I', data, opt + 60, table + n * 40)
    refused('no room for a section header', root, bytes(data), table + n * 40, 'no room for the section header')
    # Bytes after the last section's raw data (an overlay).
    refused('data after the last section', root, orig + b'overlay!' * 64, len(orig), 'follow the last section')
    rec = next(s for s in secs if s['name'] == '.hipFatB')
    base = struct.unpack_from('<Q', orig, opt + 24)[0]
    first = struct.unpack_from('<Q', orig, rec['ptr'] + 8)[0]
    # A record pointing into the middle of a bundle, and one outside .hip_fat.
    for label, value, what in (('a record pointing into a bundle', first + 8, 'middle of a bundle'),
                               ('a record pointing outside .hip_fat', base + rec['va'], 'outside .hip_fat')):
        data = bytearray(orig)
        struct.pack_into('<Q', data, rec['ptr'] + 24 + 8, value)
        refused(label, root, bytes(data), rec['ptr'] + 24 + 8, what)
    # Signed: a certificate table (data directory 4) ending the file.
    data = bytearray(orig + bytes(16))
    struct.pack_into('<II', data, opt + 112 + 8 * 4, len(orig), 16)
    refused('a signed image', root, bytes(data), opt + 112 + 8 * 4, 'the image is signed')
    # A base-relocated pointer that is no record's, pointing into .hip_fat (AMD's self-check).
    fat = next(s for s in secs if s['name'] == '.hip_fat')
    entry, rva = next((e, r) for e, r in dir64_entries(orig, secs)
                      if not rec['va'] <= r < rec['va'] + rec['vs'] and any(
                          s['va'] <= r < s['va'] + s['vs'] and s['raw'] for s in secs))
    owner = next(s for s in secs if s['va'] <= rva < s['va'] + s['vs'])
    data = bytearray(orig)
    struct.pack_into('<Q', data, owner['ptr'] + rva - owner['va'], base + fat['va'] + 16)
    refused('a base-relocated pointer into .hip_fat', root, bytes(data), entry, 'points into .hip_fat')


def dir64_entries(data, secs):
    """(file offset of the entry, RVA it fixes up) of each DIR64 base relocation."""
    reloc = next(s for s in secs if s['name'] == '.reloc')
    out, at, end = [], reloc['ptr'], reloc['ptr'] + reloc['vs']
    while at + 8 <= end:
        page, size = struct.unpack_from('<II', data, at)
        for e in range(at + 8, at + size, 2):
            v = struct.unpack_from('<H', data, e)[0]
            if v >> 12 == 10:
                out.append((e, page + (v & 0xfff)))
        at += size
    return out


# The stand-in runtime for a split EXE: each registration writes its record
# (magic, version, index) and the 128 bytes its pointer points at (the marker,
# then the zeros the loader maps after it) to registered-<n>.bin.
HIPRT_KPACK = pe.HIPRT[:pe.HIPRT.index(b'struct wrapper')] + b'''
struct wrapper { unsigned magic, version; const unsigned char *binary; unsigned long long index; };
__declspec(dllexport) void **__hipRegisterFatBinary(struct wrapper *w) {
  static void *h;
  unsigned char out[16 + 128];
  for (int i = 0; i < 4; ++i) {
    out[i] = (unsigned char)(w->magic >> 8 * i);
    out[4 + i] = (unsigned char)(w->version >> 8 * i);
  }
  for (int i = 0; i < 8; ++i) out[8 + i] = (unsigned char)(w->index >> 8 * i);
  for (int i = 0; i < 128; ++i) out[16 + i] = w->binary[i];
  save(out, sizeof out);
  return &h;
}
''' + pe.HIPRT[pe.HIPRT.index(b'__declspec(dllexport) void __hipRegisterFunction'):]


def wine(root):
    """Windows' loader (wine) runs the split EXE (/dynamicbase, rebased: .reloc applied to the records): each
    record reaches the runtime as HIPK with its index, pointing at the marker."""
    d, env = pe.wine_app(root, HIPRT_KPACK)
    r = run([OT, 'split', d.path('app.exe'), '-o', d.path('split'), '--name', 't'], text=True)
    if not check('wine: split app.exe', r.returncode == 0, r.stderr):
        return
    run_dir = harness.Folder(root)
    for f in ('hiprt.dll', 'split/app.exe'):
        write(run_dir.path(os.path.basename(f)), read(d.path(f)))
    r = run([pe.WINE, 'app.exe'], cwd=run_dir.dir, env=env, text=True, timeout=300)
    got = sorted(f for f in os.listdir(run_dir.dir) if f.startswith('registered-'))
    marker = kpack_pe.generate.msgpack.packb({'kpack_search_paths': ['.kpack/t_@GFXARCH@.kpack'],
                                              'kernel_name': 'app.exe'}, use_bin_type=True)
    want = [struct.pack('<IIQ', 0x4B504948, 1, i) + marker + bytes(128 - len(marker)) for i in range(2)]
    check('wine runs the split app.exe: each record reaches the runtime as HIPK with its index, pointing at the '
          'marker (python3-msgpack\'s bytes)', r.returncode == 0 and [read(run_dir.path(f)) for f in got] == want,
          (r.returncode, got, r.stderr[-1000:]))


def body(root):
    d = pe.build(os.path.join(root, 'x64'), 'x86_64-pc-windows-msvc', 'x64')
    for name in ('k.dll', 'k.exe'):
        case(root, d, name)
    a = pe.build(os.path.join(root, 'arm64'), 'aarch64-pc-windows-msvc', 'arm64')
    case(root, a, 'k.dll', 'arm64 k.dll')
    hostile(root, d)
    # MinGW (ld.lld as GNU ld): a COFF symbol and string table after the sections' raw data.
    m = pe.build(os.path.join(root, 'mingw'), 'x86_64-w64-windows-gnu', None, mingw=True)
    data = read(m.path('k.dll'))
    end = max(s['ptr'] + s['raw'] for s in headers(data)[3] if s['raw'])
    check('mingw k.dll: its COFF symbol table follows the sections\' raw data',
          end < len(data) and u32(data, headers(data)[0] + 8) >= end, (hex(end), len(data)))
    refused('mingw k.dll, COFF symbols after the last section', root, data, end, 'follow the last section')
    wine(root)


if __name__ == '__main__':
    sys.exit(harness.run_suite('kpack-split-pe', body,
                               needs=[pe.LLD_LINK, pe.READOBJ, pe.OBJCOPY, pe.OBJDUMP, BUNDLER, pe.WINE]))
