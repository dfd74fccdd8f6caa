"""NVIDIA fat binaries: offloadtool against NVIDIA's cuobjdump (CUDA 11.8).

The references are Debian 12's CUDA 11.8 packages, which scripts/fetch-cuda-samples
downloads and unpacks into $OT_CUDA_CACHE (default ~/.cache/offloadtool/cuda):
cuobjdump 11.8.86 and fatbinary 11.8.89 (nvidia-cuda-toolkit), libcublas,
libcublasLt, libcurand, libcufft, libcusparse, bart (bart-cuda) and
relion_refine (relion-cuda); and a CUDA install for clang's --cuda-path.

What is checked:
 1. Listing, for every library, bart and relion_refine, and for clang 19's
    classic CUDA objects built here: `offloadtool list --json` against
    `cuobjdump -all -lelf -lptx` entry for entry (as many cubins and PTX
    files, the same kind and arch in cuobjdump's order), and against
    `cuobjdump -lelf -lptx` (only each object's .nv_fatbin, or its
    __nv_relfatbin when it has none). Every entry's offset, size, kind,
    target, compression and uncompressed size against the fatbin headers
    read here (a parser of its own below), and the bytes there: every
    uncompressed cubin starts with \\x7fELF, every uncompressed PTX holds
    ".version", the smallest LZ4 cubin and PTX of each file decode (LZ4 by
    tests/data/nvidia/describe.py) to their declared size and to an ELF file or
    PTX. `offloadtool size --json`: entries and byte totals, overall and per
    target, are the sums over the listing.
 2. Extraction: `offloadtool unbundle <file> --extract-dir D` writes the same
    file names holding the same bytes as `cuobjdump -all -xelf all -xptx all
    <file>` run in an empty folder (it writes into its working folder), for
    bart, libcurand, relion_refine, libcufft (__nv_relfatbin included: -all
    extracts it), clang's objects, and fatbins that fatbinary 11.8 makes here
    from probe cubins and PTX showing where cuobjdump ends each file.
 3. clang++-19's classic CUDA objects (sm_70 + sm_80 cubins and PTX, built with
    -nocudainc -nocudalib --cuda-path=$OT_CUDA_CACHE/cuda-11.8), with and
    without -fgpu-rdc (.nv_fatbin / __nv_relfatbin), objects holding both
    sections in either order (ld -r), and an ar archive of them: 1 and 2.
 4. The CUDA 13 fixtures of tests/data/nvidia (cuobjdump 11.8 cannot read
    them): extracted cubins are the inputs/ files byte for byte (LZ4 and zstd
    ones decompressed), extracted PTX is describe.py's ptx_as_stored(input)
    without its NUL; list shows the targets, offsets, sizes, compression and
    uncompressed sizes expected.txt records (describe.py's own reading);
    against cuobjdump 13.0's recorded output (cuobjdump13.txt): its listing
    entry for entry, with and without -all, its extracted files' names and
    bytes (an sm_100f cubin is named sm_100), and prune --keep sm_80 /
    compute_80 of the objects keeps what nvprune 13.0 -arch keeps.
 5. `offloadtool compat select`: the entry NVIDIA's documented rules give
    (see COMPAT below, with the sources).

What cuobjdump 11.8 does, as these files show it (and so what is compared):
  * Names: "<stem>.<n>.sm_XX.cubin" and "<stem>.<n>.sm_XX.ptx"; PTX for
    compute_XX is named sm_XX too. <stem> is the named file's name without
    its last extension ("libcufft.so.10.9.0" of libcufft.so.10.9.0.58, "k" of
    k.o, "bart" of bart). n counts cubins and PTX apart, from 1, over the whole
    file: in an ar archive named on the command line, entries are named after
    the archive ("lib.3.sm_75.cubin") and n runs on from member to member.
  * Order: file order, except that within one object every .nv_fatbin entry
    comes before every __nv_relfatbin entry, whichever section comes first in
    the file (checked on objects made with both orders). Without -all it lists
    and extracts an object's .nv_fatbin only, or its __nv_relfatbin when it has
    no .nv_fatbin ("By default will only dump contents of executable fatbin
    (if exists), else relocatable fatbin", cuobjdump --help).
  * Bytes: a compressed entry is written decompressed. A cubin is written as
    far as its ELF headers reach: the end of the section header table, of the
    program header table, or of a section that is not SHT_NOBITS (SHT_NULL
    included), whichever is last; program headers' file ranges do not count;
    whatever follows (fatbinary's zero padding to 8, bytes appended to the
    input cubin) is left out. A PTX file is the stored text up to its first
    NUL byte (fatbinary ends the text with one; the NUL and anything after it
    are left out).
  * Where a section of a cubin reaches past its fatbin entry, cuobjdump reads
    on into the bytes after the entry (the next entry's header); offloadtool
    stops at the entry's end. Recorded in DIFFERENCES below, checked both ways.

Nothing is skipped: a missing package, tool or file is a failing test.
"""
import hashlib
import json
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
import harness  # noqa: E402
from harness import OT, check, run  # noqa: E402

NVDATA = os.path.join(harness.DATA, 'nvidia')
sys.path.insert(0, NVDATA)
import describe  # noqa: E402  (tests/data/nvidia/describe.py: lz4_block, ptx_as_stored)

CACHE = os.path.abspath(os.environ.get('OT_CUDA_CACHE') or
                        os.path.join(os.path.expanduser('~'), '.cache', 'offloadtool', 'cuda'))
UNPACKED = os.path.join(CACHE, 'unpacked')
TOOLKIT_BIN = os.path.join(UNPACKED, 'nvidia-cuda-toolkit', 'usr', 'bin')
CUOBJDUMP = os.path.join(TOOLKIT_BIN, 'cuobjdump')
FATBINARY = os.path.join(TOOLKIT_BIN, 'fatbinary')
CUDA_PATH = os.path.join(CACHE, 'cuda-11.8')
CLANGXX = '/usr/bin/clang++-19'
LIB = 'usr/lib/x86_64-linux-gnu'
LIBRARIES = [os.path.join(UNPACKED, p) for p in (
    'libcublas11/%s/libcublas.so.11.11.3.6' % LIB,
    'libcublaslt11/%s/libcublasLt.so.11.11.3.6' % LIB,
    'libcurand10/%s/libcurand.so.10.3.0.86' % LIB,
    'libcufft10/%s/libcufft.so.10.9.0.58' % LIB,
    'libcusparse11/%s/libcusparse.so.11.7.5.86' % LIB)]
BART = os.path.join(UNPACKED, 'bart-cuda', 'usr', 'bin', 'bart')
RELION = os.path.join(UNPACKED, 'relion-cuda', 'usr', 'bin', 'relion_refine')
LIBCURAND, LIBCUFFT = LIBRARIES[2], LIBRARIES[3]
EXTRACTED = [BART, LIBCURAND, RELION, LIBCUFFT]  # part 2 on these (the others are 90-575 MB)

K_CU = ('struct dim3 { unsigned x, y, z; };\n'
        'extern "C" int cudaLaunchKernel(const void*, dim3, dim3, void**, unsigned long, void*);\n'
        '__attribute__((global)) void k(float* x){ x[0]=1; }\n')

FATBIN_MAGIC = 0xBA55ED50
LZ4, ZSTD, ARCH_SPECIFIC, FAMILY = 0x2000, 0x8000, 0x100000, 0x200000
KIND = {1: 'ptx', 2: 'cubin'}
LIST_LINE = re.compile(r'^(ELF|PTX) file\s+(\d+): (.*)\.(\d+)\.(sm_\d+[a-z]?)\.(cubin|ptx)$')
MEMBER_LINE = re.compile(r'^member (.*):(.*):$')

# Where offloadtool means to differ from cuobjdump 11.8 (printed on every run).
DIFFERENCES = [
    'a cubin whose section reaches past its fatbin entry: cuobjdump writes the bytes after the entry '
    '(the next entry\'s header) as the rest of that section; offloadtool stops at the entry\'s end',
]


# ---------------------------------------------------------------------------
# Reading

def read_range(path, offset, size):
    with open(path, 'rb') as f:
        f.seek(offset)
        return f.read(size)


def stem(path):
    """cuobjdump's <stem>: the file's name without its last extension."""
    name = os.path.basename(path)
    return name.rsplit('.', 1)[0] if '.' in name[1:] else name


def cuobjdump_list(path, all_fatbins):
    """`cuobjdump [-all] -lelf -lptx <path>`: (entries, problem). An entry:
    kind ('cubin'/'ptx'), n, stem, arch ('sm_52'), member (None outside archives)."""
    r = run([CUOBJDUMP] + (['-all'] if all_fatbins else []) + ['-lelf', '-lptx', path], text=True, timeout=600)
    if r.returncode != 0:
        return [], 'cuobjdump exit %s: %s' % (r.returncode, r.stderr[-2000:])
    entries, bad, member = [], [], None
    for line in r.stdout.splitlines():
        if not line.strip():
            continue
        m = MEMBER_LINE.match(line)
        if m:
            member = m.group(2)
            continue
        m = LIST_LINE.match(line)
        if not m:
            bad.append(line)
            continue
        entries.append({'kind': 'cubin' if m.group(1) == 'ELF' else 'ptx', 'n': int(m.group(2)), 'stem': m.group(3),
                        'file_n': int(m.group(4)), 'arch': m.group(5), 'member': member})
    if bad:
        return entries, 'lines this test cannot read:\n' + '\n'.join(bad[:10])
    return entries, r.stderr.strip() or None


def none_found_only(problem):
    """`problem` (cuobjdump_list's), or None when it is only cuobjdump's info
    lines that a file holds no cubin or no PTX (a pruned file may hold none)."""
    if problem and all(l.startswith('cuobjdump info') and 'file found' in l for l in problem.splitlines()):
        return None
    return problem


def list_json(path):
    r = run([OT, 'list', '--json', path], text=True, timeout=600)
    if r.returncode != 0:
        return None, 'offloadtool list --json: exit %s\n%s' % (r.returncode, r.stderr[-3000:])
    try:
        return json.loads(r.stdout), None
    except ValueError as e:
        return None, 'offloadtool list --json: not JSON (%s)' % e


def section_link(entry):
    """The 'section ...' link of an entry's path (the last one), or None."""
    links = [p for p in entry['path'] if isinstance(p, str) and p.startswith('section ')]
    return links[-1] if links else None


def object_of(entry):
    """The entry's path before its section: one object."""
    path = entry['path']
    s = section_link(entry)
    return tuple(path[:len(path) - 1 - path[::-1].index(s)]) if s else tuple(path[:1])


def by_object(entries):
    """Our entries grouped by object, objects in file order."""
    groups = {}
    for e in entries:
        groups.setdefault(object_of(e), []).append(e)
    return list(groups.values())


def in_cuobjdump_order(entries, all_fatbins):
    """Our entries (file order) in the order cuobjdump numbers them: each
    object's .nv_fatbin entries, then (with -all, or when the object has no
    .nv_fatbin) its __nv_relfatbin entries."""
    out = []
    for group in by_object(entries):
        nv = [e for e in group if section_link(e) != 'section __nv_relfatbin']
        rel = [e for e in group if section_link(e) == 'section __nv_relfatbin']
        out += nv + rel if all_fatbins or not nv else nv
    return out


def cuobjdump_arch(entry):
    """What cuobjdump calls our entry's target: sm_XX for cubins and PTX, an
    arch-specific one sm_XXa; a family-specific one (sm_100f) by its SM alone,
    as cuobjdump 13.0 lists the cuDNN/cuBLAS 13 libraries (seen on an H200 with
    scripts/gpu-survey-cuda; 11.8 predates family targets)."""
    t = entry.get('target') or ''
    t = 'sm_' + t[len('compute_'):] if t.startswith('compute_') else t
    return t[:-1] if t.endswith('f') else t


def fatbin_headers(path):
    """Every fatbin entry of an ELF file's .nv_fatbin and __nv_relfatbin
    sections (section order, then file order), or of a .fatbin file, read
    from the headers here: dicts of section, kind, target, offset (of the
    payload), size (the compressed size, or the stored size), compressed,
    uncompressed_size, flags, stored (the payload size)."""
    with open(path, 'rb') as f:
        if f.read(4) == struct.pack('<I', FATBIN_MAGIC):
            return _fatbins(f, 0, os.path.getsize(path), None)
    sections = harness.elf64_sections(path)
    if sections is None:
        raise RuntimeError('%s: neither a fatbin nor a 64-bit little-endian ELF file' % path)
    out = []
    with open(path, 'rb') as f:
        for s in sections:
            if s['name'] in ('.nv_fatbin', '__nv_relfatbin') and s['type'] != 8:
                out += _fatbins(f, s['offset'], s['offset'] + s['size'], 'section ' + s['name'])
    return out


def _fatbins(f, p, end, section):
    """The entries of the fatbins filling [p, end) of the open file f; zero
    bytes between fatbins are skipped."""
    out = []
    while p < end:
        f.seek(p)
        head = f.read(16)
        if head[:8] == b'\0' * 8:
            p += 8
            continue
        magic, _, hsize, fsize = struct.unpack('<IHHQ', head)
        if magic != FATBIN_MAGIC:
            raise RuntimeError('no fatbin magic at 0x%x' % p)
        q, fend = p + hsize, p + hsize + fsize
        while q < fend:
            f.seek(q)
            (kind, _, ehsize, psize, csize, _, _, _, arch, _, _, flags, _,
             usize) = describe.ENTRY.unpack(f.read(describe.ENTRY.size))
            compressed = bool(flags & (LZ4 | ZSTD))
            target = '%s_%d%s%s' % ('compute' if kind == 1 else 'sm', arch,
                                    'a' if flags & ARCH_SPECIFIC else '', 'f' if flags & FAMILY else '')
            out.append({'section': section, 'kind': KIND.get(kind, 'kind %d' % kind), 'target': target,
                        'offset': q + ehsize, 'size': csize if compressed else psize, 'compressed': compressed,
                        'uncompressed_size': usize if compressed else psize, 'flags': flags, 'stored': psize})
            q += ehsize + psize
        p = fend
    return out


def entry_image(path, t):
    """The bytes entry `t` (of fatbin_headers) holds, LZ4 decoded (describe.py)."""
    data = read_range(path, t['offset'], t['size'])
    if t['flags'] & LZ4:
        return describe.lz4_block(data, t['uncompressed_size'])
    if t['flags'] & ZSTD:
        raise RuntimeError('zstd entries are not decoded here')
    return data


# ---------------------------------------------------------------------------
# 1. Listing

def check_listing(what, path, archive_stem=None):
    """cuobjdump -all -lelf -lptx and cuobjdump -lelf -lptx against our list
    --json of `path`; returns our entries (file order) or None."""
    listing, problem = list_json(path)
    if not check('%s: offloadtool list --json runs' % what, problem is None, problem):
        return None
    ours = [e for e in listing.get('entries', []) if e.get('kind') in ('cubin', 'ptx')]
    odd = [(e.get('id'), e.get('path')) for e in listing.get('entries', []) if e.get('kind') not in ('cubin', 'ptx')
           or section_link(e) not in ('section .nv_fatbin', 'section __nv_relfatbin')]
    check('%s: every entry listed is a cubin or PTX in .nv_fatbin or __nv_relfatbin' % what, not odd, odd[:5])
    want_stem = archive_stem or stem(path)
    for all_fatbins in (True, False):
        how = 'cuobjdump %s-lelf -lptx' % ('-all ' if all_fatbins else '')
        theirs, problem = cuobjdump_list(path, all_fatbins)
        check('%s: %s lists entries' % (what, how), problem is None and theirs, problem or 'none')
        mine = in_cuobjdump_order(ours, all_fatbins)
        for kind in ('cubin', 'ptx'):
            t = sum(1 for x in theirs if x['kind'] == kind)
            o = sum(1 for e in mine if e['kind'] == kind)
            check('%s: as many %s entries as %s (%d)' % (what, kind, how, t), t == o, 'ours %d' % o)
        got = [(e['kind'], cuobjdump_arch(e)) for e in mine]
        want = [(x['kind'], x['arch']) for x in theirs]
        first = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), None)
        check('%s: kind and arch entry for entry in %s\'s order (%d entries)' % (what, how, len(want)),
              got == want, 'first difference at %s: ours %s, cuobjdump %s' % (
                  first, got[first] if first is not None else got[len(want):][:3],
                  want[first] if first is not None else want[len(got):][:3]))
        # cuobjdump's numbering, which our extracted files' names follow.
        numbers = {'cubin': 0, 'ptx': 0}
        good = True
        for x in theirs:
            numbers[x['kind']] += 1
            good = good and x['n'] == x['file_n'] == numbers[x['kind']] and x['stem'] == want_stem
        check('%s: %s names <%s>.<n>.sm_XX.cubin|ptx, n counting cubins and PTX apart from 1' % (what, how, want_stem),
              good, theirs[:4])
        if archive_stem:
            check('%s: %s lists the entries member by member as we do' % (what, how),
                  [x['member'] for x in theirs] == [e['path'][1] for e in mine],
                  'theirs %s\nours   %s' % ([x['member'] for x in theirs], [e['path'][1] for e in mine]))
    return ours


def check_headers_and_bytes(what, path, ours):
    """Our listing against the fatbin headers read here, and the bytes there."""
    theirs = fatbin_headers(path)
    fields = ('kind', 'target', 'offset', 'size', 'compressed', 'uncompressed_size')
    check('%s: as many entries as the fatbin headers hold (%d)' % (what, len(theirs)), len(ours) == len(theirs),
          'ours %d' % len(ours))
    bad = [(i, {k: (e.get(k), t[k]) for k in fields if e.get(k) != t[k]})
           for i, (e, t) in enumerate(zip(ours, theirs)) if any(e.get(k) != t[k] for k in fields)]
    check('%s: every entry\'s %s are the headers\' (file order)' % (what, ', '.join(fields)), not bad,
          'entry: {field: (ours, headers)}: %s' % bad[:5])
    bad = [i for i, (e, t) in enumerate(zip(ours, theirs)) if section_link(e) != t['section']]
    check('%s: every entry in the section its fatbin lies in' % what, not bad, bad[:10])
    with open(path, 'rb') as f:
        def at(offset, size):
            f.seek(offset)
            return f.read(size)
        raw_cubins = [t for t in theirs if t['kind'] == 'cubin' and not t['compressed']]
        raw_ptx = [t for t in theirs if t['kind'] == 'ptx' and not t['compressed']]
        bad = [t['offset'] for t in raw_cubins if at(t['offset'], 4) != b'\x7fELF']
        check('%s: the bytes at each uncompressed cubin\'s offset start with \\x7fELF (%d)' % (what, len(raw_cubins)),
              not bad, bad[:10])
        bad = [t['offset'] for t in raw_ptx if b'.version' not in at(t['offset'], min(t['size'], 4096))]
        check('%s: the bytes at each uncompressed PTX\'s offset hold ".version" (%d)' % (what, len(raw_ptx)),
              not bad, bad[:10])
        for kind, sign in (('cubin', b'\x7fELF'), ('ptx', b'.version')):
            lz4 = [t for t in theirs if t['kind'] == kind and t['flags'] & LZ4]
            if not lz4:
                continue
            t = min(lz4, key=lambda x: x['size'])
            name = '%s: the smallest LZ4 %s (%d bytes at 0x%x) decodes to its %d bytes, %s' % (
                what, kind, t['size'], t['offset'], t['uncompressed_size'], 'an ELF file' if kind == 'cubin' else 'PTX')
            try:
                data = entry_image(path, t)
                check(name, data.startswith(sign) if kind == 'cubin' else sign in data[:4096], data[:64])
            except (ValueError, IndexError) as e:
                check(name, False, e)


def check_size(what, path, ours):
    r = run([OT, 'size', '--json', path], text=True, timeout=600)
    try:
        s = json.loads(r.stdout)
    except ValueError as e:
        check('%s: offloadtool size --json runs' % what, False, '%s\n%s' % (e, r.stderr[-2000:]))
        return
    want = (len(ours), sum(e['size'] for e in ours), sum(e['uncompressed_size'] for e in ours))
    got = (s.get('entries'), s.get('file_bytes'), s.get('uncompressed_bytes'))
    check('%s: size --json: entries, file bytes, uncompressed bytes are the listing\'s sums %s' % (what, want),
          got == want, 'size says %s' % (got,))
    per = {}
    for e in ours:
        n, b, u = per.get(e['target'], (0, 0, 0))
        per[e['target']] = (n + 1, b + e['size'], u + e['uncompressed_size'])
    got = {t.get('target'): (t.get('entries'), t.get('file_bytes'), t.get('uncompressed_bytes'))
           for t in s.get('targets', [])}
    check('%s: size --json per target (%d targets) are the listing\'s sums' % (what, len(per)), got == per,
          'size %s\nlist %s' % (sorted(got.items()), sorted(per.items())))


# ---------------------------------------------------------------------------
# 2. Extraction

def check_extraction(what, path, root):
    """cuobjdump -all -xelf all -xptx all against unbundle --extract-dir: the
    same names, the same bytes. Returns cuobjdump's folder."""
    theirs = harness.Folder(root)
    r = run([CUOBJDUMP, '-all', '-xelf', 'all', '-xptx', 'all', path], cwd=theirs.dir, text=True, timeout=600)
    check('%s: cuobjdump -all -xelf all -xptx all extracts files' % what, r.returncode == 0 and theirs.names(),
          'exit %s: %s' % (r.returncode, r.stderr[-2000:]))
    ours = harness.Folder(root)
    r = run([OT, 'unbundle', path, '--extract-dir', ours.dir], text=True, timeout=600)
    check('%s: offloadtool unbundle --extract-dir runs' % what, r.returncode == 0, r.stderr[-2000:])
    t, o = theirs.names(), ours.names()
    check('%s: unbundle --extract-dir writes the %d files cuobjdump writes, by the same names' % (what, len(t)),
          t == o, 'only cuobjdump: %s\nonly ours: %s' % (sorted(set(t) - set(o))[:10], sorted(set(o) - set(t))[:10]))
    differ = [(n, os.path.getsize(theirs.path(n)), os.path.getsize(ours.path(n))) for n in t
              if n in o and not harness.same_file(theirs.path(n), ours.path(n))]
    check('%s: every file holds cuobjdump\'s bytes' % what, not differ,
          '(name, cuobjdump\'s size, ours): %s' % differ[:10])
    check_bare_files(what, theirs, t)
    return theirs


def check_bare_files(what, folder, names):
    """cuobjdump's extracted cubins and PTX files, listed one by one as bare
    device code: each is one entry, the whole file, for the SM cuobjdump's name
    gives it (a cubin's header does not tell sm_90a from sm_90: digits only)."""
    wrong = []
    for i in range(0, len(names), 400):
        chunk = names[i:i + 400]
        r = run([OT, 'list', '--json'] + chunk, cwd=folder.dir, text=True, timeout=600)
        if r.returncode != 0:
            wrong.append(('list failed', r.stderr[-500:]))
            continue
        got = {}
        for e in json.loads(r.stdout)['entries']:
            got.setdefault(e['file'], []).append(e)
        for n in chunk:
            arch = n.split('.')[-2]  # "<stem>.<n>.sm_80.cubin"
            es = got.get(n, [])
            kind = 'cubin' if n.endswith('.cubin') else 'ptx'
            want = (arch.rstrip('a') if kind == 'cubin' else 'compute_' + arch[3:])
            if len(es) != 1 or es[0]['id'] != want or es[0]['kind'] != kind or \
                    es[0]['size'] != os.path.getsize(folder.path(n)):
                wrong.append((n, [(e['id'], e['kind'], e['size']) for e in es]))
    check('%s: each file cuobjdump extracts lists as one %s entry, the whole file' % (what, 'bare cubin or PTX'),
          not wrong, wrong[:10])


def check_file(what, path, root, extract):
    ours = check_listing(what, path)
    if ours is not None:
        check_headers_and_bytes(what, path, ours)
        check_size(what, path, ours)
    if extract:
        check_extraction(what, path, root)


# ---------------------------------------------------------------------------
# 3. clang's classic CUDA objects, and fatbinary 11.8's probes

def clang_cuda(folder, source, out, archs, rdc):
    folder.put(source, K_CU.replace('void k(', 'void %s(' % os.path.splitext(source)[0]))
    argv = [CLANGXX, '-x', 'cuda', '-nocudainc', '-nocudalib', '--cuda-path=' + CUDA_PATH]
    argv += ['--cuda-gpu-arch=' + a for a in archs] + (['-fgpu-rdc'] if rdc else []) + ['-c', source, '-o', out]
    # PATH without /usr/local/cuda/bin: clang takes ptxas and fatbinary from --cuda-path.
    r = run(argv, cwd=folder.dir, env={'PATH': '/usr/bin:/bin'}, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError('%s failed (exit %s):\n%s' % (' '.join(argv), r.returncode, r.stderr))
    return folder.path(out)


def check_clang_objects(root):
    d = harness.Folder(root)
    k = clang_cuda(d, 'k.cu', 'k.o', ['sm_70', 'sm_80'], False)
    k_rdc = clang_cuda(d, 'k.cu', 'k-rdc.o', ['sm_70', 'sm_80'], True)
    clang_cuda(d, 'k2.cu', 'k2.o', ['sm_75'], False)
    sections = {os.path.basename(p): [s['name'] for s in harness.elf64_sections(p)
                                      if s['name'] in ('.nv_fatbin', '__nv_relfatbin')] for p in (k, k_rdc)}
    check('clang: k.o has .nv_fatbin, -fgpu-rdc\'s k-rdc.o __nv_relfatbin',
          sections == {'k.o': ['.nv_fatbin'], 'k-rdc.o': ['__nv_relfatbin']}, sections)
    # Both sections in one object, in either order (ld -r keeps the inputs' order).
    d.run(['ld', '-r', 'k-rdc.o', 'k2.o', '-o', 'relfirst.o'], check=True)
    d.run(['ld', '-r', 'k2.o', 'k-rdc.o', '-o', 'exefirst.o'], check=True)
    for name, want in (('relfirst.o', ['__nv_relfatbin', '.nv_fatbin']),
                       ('exefirst.o', ['.nv_fatbin', '__nv_relfatbin'])):
        got = [s['name'] for s in harness.elf64_sections(d.path(name)) if s['name'] in ('.nv_fatbin', '__nv_relfatbin')]
        check('ld -r: %s holds %s in that order' % (name, ' then '.join(want)), got == want, got)
    d.run(['ar', 'rc', 'lib.a', 'k.o', 'relfirst.o', 'k-rdc.o'], check=True)
    for name in ('k.o', 'k-rdc.o', 'relfirst.o', 'exefirst.o'):
        check_file('clang %s' % name, d.path(name), root, True)
    what = 'ar archive lib.a (k.o, relfirst.o, k-rdc.o)'
    check_listing(what, d.path('lib.a'), archive_stem='lib')
    check_extraction(what, d.path('lib.a'), root)
    check_compat_clang(k)
    return k, k_rdc


def elf_header(d):
    phoff, shoff = struct.unpack_from('<QQ', d, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from('<HHHH', d, 0x36)
    return phoff, phnum, phentsize, shoff, shnum, shentsize


def last_progbits(d):
    """(index, header offset, data offset, size) of the cubin's last SHT_PROGBITS section."""
    _, _, _, shoff, shnum, shentsize = elf_header(d)
    for i in reversed(range(shnum)):
        h = shoff + i * shentsize
        sh_type, = struct.unpack_from('<I', d, h + 4)
        if sh_type == 1:
            off, size = struct.unpack_from('<QQ', d, h + 0x18)
            return i, h, off, size
    raise RuntimeError('no SHT_PROGBITS section')


def probe_cubins(rel, exe):
    """{name: (cubin bytes, how many bytes cuobjdump is expected to write)} made
    from a relocatable cubin (no program headers; its section header table
    last) and an executable one (program headers after the section headers)."""
    _, _, _, shoff, shnum, shentsize = elf_header(rel)
    rel_end = shoff + shnum * shentsize
    phoff, phnum, phentsize, _, _, _ = elf_header(exe)
    out = {
        'shdr-table-last': (rel + b'abc', rel_end),
        'phdr-table-last': (exe + b'abc', phoff + phnum * phentsize),
    }
    # The last PROGBITS section's data moved after the section header table.
    d = bytearray(rel)
    _, h, off, size = last_progbits(rel)
    struct.pack_into('<Q', d, h + 0x18, len(d))
    out['section-after-tables'] = (bytes(d + rel[off:off + size]), len(rel) + size)
    # That section reaching 50 bytes into bytes appended (program headers' ranges do not count: see below).
    d = bytearray(exe + b'Y' * 200)
    _, h, off, size = last_progbits(exe)
    struct.pack_into('<Q', d, h + 0x20, len(exe) + 50 - off)
    out['section-into-appended-bytes'] = (bytes(d), len(exe) + 50)
    # A program header's file range reaching into bytes appended: not counted.
    d = bytearray(exe + b'Z' * 200)
    h = phoff + phentsize  # the second program header (a PT_LOAD in clang's cubins)
    p_offset, = struct.unpack_from('<Q', d, h + 8)
    struct.pack_into('<Q', d, h + 0x20, len(exe) + 100 - p_offset)
    out['program-header-into-appended-bytes'] = (bytes(d), len(exe))
    # The last PROGBITS section made SHT_NOBITS / SHT_NULL, reaching into bytes appended.
    for name, sh_type, counted in (('nobits-into-appended-bytes', 8, False),
                                   ('null-type-into-appended-bytes', 0, True)):
        d = bytearray(rel + b'X' * 200)
        _, h, _, _ = last_progbits(rel)
        struct.pack_into('<I', d, h + 4, sh_type)
        struct.pack_into('<QQ', d, h + 0x18, len(rel), 100)
        out[name] = (bytes(d), len(rel) + 100 if counted else rel_end)
    return out


def check_fatbinary_probes(root, k, k_rdc):
    """Fatbins fatbinary 11.8 makes of probe cubins and a PTX with a NUL inside:
    cuobjdump's files and ours, and the lengths the ELF rule gives."""
    src = harness.Folder(root)
    r = run([CUOBJDUMP, '-xelf', 'sm_80', '-xptx', 'sm_80', k_rdc], cwd=src.dir, text=True)
    r2 = run([CUOBJDUMP, '-xelf', 'sm_80', k], cwd=src.dir, text=True)
    rel, ptx, exe = (src.read(n) for n in ('k-rdc.2.sm_80.cubin', 'k-rdc.2.sm_80.ptx', 'k.2.sm_80.cubin')) \
        if r.returncode == 0 and r2.returncode == 0 and sorted(src.names()) == [
            'k-rdc.2.sm_80.cubin', 'k-rdc.2.sm_80.ptx', 'k.2.sm_80.cubin'] else (None, None, None)
    if not check('probes: cuobjdump extracts the sm_80 cubins of k.o and k-rdc.o and k-rdc.o\'s PTX', rel is not None,
                 '%s %s %s' % (r.stderr, r2.stderr, src.names())):
        return
    probes = probe_cubins(rel, exe)
    d = harness.Folder(root)
    d.put('nul.ptx', ptx + b'\n\0// after the NUL\n.extra\n')
    for name, (cubin, want_len) in sorted(probes.items()):
        d.put(name + '.cubin', cubin)
        for compress in (False, True):
            fb = '%s%s.fatbin' % (name, '-lz4' if compress else '')
            argv = [FATBINARY, '-64', '--create=' + fb, '--compress=%s' % ('true' if compress else 'false')]
            argv += (['-compress-all'] if compress else []) + [
                '--image3=kind=elf,sm=80,file=%s.cubin' % name, '--image3=kind=ptx,sm=80,file=nul.ptx']
            r = d.run(argv, text=True)
            what = 'fatbinary probe %s' % fb
            if not check('%s: fatbinary 11.8 makes it' % what, r.returncode == 0, r.stderr):
                continue
            listing, _ = list_json(d.path(fb))
            flags = [e.get('compressed') for e in (listing or {}).get('entries', [])]
            check('%s: its entries are %s' % (what, 'LZ4-compressed' if compress else 'stored plainly'),
                  flags == [compress, compress], flags)
            theirs = check_extraction(what, d.path(fb), root)
            cubin_name, ptx_name = fb[:-len('.fatbin')] + '.1.sm_80.cubin', fb[:-len('.fatbin')] + '.1.sm_80.ptx'
            got = os.path.getsize(theirs.path(cubin_name)) if os.path.exists(theirs.path(cubin_name)) else None
            check('%s: cuobjdump\'s cubin is the input\'s first %d of %d bytes (the ELF rule above)' % (
                what, want_len, len(cubin)),
                got == want_len and theirs.read(cubin_name) == cubin[:want_len], 'cuobjdump wrote %s bytes' % got)
            stored = [entry_image(d.path(fb), t) for t in fatbin_headers(d.path(fb)) if t['kind'] == 'ptx']
            got = theirs.read(ptx_name) if os.path.exists(theirs.path(ptx_name)) else None
            check('%s: the PTX stored holds text after a NUL; cuobjdump\'s PTX file is the text before it' % what,
                  len(stored) == 1 and b'\0.extra' in stored[0].replace(b'\n', b'')
                  and got == stored[0][:stored[0].index(b'\0')],
                  'stored %r\ncuobjdump %r' % (stored[0][-80:] if stored else None, got[-80:] if got else got))
    # The recorded difference: a section reaching past the entry.
    past = bytes(_past_entry(rel))
    d.put('past-entry.cubin', past)
    r = d.run([FATBINARY, '-64', '--create=past-entry.fatbin', '--compress=false',
               '--image3=kind=elf,sm=80,file=past-entry.cubin', '--image3=kind=ptx,sm=80,file=nul.ptx'], text=True)
    if check('fatbinary probe past-entry.fatbin: fatbinary 11.8 makes it', r.returncode == 0, r.stderr):
        theirs, ours = harness.Folder(root), harness.Folder(root)
        run([CUOBJDUMP, '-xelf', 'all', d.path('past-entry.fatbin')], cwd=theirs.dir)
        run([OT, 'unbundle', d.path('past-entry.fatbin'), '--extract-dir', ours.dir])
        t = theirs.read('past-entry.1.sm_80.cubin') if 'past-entry.1.sm_80.cubin' in theirs.names() else b''
        o = ours.read('past-entry.1.sm_80.cubin') if 'past-entry.1.sm_80.cubin' in ours.names() else b''
        check('DIFFERENCE (recorded): %s: cuobjdump writes %d bytes, the cubin\'s %d and 100 after its entry; '
              'offloadtool the cubin\'s %d' % (DIFFERENCES[0], len(t), len(rel), len(o)),
              t[:len(past)] == past and len(t) == len(past) + 100 and o == past, (len(t), len(o)))


def _past_entry(rel):
    """The relocatable cubin with its last PROGBITS section moved to its end and
    made 100 bytes longer than the file: it reaches past the fatbin entry."""
    d = bytearray(rel)
    _, h, _, _ = last_progbits(rel)
    struct.pack_into('<QQ', d, h + 0x18, len(rel), 100)
    return d


# ---------------------------------------------------------------------------
# 4. The CUDA 13 fixtures

def expected_entries():
    """{fixture: [entries]} from tests/data/nvidia/expected.txt (describe.py's output)."""
    out, current, entry = {}, None, None
    for line in open(os.path.join(NVDATA, 'expected.txt')):
        m = re.match(r'^== (\S+) ', line)
        if m:
            current = out.setdefault(m.group(1), [])
            continue
        m = re.match(r'^  entry @0x[0-9a-f]+ (ELF|PTX) (\S+): ', line)
        if m:
            entry = {'kind': 'cubin' if m.group(1) == 'ELF' else 'ptx', 'target': m.group(2)}
            current.append(entry)
            continue
        m = re.match(r'^    payload @(0x[0-9a-f]+), stored (\d+), compressed (\d+), uncompressed (\d+)$', line)
        if m:
            stored, compressed, uncompressed = int(m.group(2)), int(m.group(3)), int(m.group(4))
            entry.update({'offset': int(m.group(1), 16), 'size': compressed or stored, 'compressed': compressed > 0,
                          'uncompressed_size': uncompressed or stored})
    return out


def check_fixtures(root):
    expected = expected_entries()
    inputs = os.path.join(NVDATA, 'inputs')
    cubin = {t: harness.read(os.path.join(inputs, 'k.%s.cubin' % t)) for t in ('sm_80', 'sm_90', 'sm_90a', 'sm_100f')}
    ptx = {t: describe.ptx_as_stored(harness.read(os.path.join(inputs, 'k.%s.ptx' % t)))[:-1]
           for t in ('compute_80', 'compute_90a')}
    # What each fixture's extracted files must be: README.md says which inputs
    # fatbinary was given; the objects' cubins come from nvcc and match no input.
    want_files = {
        'zstd.fatbin': {'sm_80': cubin['sm_80'], 'compute_80': ptx['compute_80']},
        'lz4.fatbin': {'sm_80': cubin['sm_80'], 'compute_80': ptx['compute_80']},
        'arch-specific.fatbin': {**cubin, **ptx},
        'k-nvcc13.o': {'compute_80': ptx['compute_80']},
        'k-rdc-nvcc13.o': {'compute_80': ptx['compute_80']},
    }
    for name, want in want_files.items():
        path = os.path.join(NVDATA, name)
        what = 'CUDA 13 fixture %s' % name
        listing, problem = list_json(path)
        if check('%s: offloadtool list --json runs' % what, problem is None, problem):
            fields = ('kind', 'target', 'offset', 'size', 'compressed', 'uncompressed_size')
            got = [{k: e.get(k) for k in fields} for e in listing.get('entries', [])]
            check('%s: the entries expected.txt records (%s)' % (what, ', '.join(fields)),
                  got == expected.get(name), 'ours     %s\nexpected %s' % (got, expected.get(name)))
        out = harness.Folder(root)
        r = run([OT, 'unbundle', path, '--extract-dir', out.dir, '-v'], text=True)
        rows = [line.split('\t') for line in r.stdout.splitlines()]
        written = {row[2]: row[0] for row in rows if len(row) == 3}
        check('%s: unbundle --extract-dir writes one file per entry (%d)' % (what, len(expected.get(name, []))),
              r.returncode == 0 and len(rows) == len(written) == len(expected.get(name, [])),
              '%s\n%s' % (rows, r.stderr))
        for target, data in sorted(want.items()):
            source = 'inputs/k.%s.cubin' % target if target.startswith('sm_') else \
                'ptx_as_stored(inputs/k.%s.ptx) without its NUL' % target
            got = harness.read(written[target]) if target in written else None
            check('%s: the %s file is %s, byte for byte' % (what, target, source), got == data,
                  'ours %s bytes, want %d' % (None if got is None else len(got), len(data)))
    targets = [e['target'] for e in expected['arch-specific.fatbin']]
    check('arch-specific.fatbin: expected.txt records sm_90a, compute_90a and sm_100f targets',
          {'sm_90a', 'compute_90a', 'sm_100f'} <= set(targets), targets)
    check('lz4.fatbin and zstd.fatbin: expected.txt records every entry compressed',
          all(e['compressed'] for n in ('lz4.fatbin', 'zstd.fatbin') for e in expected[n]), expected)
    check_compat_fixture()


def recorded_cuobjdump13():
    """tests/data/nvidia/cuobjdump13.txt (cuobjdump and nvprune 13.0 on the
    fixtures): ({(fixture, all_fatbins): [(kind, arch)]}, {fixture: {extracted
    file name: sha256}}, {(target, fixture): [(kind, arch)] of nvprune's output})."""
    listings, extracted, pruned = {}, {}, {}
    current = None
    for line in open(os.path.join(NVDATA, 'cuobjdump13.txt')):
        line = line.rstrip('\n')
        m = re.match(r'^== cuobjdump (-all )?\s*-lelf -lptx (\S+)$', line)
        n = re.match(r'^== nvprune -arch (\S+) (\S+)$', line)
        x = re.match(r'^-- (\S+)$', line)
        entry = LIST_LINE.match(line)
        digest = re.match(r'^([0-9a-f]{64})  (\S+)$', line)
        if m:
            current = listings.setdefault((m.group(2), bool(m.group(1))), [])
        elif n:
            current = pruned.setdefault((n.group(1), n.group(2)), [])
        elif x:
            current = extracted.setdefault(x.group(1), {})
        elif line.startswith('== exit'):  # ends a listing; nvprune's block goes on with cuobjdump's listing of p.o
            if not any(current is v for v in pruned.values()):
                current = None
        elif line.startswith('=='):
            current = None
        elif entry and isinstance(current, list):
            current.append(('cubin' if entry.group(1) == 'ELF' else 'ptx', entry.group(5)))
        elif digest and isinstance(current, dict):
            current[digest.group(2)] = digest.group(1)
    return listings, extracted, pruned


def check_cuobjdump13(root):
    """The fixtures against what cuobjdump 13.0 lists and extracts
    (tests/data/nvidia/cuobjdump13.txt): the same entries in its order, its
    names (an sm_100f cubin is <stem>.<n>.sm_100.cubin, compute_90a PTX
    <stem>.<n>.sm_90a.ptx), the same bytes; and prune --keep sm_80 /
    compute_80 of the objects keeps what nvprune 13.0 -arch sm_80 /
    compute_80 keeps (read back with this test's own fatbin reader)."""
    listings, extracted, pruned = recorded_cuobjdump13()
    check('cuobjdump13.txt: listings of the 5 fixtures, with and without -all, their extractions and 4 nvprune runs',
          len(listings) == 10 and len(extracted) == 5 and len(pruned) == 6, (len(listings), len(extracted), len(pruned)))
    for (name, all_fatbins), theirs in sorted(listings.items()):
        path = os.path.join(NVDATA, name)
        how = 'cuobjdump 13.0 %s-lelf -lptx %s' % ('-all ' if all_fatbins else '', name)
        listing, problem = list_json(path)
        if not check('%s: offloadtool list --json runs' % how, problem is None, problem):
            continue
        mine = in_cuobjdump_order(listing['entries'], all_fatbins)
        got = [(e['kind'], cuobjdump_arch(e)) for e in mine]
        check('%s: the same entries, kind and arch, in its order (%d)' % (how, len(theirs)),
              got == theirs, 'ours %s\ntheirs %s' % (got, theirs))
    for name, files in sorted(extracted.items()):
        out = harness.Folder(root)
        r = run([OT, 'unbundle', os.path.join(NVDATA, name), '--extract-dir', out.dir], text=True)
        ours = {n: hashlib.sha256(harness.read(out.path(n))).hexdigest() for n in out.names()}
        check('cuobjdump 13.0 -all -xelf all -xptx all %s: unbundle --extract-dir writes its %d files, by its names, '
              'with its bytes' % (name, len(files)), r.returncode == 0 and ours == files,
              'ours %s\ntheirs %s\n%s' % (sorted(ours), sorted(files), r.stderr))
    for (target, name), theirs in sorted(pruned.items()):
        if target == 'sm_90':
            continue  # nvprune matches names: it strips everything (cuda_prune_test.py's DIFFERENCES)
        out = os.path.join(harness.Folder(root).dir, 'p.o')
        r = run([OT, 'prune', '--keep', target, os.path.join(NVDATA, name), '-o', out], text=True)
        got = [(t['kind'], 'sm_' + t['target'].split('_')[1]) for t in fatbin_headers(out)] if r.returncode == 0 else None
        check('prune --keep %s %s: the entries nvprune 13.0 -arch %s keeps (%s)' % (target, name, target, theirs),
              got == theirs, (got, r.stderr))


# ---------------------------------------------------------------------------
# 5. compat select

# NVIDIA's rules, as its documentation states them:
#  [B] Binary compatibility (CUDA C++ Programming Guide, "Binary
#      Compatibility"): a cubin for compute capability X.y runs on devices of
#      compute capability X.z with z >= y only (same major version).
#  [P] PTX compatibility (same guide, "PTX Compatibility"): PTX for compute_XY
#      can be compiled (JIT, by the driver) for any device of compute
#      capability >= X.Y. Arch-specific PTX and cubins (compute_90a, sm_90a)
#      run on devices of exactly that compute capability (9.0) only.
#  [F] Family-specific targets (same guide; NVIDIA's blog "NVIDIA Blackwell
#      and NVIDIA CUDA 12.9 Introduce Family-Specific Architecture
#      Features"): sm_100f / compute_100f code runs on the devices of its
#      family with the same or a higher minor version: 10.0 and 10.3.
#  [J] Just-in-time compilation (same guide, "Application Compatibility";
#      nvcc guide, "Just-in-Time Compilation"): the driver runs a cubin that
#      fits the device and JIT-compiles PTX where no cubin fits.
#  Where several entries fit and NVIDIA documents no order, offloadtool's
#  rules decide (its reasons say so): among PTX files, the newest
#  compute_XY not above the device; between a plain cubin and an
#  arch-specific one for the same device (sm_90, sm_90a on 9.0), the plain one.
COMPAT_CLANG = [  # k.o: sm_70 cubin, compute_70 PTX, sm_80 cubin, compute_80 PTX
    ('sm_86', 'sm_80', '[B] sm_80 runs on 8.6, sm_70 does not; [J] a fitting cubin before PTX'),
    ('sm_75', 'sm_70', '[B] sm_70 runs on 7.5, sm_80 does not; [P] compute_80 cannot; [J] the cubin'),
    ('sm_90', 'compute_80', '[B] no cubin of major 9; [P] compute_70 and compute_80 fit: the newest (our rule)'),
    ('sm_80', 'sm_80', '[B] the exact cubin'),
    ('sm_60', None, '[B] no cubin of major 6; [P] no PTX at or below 6.0: nothing fits'),
]
COMPAT_FIXTURE = [  # arch-specific.fatbin: sm_80, compute_80, sm_90, sm_90a, compute_90a, sm_100f
    ('sm_90', 'sm_90', '[B] sm_90 runs on 9.0; [P] sm_90a runs there too: the plain cubin (our rule)'),
    ('sm_100', 'sm_100f', '[F] sm_100f runs on 10.0; [P] sm_90a/compute_90a do not; [B] sm_80/sm_90 do not'),
    ('sm_103', 'sm_100f', '[F] sm_100f runs on 10.3 (same family, higher minor)'),
    ('sm_120', 'compute_80', '[F] sm_100f is not of family 12; [P] compute_90a runs on 9.0 only, compute_80 '
                             'anywhere from 8.0: the plain compute_80 PTX'),
    ('sm_89', 'sm_80', '[B] sm_80 runs on 8.9; [P] sm_90a/compute_90a on 9.0 only'),
]
# Entries NVIDIA's rules forbid for the target (the verdict must be "rejected").
COMPAT_REJECTED = {
    ('fixture', 'sm_100'): ['sm_80', 'sm_90', 'sm_90a', 'compute_90a'],
    ('fixture', 'sm_120'): ['sm_80', 'sm_90', 'sm_90a', 'compute_90a', 'sm_100f'],
    ('fixture', 'sm_90'): ['sm_80', 'sm_100f'],
    ('clang', 'sm_86'): ['sm_70'],
    ('clang', 'sm_75'): ['sm_80', 'compute_80'],
}


def compat_select(path, target):
    r = run([OT, 'compat', 'select', '--json', path, '--target', target], text=True)
    try:
        return r.returncode, json.loads(r.stdout), None
    except ValueError as e:
        return r.returncode, None, '%s: exit %s, %s\n%s' % (e, r.returncode, r.stdout[-1000:], r.stderr[-1000:])


def check_compat(what, key, path, cases):
    for target, want, why in cases:
        rc, j, problem = compat_select(path, target)
        name = '%s: compat select --target %s: %s (%s)' % (what, target, want or 'nothing', why)
        if problem:
            check(name, False, problem)
            continue
        entries = j.get('entries', [])
        sel = j.get('selected')
        got = entries[sel]['id'] if isinstance(sel, int) and 0 <= sel < len(entries) else None
        check(name, got == want and rc == (0 if want else 1), 'selected %r, exit %s' % (got, rc))
        for rejected in COMPAT_REJECTED.get((key, target), []):
            verdicts = [e.get('verdict') for e in entries if e.get('id') == rejected]
            check('%s: compat select --target %s: %s rejected' % (what, target, rejected),
                  verdicts == ['rejected'], verdicts)


def check_compat_clang(k):
    check_compat('clang k.o', 'clang', k, COMPAT_CLANG)


def check_compat_fixture():
    check_compat('arch-specific.fatbin', 'fixture', os.path.join(NVDATA, 'arch-specific.fatbin'), COMPAT_FIXTURE)


# ---------------------------------------------------------------------------

def cases(root):
    for path in LIBRARIES + [BART, RELION]:
        check_file(os.path.basename(path), path, root, path in EXTRACTED)
    k, k_rdc = check_clang_objects(root)
    check_fatbinary_probes(root, k, k_rdc)
    check_fixtures(root)
    check_cuobjdump13(root)
    for d in DIFFERENCES:
        print('NOTE', d)
    print('%d recorded differences (DIFFERENCES in %s)' % (len(DIFFERENCES), os.path.basename(__file__)))


if __name__ == '__main__':
    sys.exit(harness.run_suite('cuda', cases, needs=[CUOBJDUMP, FATBINARY, CLANGXX, os.path.join(CUDA_PATH, 'bin'),
                                                     'ld', 'ar'] + LIBRARIES + [BART, RELION]))
