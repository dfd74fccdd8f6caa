#!/usr/bin/env python3
"""`offloadtool split` (docs/kpack.md "Splitting") of HIP shared libraries and
executables that the real clang 19 driver builds (clang 22 in kpack-split-22) (two translation units, three
GPUs, gfx90a:xnack- among them; PIE, non-PIE, RELR; ld.lld and GNU ld; plain
and --offload-compress bundles; one -fgpu-rdc library), checked against the
rules of AMD's rocm-kpack splitter (ROCm/rocm-kpack e3483286, copied in the
comments below) with an ELF parser of this file's own, not offloadtool's:

  * .rocm_kpack_ref: PROGBITS, SHF_ALLOC, alignment 1, at the page above every
    PT_LOAD of the input, holding the MessagePack map python3-msgpack writes
    for {kpack_search_paths: [<../ per level>.kpack/k_@GFXARCH@.kpack],
    kernel_name: <path>}; a PF_R PT_LOAD with p_align 0x1000 maps exactly it;
  * every __hip_fatbin_wrapper: magic HIPK, version 1, its position at +16;
    its pointer in the addend of an R_X86_64_RELATIVE relocation (symbol 0)
    with 0 in place where it had a RELA relocation; else (RELR, non-PIE) the
    marker's address in place (AMD's splitter writes 0 there: a null pointer,
    or the load base);
  * .hip_fatbin NOBITS with its address, size and flags; its whole pages
    (one fewer where its end is page-aligned) cut out of the file: the file is
    the input plus what is appended minus those pages; a PT_LOAD with no file
    bytes covers the section from its first page boundary to its end;
  * every other allocated section keeps address, size, flags and (the records
    and relocations aside) contents; all PT_LOADs keep p_offset congruent to
    p_vaddr modulo 4 KiB and their file ranges apart; PT_PHDR is at e_phoff
    inside a PT_LOAD, and a moved table has room for a multiple of 16 headers;
  * readelf -a, llvm-readelf -a and eu-elflint --gnu-ld say nothing they did
    not say of the input;
  * the program (or a ctypes dlopen(RTLD_NOW) of the library) runs under a
    stand-in HIP runtime that prints each record's magic, index and the bytes
    its pointer points to: the marker, for every record;
  * the archives .kpack/k_<arch>.kpack parse as AMD's C++ reader validates
    (reference §1.5: magic, version 1, TOC offset inside the file, a map;
    blobs inside the file) and hold, under "<path>#<i>", byte for byte what
    LLVM 19's clang-offload-bundler -unbundle extracts from the bundle record
    i registered in the input's .hip_fatbin; `offloadtool list --json` of the
    output names the same (binary key, architecture) pairs;
  * --compress zstd: one zstd frame per code object (python3-zstandard
    decodes each to the same bytes; its header declares the content size);
  * the output is the same byte for byte when split again (determinism); a
    directory keeps its other files, symlinks and layout, the marker's path
    climbing to the tree's .kpack;
  * no stub archive: where one library of a tree has gfx90a:xnack- code and
    another gfx90a code only, the gfx90a:xnack- archive holds both;
  * hostile input (a cut file, a record with another magic, an input already
    split): one error line naming the file and the offset, exit 1, nothing
    written.
No ROCm is installed: -nogpulib -nogpuinc, as in prune_linked_test.py.
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data', 'kpack'))
import harness  # noqa: E402
from harness import CLANG, CLANGXX, LLVM_BUNDLER, OT, check, read, run, write  # noqa: E402
import generate  # noqa: E402  Debian's python3-msgpack and python3-zstandard
import prune_linked_test as plt  # noqa: E402  the sources

msgpack = generate.msgpack
zstandard = generate.zstandard

GPUS = ['gfx906', 'gfx90a:xnack-', 'gfx1100']
HIP = ['-x', 'hip'] + ['--offload-arch=' + g for g in GPUS] + ['-nogpulib', '-nogpuinc']
PAGE = 4096
PT_LOAD, PT_PHDR, SHT_NOBITS, SHT_PROGBITS, SHT_RELA, SHT_RELR = 1, 6, 8, 1, 4, 19
SHF_ALLOC, PF_R = 2, 4
R_X86_64_RELATIVE = 8

# The stand-in runtime: for each record, its magic, index and the first bytes
# its pointer points to (the marker once split).
RUNTIME = r'''#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
struct wrapper { uint32_t magic, version; const unsigned char *binary; uint64_t index; };
void **__hipRegisterFatBinary(const struct wrapper *w) {
  static void *h;
  printf("record magic %08x version %u index %lu at", w->magic, w->version, (unsigned long)w->index);
  for (int i = 0; w->binary && i < 24; ++i) printf(" %02x", w->binary[i]);
  printf("\n");
  return &h;
}
void __hipRegisterFunction(void **m, const void *hf, char *df, const char *dn, unsigned t, void *a, void *b,
                           void *c, void *d, int *e) {}
void __hipUnregisterFatBinary(void **h) {}
struct dim3 { unsigned x, y, z; };
int hipLaunchKernel(const void *f, struct dim3 g, struct dim3 b, void **args, unsigned long shm, void *s) { return 0; }
int __hipPushCallConfiguration(struct dim3 g, struct dim3 b, unsigned long s, void *st) { return 0; }
int __hipPopCallConfiguration(struct dim3 *g, struct dim3 *b, unsigned long *s, void *st) { return 0; }
'''

# ctypes: the stand-in runtime global, then the library with RTLD_NOW.
DLOPEN = r'''import ctypes, os, sys
ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW | os.RTLD_GLOBAL)
lib = ctypes.CDLL(sys.argv[2], mode=os.RTLD_NOW)
sys.stdout.flush()
print('host_side', lib.host_side(5), flush=True)
'''


def sh(argv, cwd):
    return run(argv, cwd=cwd, check=True)


# --- an ELF parser of our own ------------------------------------------------

def parse(data):
    e = {}
    (e['type'],) = struct.unpack_from('<H', data, 16)
    e['phoff'], e['shoff'] = struct.unpack_from('<QQ', data, 0x20)
    e['phnum'], = struct.unpack_from('<H', data, 0x38)
    e['shnum'], e['shstrndx'] = struct.unpack_from('<HH', data, 0x3c)
    e['phdrs'] = [dict(zip(('type', 'flags', 'offset', 'vaddr', 'paddr', 'filesz', 'memsz', 'align'),
                           struct.unpack_from('<IIQQQQQQ', data, e['phoff'] + i * 56))) for i in range(e['phnum'])]
    raw = [struct.unpack_from('<IIQQQQIIQQ', data, e['shoff'] + i * 64) for i in range(e['shnum'])]
    names = raw[e['shstrndx']]
    strtab = data[names[4]:names[4] + names[5]]
    e['shdrs'] = [dict(name=strtab[r[0]:strtab.index(b'\0', r[0])].decode(), type=r[1], flags=r[2], addr=r[3],
                       offset=r[4], size=r[5], link=r[6], info=r[7], align=r[8], entsize=r[9]) for r in raw]
    return e


def sec(e, name):
    s = [s for s in e['shdrs'] if s['name'] == name]
    return s[0] if s else None


def contents(data, s):
    return data[s['offset']:s['offset'] + s['size']]


def loads(e):
    return [p for p in e['phdrs'] if p['type'] == PT_LOAD]


def file_offset(e, addr):
    for p in loads(e):
        if p['vaddr'] <= addr < p['vaddr'] + p['filesz']:
            return p['offset'] + addr - p['vaddr']
    return None


def relas(data, e):
    """{r_offset: (type, sym, addend)} of the allocated SHT_RELA sections."""
    out = {}
    for s in e['shdrs']:
        if s['type'] == SHT_RELA and s['flags'] & SHF_ALLOC:
            for at in range(s['offset'], s['offset'] + s['size'], 24):
                off, info, add = struct.unpack_from('<QQq', data, at)
                out.setdefault(off, (info & 0xffffffff, info >> 32, add))
    return out


def bundles(blob):
    """The bundles of a .hip_fatbin: [(offset, bytes)], each bounded by its own
    header (binary: the end of its last payload; CCOB v2/v3: its total size),
    zero padding between them skipped."""
    out, at = [], 0
    while at < len(blob):
        if blob[at:at + 24] == b'__CLANG_OFFLOAD_BUNDLE__':
            n, = struct.unpack_from('<Q', blob, at + 24)
            p, end = at + 32, 0
            for _ in range(n):
                off, size, idlen = struct.unpack_from('<QQQ', blob, p)
                end = max(end, off + size)
                p += 24 + idlen
            end = max(end, p - at)
        elif blob[at:at + 4] == b'CCOB':
            version, = struct.unpack_from('<H', blob, at + 4)
            end = struct.unpack_from('<I' if version == 2 else '<Q', blob, at + 8)[0]
        else:
            assert blob[at] == 0, 'unknown bytes at 0x%x of .hip_fatbin' % at
            at += 1
            continue
        out.append((at, blob[at:at + end]))
        at += end
    return out


def unbundled(blob, folder):
    """{bundle offset: {arch: code object}} as clang-offload-bundler-19 unbundles each bundle."""
    out = {}
    for k, (off, b) in enumerate(bundles(blob)):
        f = os.path.join(folder, 'bundle%d' % k)
        write(f, b)
        ids = [i for i in run([LLVM_BUNDLER, '-list', '-type=o', '-input=' + f], text=True, check=True).stdout.split()
               if not i.startswith('host-')]
        outs = [f + '.%d.co' % i for i in range(len(ids))]
        run([LLVM_BUNDLER, '-unbundle', '-type=o', '-input=' + f, '-targets=' + ','.join(ids)]
            + ['-output=' + o for o in outs], check=True)
        out[off] = {i.rsplit('--', 1)[1]: read(o) for i, o in zip(ids, outs)}
    return out


def elflint_said(path):
    return set(l.replace(path, 'F') for l in harness.elf_readers_say(path)[2].split('\n')[1:] if l)


def readers_said(path):
    return harness.elf_readers_say(path)[:2]


# --- one case ------------------------------------------------------------------

def check_split(label, folder, original, split_path, rel, kind, root, problems, name='k'):
    """The reference's rules on one split binary; appends what is wrong to problems."""
    def expect(ok, what):
        if not ok:
            problems.append(what)
    data, out = read(original), read(split_path)
    e, o = parse(data), parse(out)
    depth = rel.count('/')
    marker = msgpack.packb({'kpack_search_paths': ['../' * depth + '.kpack/%s_@GFXARCH@.kpack' % name], 'kernel_name': rel},
                           use_bin_type=True)
    # The marker.
    ref = sec(o, '.rocm_kpack_ref')
    expect(ref is not None, 'no .rocm_kpack_ref')
    if ref is None:
        return None
    top = max(p['vaddr'] + p['memsz'] for p in loads(e))
    want_addr = (top + PAGE - 1) // PAGE * PAGE
    expect((ref['type'], ref['flags'], ref['align'], ref['addr']) == (SHT_PROGBITS, SHF_ALLOC, 1, want_addr),
           'marker header %r (address 0x%x expected)' % (ref, want_addr))
    expect(contents(out, ref) == marker, 'marker bytes %r, expected %r' % (contents(out, ref), marker))
    seg = [p for p in loads(o) if p['offset'] == ref['offset'] and p['vaddr'] == ref['addr']]
    expect(len(seg) == 1 and (seg[0]['flags'], seg[0]['filesz'], seg[0]['memsz'], seg[0]['align']) ==
           (PF_R, len(marker), len(marker), PAGE), 'marker segment %r' % seg)
    # Segments.
    for p in loads(o):
        expect(p['offset'] % PAGE == p['vaddr'] % PAGE, 'PT_LOAD %r: offset and address not congruent' % p)
    spans = sorted((p['offset'], p['offset'] + p['filesz']) for p in loads(o) if p['filesz'])
    expect(all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), 'PT_LOAD file ranges overlap: %r' % spans)
    phdr = [p for p in o['phdrs'] if p['type'] == PT_PHDR]
    if phdr:
        p = phdr[0]
        expect(p['offset'] == o['phoff'], 'PT_PHDR at 0x%x, e_phoff 0x%x' % (p['offset'], o['phoff']))
        expect(any(l['offset'] <= p['offset'] and p['offset'] + p['filesz'] <= l['offset'] + l['filesz']
                   for l in loads(o)), 'PT_PHDR in no PT_LOAD')
        if o['phoff'] != e['phoff']:
            expect(p['filesz'] % (16 * 56) == 0 and p['filesz'] >= o['phnum'] * 56,
                   'moved table of %d bytes for %d headers' % (p['filesz'], o['phnum']))
    # .hip_fatbin and the cut.
    fb, nfb = sec(e, '.hip_fatbin'), sec(o, '.hip_fatbin')
    start = (fb['addr'] + PAGE - 1) // PAGE * PAGE
    end = (fb['addr'] + fb['size']) // PAGE * PAGE
    cut = max(0, end - start)
    if cut and (fb['addr'] + fb['size']) % PAGE == 0:
        cut -= PAGE
    if cut:
        expect((nfb['type'], nfb['addr'], nfb['size'], nfb['flags']) ==
               (SHT_NOBITS, fb['addr'], fb['size'], fb['flags']), '.hip_fatbin after: %r' % nfb)
        expect(any(p['filesz'] == 0 and p['vaddr'] == start and p['memsz'] == fb['addr'] + fb['size'] - start
                   for p in loads(o)), 'no PT_LOAD without file bytes over the cut pages')
    appended = len(out) + cut - len(data)
    expect(0 < appended < 4 * PAGE + len(marker) + 64 * len(o['shdrs']) + contents(data, e['shdrs'][e['shstrndx']]).__len__() + 16 * 56 * 2,
           'the file grew by 0x%x bytes besides the 0x%x cut' % (appended, cut))
    # Other allocated sections.
    records = sec(e, '.hipFatBinSegment')
    for s, t in zip(e['shdrs'], o['shdrs']):
        if not s['flags'] & SHF_ALLOC or s['name'] in ('.hip_fatbin',):
            continue
        expect((s['name'], s['type'], s['addr'], s['size'], s['flags']) ==
               (t['name'], t['type'], t['addr'], t['size'], t['flags']), 'section %s changed: %r %r' % (s['name'], s, t))
        if s['type'] != SHT_NOBITS and s['name'] not in ('.hipFatBinSegment', '.rela.dyn'):
            expect(contents(data, s) == contents(out, t), 'contents of %s changed' % s['name'])
    # Records.
    r_in, r_out = relas(data, e), relas(out, o)
    n = records['size'] // 24
    at = file_offset(o, records['addr'])
    fatbin = contents(data, fb)
    registered = []
    for i in range(n):
        magic, version, ptr, index = struct.unpack_from('<4sIQQ', out, at + 24 * i)
        slot = records['addr'] + 24 * i + 8
        expect((magic, version, index) == (b'HIPK', 1, i), 'record %d: %r' % (i, (magic, version, index)))
        if slot in r_in:
            typ, sym, add = r_out[slot]
            expect((typ, sym, add, ptr) == (R_X86_64_RELATIVE, 0, ref['addr'], 0),
                   'record %d: relocation %r, in place 0x%x' % (i, r_out[slot], ptr))
            t0, s0, a0 = r_in[slot]
            was = a0 if t0 == R_X86_64_RELATIVE else None
        else:
            expect(ptr == ref['addr'], 'record %d: pointer 0x%x in place, marker at 0x%x' % (i, ptr, ref['addr']))
            was, = struct.unpack_from('<Q', data, file_offset(e, slot))
        if was is None:  # -fgpu-rdc: R_X86_64_64 against __hip_fatbin_<id>, which is .hip_fatbin's start
            was = fb['addr']
        registered.append(was - fb['addr'])
    # Readers.
    expect(readers_said(split_path) == readers_said(original),
           'readelf/llvm-readelf: %r' % readers_said(split_path))
    new = elflint_said(split_path) - elflint_said(original)
    # eu-elflint matches a NOBITS section to the first segment whose
    # [p_offset, p_offset + p_memsz) holds its offset: the reference's NOBITS
    # piece (filesz 0, at the cut's offset, memsz over the cut pages) spans
    # file offsets that the content after the cut now has, so a NOBITS
    # section there (lld's .relro_padding) that runs past that span is "not
    # fully contained" in it. AMD's splitter writes the same bytes (compared
    # byte for byte in this session); the loader maps no file bytes for a
    # filesz-0 segment. That message, for that piece, alone is let through.
    def nobits_piece(line):
        if 'not fully contained in segment of program header entry' not in line:
            return False
        n = int(line.rsplit(' ', 1)[1])
        return n < len(o['phdrs']) and o['phdrs'][n]['filesz'] == 0 and o['phdrs'][n]['vaddr'] == start
    new = set(l for l in new if not nobits_piece(l))
    expect(not new, 'eu-elflint adds %r' % new)
    # Archives.
    code = unbundled(fatbin, os.path.join(folder, 'unbundled'))
    want = {}
    for i, off in enumerate(registered):
        for arch, co in code[off].items():
            want[('%s#%d' % (rel, i), arch)] = co
    return want


def check_archives(out_dir, want, problems, zstd=False, name='k'):
    got = {}
    kdir = os.path.join(out_dir, '.kpack')
    names = sorted(os.listdir(kdir))
    arches = sorted(set(a for _, a in want))
    if names != sorted('%s_%s.kpack' % (name, a) for a in arches):
        problems.append('archives %r for %r' % (names, arches))
    for n in names:
        data = read(os.path.join(kdir, n))
        arch = n[len(name) + 1:-6]
        # AMD's kpack_open: magic, version, TOC offset inside the file, a map.
        if data[:4] != b'KPAK' or struct.unpack_from('<I', data, 4)[0] != 1:
            problems.append('%s: header %r' % (n, data[:16]))
            continue
        toc_at, = struct.unpack_from('<Q', data, 8)
        if not toc_at < len(data):
            problems.append('%s: TOC offset 0x%x past the file' % (n, toc_at))
            continue
        t = msgpack.unpackb(data[toc_at:], raw=False, strict_map_key=False)
        if not isinstance(t, dict):
            problems.append('%s: TOC not a map' % n)
            continue
        head = {k: t.get(k) for k in ('format_version', 'group_name', 'gfx_arch_family', 'gfx_arches',
                                       'compression_scheme')}
        want_head = {'format_version': 1, 'group_name': name, 'gfx_arch_family': arch, 'gfx_arches': [arch],
                     'compression_scheme': 'zstd-per-kernel' if zstd else 'none'}
        if head != want_head:
            problems.append('%s: TOC head %r' % (n, head))
        if zstd:
            at, end = t['zstd_offset'], t['zstd_offset'] + t['zstd_size']
            count, = struct.unpack_from('<I', data, at)
            at += 4
            blobs = []
            for _ in range(count):
                size, = struct.unpack_from('<I', data, at)
                frame = data[at + 4:at + 4 + size]
                params = zstandard.get_frame_parameters(frame)
                if params.has_checksum:
                    problems.append('%s: a frame with a checksum' % n)
                if params.content_size in (0, zstandard.CONTENTSIZE_UNKNOWN):
                    problems.append('%s: a frame without its content size' % n)
                blobs.append(zstandard.ZstdDecompressor().decompress(frame))
                at += 4 + size
            if at != end or end > toc_at:
                problems.append('%s: zstd area ends at 0x%x, declared 0x%x' % (n, at, end))
        else:
            blobs = []
            for b in t['blobs']:
                if b['offset'] + b['size'] > toc_at:
                    problems.append('%s: blob %r past the blob area' % (n, b))
                blobs.append(data[b['offset']:b['offset'] + b['size']])
        for key, per in t['toc'].items():
            for a, entry in per.items():
                if entry.get('type') != 'hsaco' or len(blobs[entry['ordinal']]) != entry['original_size']:
                    problems.append('%s: entry %s %s %r' % (n, key, a, entry))
                got[(key, a)] = blobs[entry['ordinal']]
    if set(got) != set(want):
        problems.append('archive entries %r, expected %r' % (sorted(got), sorted(want)))
    for k in set(got) & set(want):
        if got[k] != want[k]:
            problems.append('code object %r differs from clang-offload-bundler\'s' % (k,))
    return got


def run_with_runtime(kind, folder, path, root):
    """The records the stand-in runtime was handed: [(magic, version, index, first bytes)]."""
    if kind == 'exe':
        r = run([path], cwd=folder, text=True)
    else:
        r = run([sys.executable, os.path.join(root, 'dlopen.py'), os.path.join(root, 'librt.so'), path],
                cwd=folder, text=True)
    lines = [l.split() for l in r.stdout.splitlines() if l.startswith('record ')]
    return r, [(int(l[2], 16), int(l[4]), int(l[6]), bytes(int(x, 16) for x in l[8:])) for l in lines]


def case(root, name, build, kind, zstd=False):
    def fn():
        folder = os.path.join(root, name.replace(' ', '_').replace(',', ''))
        os.makedirs(folder)
        target = build(folder)
        original = os.path.join(folder, target)
        out = os.path.join(folder, 'out')
        args = [OT, 'split', target, '-o', 'out', '--name', 'k'] + (['--compress', 'zstd'] if zstd else [])
        r = run(args, cwd=folder, text=True)
        if r.returncode != 0:
            return 'split: exit %d %s' % (r.returncode, r.stderr)
        problems = []
        split_path = os.path.join(out, target)
        want = check_split(name, folder, original, split_path, target, kind, root, problems)
        if want is None:
            return '; '.join(problems)
        check_archives(out, want, problems, zstd)
        # Runs: every record registers, its pointer at the marker.
        ref = parse(read(split_path))
        marker = contents(read(split_path), sec(ref, '.rocm_kpack_ref'))
        rr, recs = run_with_runtime(kind, folder, split_path, root)
        r0, recs0 = run_with_runtime(kind, folder, original, root)
        n = sec(ref, '.hipFatBinSegment')['size'] // 24
        if rr.returncode != 0 or 'host_side 6' not in rr.stdout:
            problems.append('the split binary did not run: exit %d %s %s' % (rr.returncode, rr.stdout, rr.stderr))
        # As many registrations as the original made (-fgpu-rdc: the device
        # link's record only), each HIPK with its own index, pointing at the marker.
        indices = [i for _, _, i, _ in recs]
        if (len(recs) != len(recs0) or not recs or len(set(indices)) != len(indices)
                or any((m, v, b) != (0x4B504948, 1, marker[:24]) or i >= n for m, v, i, b in recs)):
            problems.append('the runtime was handed %r (the original: %r)' % (recs, recs0))
        # list --json of the output: the same keys and architectures.
        lr = run([OT, 'list', '--json', 'out'], cwd=folder, text=True)
        import json
        listed = set()
        if lr.returncode == 0:
            for en in json.loads(lr.stdout)['entries']:
                kp = en.get('kpack')
                if kp:
                    listed.add((kp['binary'], kp['arch']))
        if listed != set(want):
            problems.append('list --json names %r (exit %d %s)' % (sorted(listed), lr.returncode, lr.stderr))
        # Determinism.
        r2 = run(args[:4] + ['out2'] + args[5:], cwd=folder, text=True)
        same = r2.returncode == 0 and harness.tree_files(out) == harness.tree_files(os.path.join(folder, 'out2'))
        if not same:
            problems.append('a second split differs')
        return '; '.join(problems) or None
    return name, fn


def compile_objects(root):
    sets = {'pie': ['-fPIE'], 'nopie': ['-fno-pie'], 'pic': ['-fPIC'], 'pic-compress': ['-fPIC', '--offload-compress'],
            'rdc': ['-fPIC', '-fgpu-rdc']}
    for name, flags in sets.items():
        folder = os.path.join(root, 'objects-' + name)
        os.makedirs(folder)
        for f, text in (('k.hip', plt.KERNELS), ('m.hip', plt.MORE), ('main.hip', plt.MAIN), ('rt.c', RUNTIME)):
            write(os.path.join(folder, f), text.encode())
        for src in ('k', 'm', 'main'):
            sh([CLANGXX] + HIP + flags + ['-c', src + '.hip', '-o', src + '.o'], folder)
        sh([CLANG] + flags[:1] + ['-c', 'rt.c', '-o', 'rt.o'], folder)
    write(os.path.join(root, 'rt.c'), RUNTIME.encode())
    sh([CLANG, '-shared', '-fPIC', 'rt.c', '-o', 'librt.so'], root)
    write(os.path.join(root, 'dlopen.py'), DLOPEN.encode())


def cases(root):
    compile_objects(root)

    def objects(flags, names=('main.o', 'k.o', 'm.o', 'rt.o')):
        return [os.path.join(root, 'objects-' + flags, o) for o in names]

    out = []
    for linker, lflags in plt.LINKERS.items():
        for variant, objs, ldflags in (('pie', 'pie', ['-pie']), ('nopie', 'nopie', ['-no-pie']),
                                       ('relr', 'pie', ['-pie', '-Wl,-z,pack-relative-relocs'])):
            def build(folder, objs=objs, ldflags=ldflags, lflags=lflags):
                sh([CLANGXX] + lflags + ldflags + objects(objs) + ['-o', 'prog'], folder)
                return 'prog'
            out.append(case(root, 'executable, %s, %s' % (linker, variant), build, 'exe'))
        for objs, label in (('pic', ''), ('pic-compress', ', --offload-compress')):
            def build_lib(folder, objs=objs, lflags=lflags):
                sh([CLANGXX] + lflags + ['-shared'] + objects(objs, ('k.o', 'm.o')) + ['-o', 'libk.so'], folder)
                return 'libk.so'
            out.append(case(root, 'shared library, %s%s' % (linker, label), build_lib, 'lib'))

    def build_rdc(folder):
        sh([CLANGXX, '-fgpu-rdc', '--hip-link'] + ['--offload-arch=' + g for g in GPUS]
           + ['-no-hip-rt', '-shared'] + plt.LINKERS['lld'] + objects('rdc', ('k.o', 'm.o')) + ['-o', 'librdc.so'],
           folder)
        return 'librdc.so'
    out.append(case(root, 'shared library, -fgpu-rdc', build_rdc, 'lib'))

    def build_z(folder):
        sh([CLANGXX, '-shared'] + plt.LINKERS['lld'] + objects('pic', ('k.o', 'm.o')) + ['-o', 'libk.so'], folder)
        return 'libk.so'
    out.append(case(root, 'shared library, --compress zstd', build_z, 'lib', zstd=True))
    return out


def tree(root):
    """A directory: the marker climbs to the tree's .kpack; other files, links kept."""
    folder = os.path.join(root, 'tree')
    inst = os.path.join(folder, 'inst')
    os.makedirs(os.path.join(inst, 'lib', 'sub'))
    sh([CLANGXX, '-shared'] + plt.LINKERS['lld'] + [os.path.join(root, 'objects-pic', o) for o in ('k.o', 'm.o')]
       + ['-o', os.path.join(inst, 'lib', 'sub', 'libk.so.1')], folder)
    write(os.path.join(inst, 'README'), b'not a binary\n')
    os.symlink('sub/libk.so.1', os.path.join(inst, 'lib', 'libk.so'))
    r = run([OT, 'split', 'inst', '-o', 'out', '--name', 'k'], cwd=folder, text=True)
    check('split of a directory: exit 0', r.returncode == 0, r.stdout + r.stderr)
    out = os.path.join(folder, 'out')
    check('split of a directory: other files copied, symlinks kept',
          read(os.path.join(out, 'README')) == b'not a binary\n'
          and os.readlink(os.path.join(out, 'lib', 'libk.so')) == 'sub/libk.so.1')
    problems = []
    want = check_split('tree', folder, os.path.join(inst, 'lib', 'sub', 'libk.so.1'),
                       os.path.join(out, 'lib', 'sub', 'libk.so.1'), 'lib/sub/libk.so.1', 'lib', root, problems)
    if want is not None:
        check_archives(out, want, problems)
    check('split of a directory: the binary two levels down (marker ../../.kpack/k_@GFXARCH@.kpack, kernel_name '
          'lib/sub/libk.so.1) and its archives', not problems, '; '.join(problems))


def stubs(root):
    """Two libraries of one tree, one with code for gfx90a:xnack- (and
    gfx1100), the other for gfx90a alone: AMD's splitter writes a
    gfx90a:xnack- archive without the second, which shadows its complete
    gfx90a archive on an xnack-off gfx90a (reference §6.1; the loader takes
    the more specific archive first). split adds the second's gfx90a code
    object to the gfx90a:xnack- archive, under that archive's key."""
    folder = os.path.join(root, 'stubs')
    inst = os.path.join(folder, 'inst', 'lib')
    os.makedirs(inst)
    write(os.path.join(folder, 'k.hip'), plt.KERNELS.encode())
    write(os.path.join(folder, 'm.hip'), plt.MORE.encode())
    base = ['-x', 'hip', '-nogpulib', '-nogpuinc', '-fPIC', '-c']
    sh([CLANGXX] + base + ['--offload-arch=gfx90a:xnack-', '--offload-arch=gfx1100', 'k.hip', '-o', 'k.o'], folder)
    sh([CLANGXX] + base + ['--offload-arch=gfx90a', 'm.hip', '-o', 'm.o'], folder)
    sh([CLANGXX, '-shared', 'k.o', '-o', os.path.join(inst, 'libone.so')], folder)
    sh([CLANGXX, '-shared', 'm.o', '-o', os.path.join(inst, 'libtwo.so')], folder)
    r = run([OT, 'split', 'inst', '-o', 'out', '--name', 'k'], cwd=folder, text=True)
    if not check('split of a tree mixing gfx90a:xnack- and gfx90a: exit 0', r.returncode == 0, r.stderr):
        return
    two = unbundled(contents(read(os.path.join(inst, 'libtwo.so')), sec(parse(read(os.path.join(inst, 'libtwo.so'))),
                                                                             '.hip_fatbin')), folder)
    gfx90a = list(two.values())[0]['gfx90a']

    def entries(arch):
        data = read(os.path.join(folder, 'out', '.kpack', 'k_%s.kpack' % arch))
        toc_at, = struct.unpack_from('<Q', data, 8)
        t = msgpack.unpackb(data[toc_at:], raw=False, strict_map_key=False)
        return {(k, a): data[t['blobs'][e['ordinal']]['offset']:][:t['blobs'][e['ordinal']]['size']]
                for k, per in t['toc'].items() for a, e in per.items()}, t['gfx_arches']
    specific, arches = entries('gfx90a:xnack-')
    plain, _ = entries('gfx90a')
    check('the gfx90a archive holds libtwo\'s code object', list(plain) == [('lib/libtwo.so#0', 'gfx90a')]
          and plain[('lib/libtwo.so#0', 'gfx90a')] == gfx90a, sorted(plain))
    check('the gfx90a:xnack- archive holds libone\'s and, under its own key, libtwo\'s gfx90a code object '
          '(clang-offload-bundler\'s bytes)',
          arches == ['gfx90a:xnack-'] and sorted(specific) == [('lib/libone.so#0', 'gfx90a:xnack-'),
                                                               ('lib/libtwo.so#0', 'gfx90a:xnack-')]
          and specific[('lib/libtwo.so#0', 'gfx90a:xnack-')] == gfx90a, sorted(specific))
    check('a note says so', 'also holds 1 code objects of less specific targets' in r.stdout, r.stdout)


def hostile(root):
    folder = os.path.join(root, 'hostile')
    os.makedirs(folder)
    sh([CLANGXX, '-shared'] + plt.LINKERS['lld'] + [os.path.join(root, 'objects-pic', o) for o in ('k.o', 'm.o')]
       + ['-o', 'libk.so'], folder)
    data = read(os.path.join(folder, 'libk.so'))
    e = parse(data)
    fb, recs = sec(e, '.hip_fatbin'), sec(e, '.hipFatBinSegment')
    bad_magic = bytearray(data)
    rec_at = file_offset(e, recs['addr'])
    bad_magic[rec_at + 24:rec_at + 28] = b'XXXX'
    # The first bundle's first entry claims a payload past the end of .hip_fatbin.
    past = bytearray(data)
    struct.pack_into('<Q', past, fb['offset'] + 32 + 8, fb['size'] * 4)
    variants = {
        'cut.so': (data[:fb['offset'] + 100], None),
        'magic.so': (bytes(bad_magic), rec_at + 24),
        'past.so': (bytes(past), None),
    }
    for n, (d, off) in variants.items():
        write(os.path.join(folder, n), d)
        r = run([OT, 'split', n, '-o', 'out-' + n], cwd=folder, text=True)
        lines = r.stderr.splitlines()
        ok = (r.returncode == 1 and len(lines) == 1 and lines[0].startswith('offloadtool split: error: %s' % n)
              and ('offset 0x' in lines[0] or 'at offset' in lines[0])
              and (off is None or ('0x%x' % off) in lines[0]) and not os.path.exists(os.path.join(folder, 'out-' + n))
              and not [f for f in os.listdir(folder) if f.startswith('.out-')])
        check('split of %s: one error line with the file and the offset, exit 1, nothing written' % n, ok,
              (r.returncode, r.stderr))
    # A split binary again: nothing to split (its .hip_fatbin is NOBITS), exit 1.
    r = run([OT, 'split', 'libk.so', '-o', 'once', '--name', 'k'], cwd=folder, text=True)
    r2 = run([OT, 'split', 'once/libk.so', '-o', 'twice'], cwd=folder, text=True)
    check('split of a split binary: refused (nothing to split), nothing written',
          r.returncode == 0 and r2.returncode == 1 and 'nothing to split' in r2.stderr
          and not os.path.exists(os.path.join(folder, 'twice')), (r.stderr, r2.stderr))
    r = run([OT, 'split', 'libk.so', '-o', 'once'], cwd=folder, text=True)
    check('split into an existing folder: refused', r.returncode == 1 and 'exists' in r.stderr, r.stderr)


def main():
    def body(root):
        harness.run_cases(cases(root), jobs=2)
        tree(root)
        stubs(root)
        hostile(root)
    return harness.run_suite('kpack-split', body, needs=[CLANG, CLANGXX, LLVM_BUNDLER, 'readelf', 'eu-elflint'])


if __name__ == '__main__':
    sys.exit(main())
