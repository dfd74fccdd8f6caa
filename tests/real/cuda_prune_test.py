"""`offloadtool prune` of NVIDIA fat binaries against NVIDIA's nvprune and cuobjdump (CUDA 11.8).

The references are Debian 12's CUDA 11.8 packages, which scripts/fetch-cuda-samples
downloads and unpacks into $OT_CUDA_CACHE (default ~/.cache/offloadtool/cuda):
nvprune and cuobjdump 11.8 (nvidia-cuda-toolkit), libcublas (with libcublasLt,
which it needs), libcurand, libcufft, libcudart and bart (bart-cuda), and a CUDA
install for clang's --cuda-path. bart also needs libfftw3-single3 and liblapacke
(scripts/install-deps installs them).

What is checked:
 1. Objects and archives against nvprune 11.8, on clang++-19's classic CUDA
    objects (sm_70 + sm_80 cubins and PTX): k.o (.nv_fatbin), k-rdc.o
    (-fgpu-rdc: __nv_relfatbin), two.o (ld -r of two objects: two fatbins in one
    .nv_fatbin, two wrapper records) and an ar archive of the three. For the
    targets each fatbin holds by name (nvprune matches names exactly):
    `offloadtool prune --keep T` against `nvprune -arch T` (-gencode where
    nvprune takes several), for T = sm_80, sm_70, compute_80 and
    sm_80,compute_80: `cuobjdump -all -lelf -lptx` lists the same entries
    (member, kind, arch) for both outputs, namely the entries named T; each
    fatbin (read by the parser below) holds the same entries; every section of
    our output holds the bytes of the same section of nvprune's (relocations
    and symbols included), member by member. Where our rules keep more (the
    CUDA driver's, per fatbin): --keep sm_86 keeps the sm_80 cubins and
    --keep compute_86 the compute_80 PTX, where `nvprune -arch sm_86` and
    `-arch compute_86` keep nothing (exit 0, with their warning); what nvprune
    then writes (every fatbin left empty) is what `--keep sm_60 --allow-empty`
    writes, section for section. An object holding both .nv_fatbin and
    __nv_relfatbin (ld -r, either order): nvprune prunes .nv_fatbin only (its
    bytes are ours) and leaves __nv_relfatbin as it was; we prune both. The
    .nvFatBinSegment records' relocations (readelf -r) still target a fatbin's
    start, each record the fatbin it named before; a program linked (clang++-19) from the pruned objects and a
    stand-in CUDA runtime registers the same fatbins, entries and bytes as the
    program linked from nvprune's objects; one linked from two.o and the real
    libcudart 11.8 runs as the one from nvprune's two.o does.
 2. Linked files (nvprune refuses them): libcublas.so.11 (--keep sm_80),
    libcurand.so.10 (--keep sm_86: its sm_86 cubins; its first fatbin no record
    points at keeps its address), libcufft.so.10 (--keep sm_80: .nv_fatbin and
    __nv_relfatbin, the smaller packed in place) and bart, an executable
    (--keep sm_52, and --keep sm_80, which keeps its compute_52 PTX). Against
    the original, as the fatbin headers read here and cuobjdump show it (the
    parser's listing is first checked against `cuobjdump -all -lelf -lptx` of
    the original, entry for entry): each fatbin keeps what NVIDIA's rules give
    (RULES below); `cuobjdump -all -lelf -lptx` of the pruned file lists
    exactly those entries; each kept entry (header and payload) is the
    original's bytes; the file is smaller by whole pages; every section but
    the fatbin sections keeps its address, flags and size, and its bytes
    (.text included) but for the wrapper records' pointers (.nvFatBinSegment,
    and their R_X86_64_RELATIVE relocations in .rela.dyn: `readelf -rW` lists
    the same relocations but for those addends); every wrapper's data pointer
    points at a fatbin header (magic 0xBA55ED50) in the pruned file, the
    header of the fatbin it pointed at before; every allocated section lies in
    a loadable segment (`readelf -lW`) at its address, writable and executable
    as before; `readelf -lSW` and `eu-elflint --gnu-ld -q` report nothing the
    original did not; Python's ctypes dlopens each pruned library (RTLD_NOW)
    and its *GetProperty gives the original's version; the pruned libcurand's
    host generator gives the original's numbers; the pruned bart prints what
    the original prints (`bart version -V`) and computes the same files
    (phantom, fft) on the CPU.
 3. `prune --dry-run --json` of libcublas: every entry of every fatbin in file
    order (target, uncompressed size, the fatbin and its file offset), kept as
    part 2 expects; the sizes before and after are those of the files; nothing
    is written.

RULES (NVIDIA's, as cuda_test.py's COMPAT states them with their sources; per
fatbin, which the CUDA runtime loads as one module): a cubin sm_XY runs on GPUs
of major X and minor >= Y [B]; PTX compute_XY is JIT-compiled for any GPU of
compute capability >= X.Y [P]; the driver takes a cubin that fits before PTX
[J]. `--keep sm_XY` keeps what such a GPU loads: the fitting cubin of the
highest minor, else the newest fitting PTX (where NVIDIA documents no order:
offloadtool's rule, docs/nvidia.md); `--keep compute_XY` the
newest PTX at most XY; a list keeps the union.

What nvprune 11.8 does, as seen here: -arch names one target, matched by name
(-arch sm_80 keeps the sm_80 cubin, not the compute_80 PTX; -arch sm_80,compute_80
is refused: "Unsupported gpu architecture"); -gencode arch=...,code=[a,b] keeps
several; a fatbin losing every entry stays as a 16-byte empty fatbin; with nothing
matching anywhere it warns "No device code that matched architecture, so stripped
out all device code" and exits 0.

Nothing is skipped: a missing package, tool or file is a failing test.
"""
import json
import mmap
import os
import re
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import cuda_test as cu  # noqa: E402  (paths, cuobjdump_list, clang_cuda, describe)
from harness import OT, check, run  # noqa: E402

NVPRUNE = os.path.join(cu.TOOLKIT_BIN, 'nvprune')
CLANG = '/usr/bin/clang-19'
LIBDIR = 'usr/lib/x86_64-linux-gnu'
LIBCUBLAS, LIBCURAND, LIBCUFFT = cu.LIBRARIES[0], cu.LIBRARIES[2], cu.LIBRARIES[3]
LIBCUDART = os.path.join(cu.UNPACKED, 'libcudart11.0', LIBDIR, 'libcudart.so.11.0')
LIB_PATH = ':'.join(os.path.join(cu.UNPACKED, p, LIBDIR) for p in (
    'libcublas11', 'libcublaslt11', 'libcurand10', 'libcufft10', 'libcudart11.0'))

FATBIN_MAGIC = struct.pack('<I', cu.FATBIN_MAGIC)
WRAPPER_MAGIC = 0x466243b1
RECORD = 24  # __fatBinC_Wrapper_t { int magic, version; const unsigned long long *data; void *filename_or_fatbins; }

# Where offloadtool means to differ from nvprune 11.8 (printed on every run).
DIFFERENCES = [
    '--keep sm_86 keeps what an sm_86 GPU loads (the sm_80 cubin of each fatbin), --keep compute_86 the PTX '
    'it would JIT (compute_80); nvprune -arch sm_86 / compute_86 matches names only and strips every entry',
    'nvprune refuses linked shared libraries and executables; offloadtool prunes them (part 2)',
    'an object holding both .nv_fatbin and __nv_relfatbin (ld -r): nvprune prunes .nv_fatbin only and leaves '
    '__nv_relfatbin as it was; offloadtool prunes both',
]


# ---------------------------------------------------------------------------
# Reading fatbins, per fatbin

def fatbins(path):
    """Every fatbin of the ELF file's .nv_fatbin and __nv_relfatbin sections
    (section order, then file order), read from the headers here: dicts of
    section, addr (the section's address plus the fatbin's offset in it),
    offset (in the file), size (header and entries) and entries (dicts of kind,
    target, arch, flags, header (file offset), end (of the payload)). Zero
    bytes between fatbins and after the last one are skipped; anything else
    there is an error."""
    out = []
    with open(path, 'rb') as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as d:
        for s in harness.elf64_sections(path):
            if s['name'] not in ('.nv_fatbin', '__nv_relfatbin') or s['type'] == 8:
                continue
            p, end = s['offset'], s['offset'] + s['size']
            while p < end:
                q = d.find(FATBIN_MAGIC, p, end)
                q = end if q < 0 else q
                if d[p:q].count(0) != q - p:
                    raise RuntimeError('%s: bytes other than zeros before 0x%x in %s' % (path, q, s['name']))
                if q == end:
                    break
                _, _, hsize, fsize = struct.unpack_from('<IHHQ', d, q)
                fb = {'section': s['name'], 'addr': s['addr'] + q - s['offset'], 'offset': q, 'size': hsize + fsize,
                      'entries': []}
                e, fend = q + hsize, q + hsize + fsize
                while e < fend:
                    (kind, _, ehsize, psize, _, _, _, _, arch, _, _, flags, _,
                     _) = cu.describe.ENTRY.unpack_from(d, e)
                    if flags & (cu.ARCH_SPECIFIC | cu.FAMILY):
                        raise RuntimeError('%s: arch-specific or family entry at 0x%x: not in RULES' % (path, e))
                    fb['entries'].append({'kind': cu.KIND.get(kind, 'kind %d' % kind), 'arch': arch, 'flags': flags,
                                          'target': '%s_%d' % ('compute' if kind == 1 else 'sm', arch),
                                          'header': e, 'end': e + ehsize + psize})
                    e += ehsize + psize
                out.append(fb)
                p = fend
    return out


def in_cuobjdump_order(fbs):
    """(kind, cuobjdump's arch) of every entry of one ELF file's fatbins, in
    cuobjdump -all's order: .nv_fatbin's, then __nv_relfatbin's."""
    return [(e['kind'], 'sm_%d' % e['arch']) for section in ('.nv_fatbin', '__nv_relfatbin')
            for fb in fbs if fb['section'] == section for e in fb['entries']]


def listing(path):
    """`cuobjdump -all -lelf -lptx path`: [(member, kind, arch)], problem
    (its info lines that a file holds no cubin or no PTX are none)."""
    entries, problem = cu.cuobjdump_list(path, True)
    return [(x['member'], x['kind'], x['arch']) for x in entries], cu.none_found_only(problem)


def cuobjdump_says_nothing(path):
    """cuobjdump -all -lelf -lptx of a file without any entry: (no entries, its info lines)."""
    r = run([cu.CUOBJDUMP, '-all', '-lelf', '-lptx', path], text=True)
    return [l for l in r.stdout.splitlines() if l.strip() and not l.startswith('member ')], r.stderr


def kept_by_rules(entries, targets):
    """The indexes of `entries` (one fatbin's) that RULES keep for `targets`."""
    keep = set()
    for t in targets:
        m = re.match(r'^(sm|compute)_(\d+)$', t)
        number = int(m.group(2))
        major, minor = divmod(number, 10)
        if m.group(1) == 'sm':
            cubins = [i for i, e in enumerate(entries)
                      if e['kind'] == 'cubin' and e['arch'] // 10 == major and e['arch'] % 10 <= minor]
            if cubins:  # [B], [J]: the nearest cubin (the first of equals)
                keep.add(max(cubins, key=lambda i: (entries[i]['arch'], -i)))
                continue
        ptx = [i for i, e in enumerate(entries) if e['kind'] == 'ptx' and e['arch'] <= number]
        if ptx:  # [P]: the newest PTX that fits
            keep.add(max(ptx, key=lambda i: (entries[i]['arch'], -i)))
    return sorted(keep)


def read_at(path, offset, size):
    with open(path, 'rb') as f:
        f.seek(offset)
        return f.read(size)


def sections_by_name(path):
    secs = harness.elf64_sections(path)
    return {s['name']: s for s in secs}, secs


def section_bytes(path, s):
    return b'' if s['type'] == 8 else read_at(path, s['offset'], s['size'])


# ---------------------------------------------------------------------------
# 1. Objects and archives against nvprune

# The stand-in CUDA runtime of the programs linked from the objects: prints
# each fatbin registration hands it, entry by entry (kind, arch, size and a
# checksum of the payload), and the kernels registered.
RUNTIME = r'''#include <stdint.h>
#include <stdio.h>
#include <string.h>
struct wrapper { uint32_t magic, version; const unsigned char *data; void *rest; };
static void *handle;
static void show(const char *how, const struct wrapper *w) {
  const unsigned char *d = w->data, *p, *end;
  uint32_t magic; uint16_t hsize; uint64_t fsize;
  memcpy(&magic, d, 4); memcpy(&hsize, d + 6, 2); memcpy(&fsize, d + 8, 8);
  printf("%s: wrapper %08x version %u, fatbin magic %08x, 0x%lx bytes\n", how, w->magic, w->version, magic,
         (unsigned long)fsize);
  if (magic != 0xBA55ED50u) return;
  for (p = d + hsize, end = d + hsize + fsize; p < end;) {
    uint16_t kind; uint32_t eh, arch, sum = 0; uint64_t size, i;
    memcpy(&kind, p, 2); memcpy(&eh, p + 4, 4); memcpy(&size, p + 8, 8); memcpy(&arch, p + 28, 4);
    for (i = 0; i < size; ++i) sum = sum * 31 + p[eh + i];
    printf("  %s %u: 0x%lx bytes, sum %08x\n", kind == 2 ? "cubin" : kind == 1 ? "ptx" : "other", arch,
           (unsigned long)size, sum);
    p += eh + size;
  }
}
void **__cudaRegisterFatBinary(void *w) { show("__cudaRegisterFatBinary", w); return &handle; }
void __cudaRegisterFatBinaryEnd(void **h) {}
void __cudaUnregisterFatBinary(void **h) {}
void __cudaRegisterFunction(void **h, const char *hf, char *df, const char *dn, int t, void *a, void *b, void *c,
                            void *d, int *e) { printf("  kernel %s\n", dn); }
int cudaLaunchKernel(const void *f, void *g, void *b, void **args, unsigned long shm, void *s) { return 0; }
unsigned __cudaPopCallConfiguration(void *g, void *b, void *s, void *st) { return 0; }
int main(void) { return 0; }
'''
# -fgpu-rdc objects register through __cudaRegisterLinkedBinary_<module id>.
LINKED_BINARY = r'''
void __cudaRegisterLinkedBinary_%s(void (*callback)(void **), void *w, void *id, void (*dummy)(void *)) {
  show("__cudaRegisterLinkedBinary", w);
  callback(&handle);
}
'''

REAL_MAIN = r'''#include <cstdio>
extern "C" int cudaGetDeviceCount(int *);
extern "C" const char *cudaGetErrorName(int);
int main() {
  int n = -1, rc = cudaGetDeviceCount(&n);
  std::printf("cudaGetDeviceCount: %s, %d\n", cudaGetErrorName(rc), n);
  return 0;
}
'''

OBJECT_CASES = [  # offloadtool --keep, nvprune's arguments, the entries both keep (by name)
    ('sm_80', ['-arch', 'sm_80'], {('cubin', 'sm_80')}),
    ('sm_70', ['-arch', 'sm_70'], {('cubin', 'sm_70')}),
    ('compute_80', ['-arch', 'compute_80'], {('ptx', 'sm_80')}),
    ('sm_80,compute_80', ['-gencode', 'arch=compute_80,code=[sm_80,compute_80]'],
     {('cubin', 'sm_80'), ('ptx', 'sm_80')}),
]
OBJECTS = ['k.o', 'k-rdc.o', 'two.o', 'lib.a']


def make_objects(d):
    """k.o, k-rdc.o (-fgpu-rdc), two.o (ld -r of k.o and k2.o) and lib.a (ar
    of the three), all sm_70 + sm_80 cubins and PTX."""
    cu.clang_cuda(d, 'k.cu', 'k.o', ['sm_70', 'sm_80'], False)
    cu.clang_cuda(d, 'kr.cu', 'k-rdc.o', ['sm_70', 'sm_80'], True)  # kernel kr: linked with two.o below
    cu.clang_cuda(d, 'k2.cu', 'k2.o', ['sm_70', 'sm_80'], False)
    d.run(['ld', '-r', 'k.o', 'k2.o', '-o', 'two.o'], check=True)
    d.run(['ar', 'rc', 'lib.a', 'k.o', 'k-rdc.o', 'two.o'], check=True)
    want = {'k.o': ['.nv_fatbin'], 'k-rdc.o': ['__nv_relfatbin'], 'two.o': ['.nv_fatbin', '.nv_fatbin']}
    got = {n: [fb['section'] for fb in fatbins(d.path(n))] for n in want}
    check('clang objects: one fatbin in k.o\'s .nv_fatbin, one in k-rdc.o\'s __nv_relfatbin, two in two.o\'s '
          '.nv_fatbin',
          got == want, got)


def members(folder, archive):
    """The archive's members extracted into a fresh folder below `folder`: [(name, path)] in archive order."""
    out = harness.Folder(folder)
    names = run(['ar', 't', archive], text=True, check=True).stdout.split()
    run(['ar', 'x', archive], cwd=out.dir, check=True)
    return [(n, out.path(n)) for n in names]


def objects_of(folder, path):
    """[(member name or None, object path)]."""
    return members(folder, path) if path.endswith('.a') else [(None, path)]


def compare_sections(what, ours, theirs):
    """Every section of object `ours` holds the bytes of the same section of `theirs`."""
    a, b = harness.elf64_sections(ours), harness.elf64_sections(theirs)
    key = ('name', 'type', 'flags', 'size', 'entsize')
    differ = [x['name'] for x, y in zip(a, b) if [x[k] for k in key] != [y[k] for k in key]
              or section_bytes(ours, x) != section_bytes(theirs, y)]
    check('%s: every section holds the bytes of the same section of nvprune\'s output (%d sections)' % (what, len(b)),
          len(a) == len(b) and not differ, 'sections %d / %d; differ: %s' % (len(a), len(b), differ))


def nvfatbin_relocations(path):
    """readelf -rW's relocations of .rela.nvFatBinSegment: [(offset, type, symbol, addend)]."""
    r = run(['readelf', '-rW', path], text=True)
    out, inside = [], False
    for line in r.stdout.splitlines():
        if line.startswith('Relocation section '):
            inside = "'.rela.nvFatBinSegment'" in line
            continue
        m = re.match(r'^([0-9a-f]{16})\s+[0-9a-f]{16}\s+(\S+)\s+[0-9a-f]{16}\s+(\S+) \+ ([0-9a-f]+)$', line)
        if inside and m:
            out.append((int(m.group(1), 16), m.group(2), m.group(3), int(m.group(4), 16)))
    return out


def check_relocations(what, original, pruned):
    """Each record's relocation targets the start of the fatbin it targeted before."""
    before, after = fatbins(original), fatbins(pruned)
    secs, _ = sections_by_name(pruned)
    relocs, relocs_before = nvfatbin_relocations(pruned), nvfatbin_relocations(original)
    bad = []
    for (off, rtype, sym, addend), (off0, _, sym0, addend0) in zip(relocs, relocs_before):
        s = secs.get(sym)
        magic = read_at(pruned, s['offset'] + addend, 4) if s and addend < s['size'] else b''
        j0 = [i for i, fb in enumerate(before) if fb['section'] == sym0 and fb['addr'] == addend0]
        j = [i for i, fb in enumerate(after) if fb['section'] == sym and fb['addr'] == addend]
        if off % RECORD != 8 or rtype != 'R_X86_64_64' or magic != FATBIN_MAGIC or off != off0 or sym != sym0 \
                or j != j0 or len(j) != 1:
            bad.append(('0x%x %s %s+0x%x' % (off, rtype, sym, addend), magic.hex(), 'fatbin %s, before %s' % (j, j0)))
    check('%s: readelf -r: each of the %d .nvFatBinSegment records\' relocations (R_X86_64_64 at +8) targets the '
          'start of a fatbin (magic 0xBA55ED50), the one it targeted before' % (what, len(relocs_before)),
          relocs and len(relocs) == len(relocs_before) == len(before) and not bad,
          'relocations %s, before %s; bad: %s' % (relocs, relocs_before, bad))


def link_program(d, name, objects):
    """A program of `objects` and the stand-in runtime, linked by clang++-19; its output."""
    ids = set()
    for o in objects:
        ids |= set(re.findall(r'U __cudaRegisterLinkedBinary_(\S+)', run(['nm', o], text=True, check=True).stdout))
    d.put(name + '-rt.c', (RUNTIME + ''.join(LINKED_BINARY % i for i in sorted(ids))).encode())
    d.run([CLANG, '-c', name + '-rt.c', '-o', name + '-rt.o'], check=True)
    d.run([cu.CLANGXX, name + '-rt.o'] + objects + ['-o', name], check=True)
    r = d.run(['./' + name], text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError('%s exits %s: %s' % (name, r.returncode, r.stderr))
    return r.stdout


def check_objects(root):
    d = harness.Folder(root)
    make_objects(d)
    originals = {n: d.path(n) for n in OBJECTS}
    r = run([NVPRUNE, '-arch', 'sm_80,compute_80', originals['k.o'], '-o', d.path('refused.o')], text=True)
    check('nvprune -arch sm_80,compute_80 is refused (one target per -arch): hence -gencode below',
          r.returncode != 0 and 'Unsupported gpu architecture' in r.stderr, (r.returncode, r.stderr))
    original_program = link_program(d, 'prog-original', [originals['two.o'], originals['k-rdc.o']])
    check('the program linked from the original objects registers 3 fatbins of 4 entries each',
          original_program.count('magic ba55ed50') == 3 and len(re.findall(r'^  (cubin|ptx) ', original_program, re.M))
          == 12, original_program)

    for keep, nv_args, by_name in OBJECT_CASES:
        out = harness.Folder(root)
        for name, path in originals.items():
            what = '%s --keep %s' % (name, keep)
            theirs, ours = out.path('nv-' + name), out.path('ot-' + name)
            r = run([NVPRUNE] + nv_args + [path, '-o', theirs], text=True)
            check('%s: nvprune %s writes its output' % (what, ' '.join(nv_args)), r.returncode == 0 and not r.stderr,
                  (r.returncode, r.stderr))
            r = run([OT, 'prune', '--keep', keep, path, '-o', ours], text=True)
            if not check('%s: offloadtool prune writes its output' % what, r.returncode == 0 and not r.stderr,
                         (r.returncode, r.stderr)):
                continue
            before, p0 = listing(path)
            got, p1 = listing(ours)
            want, p2 = listing(theirs)
            check('%s: cuobjdump -all -lelf -lptx lists the same entries (member, kind, arch) for ours and nvprune\'s '
                  '(%d of %d)' % (what, len(want), len(before)), p1 is None and p2 is None and got == want and want,
                  'ours %s\nnvprune %s\n%s %s' % (got, want, p1, p2))
            check('%s: they are the original\'s entries named %s' % (what, keep),
                  want == [x for x in before if (x[1], x[2]) in by_name],
                  'nvprune %s\noriginal %s %s' % (want, before, p0))
            mine, nv = objects_of(out.dir, ours), objects_of(out.dir, theirs)
            check('%s: the same members in the same order as nvprune\'s' % what,
                  [m for m, _ in mine] == [m for m, _ in nv], ([m for m, _ in mine], [m for m, _ in nv]))
            for (member, o), (_, t), (_, orig) in zip(mine, nv, objects_of(out.dir, path)):
                w = what + (' member %s' % member if member else '')
                per = [[(e['kind'], e['target']) for e in fb['entries']] for fb in fatbins(o)]
                check('%s: each fatbin holds what nvprune\'s fatbin holds (%d fatbins)' % (w, len(per)),
                      per == [[(e['kind'], e['target']) for e in fb['entries']] for fb in fatbins(t)]
                      and len(per) == len(fatbins(orig)), per)
                compare_sections(w, o, t)
                check_relocations(w, orig, o)
        # The real CUDA runtime (libcudart 11.8) registers two.o's fatbins at start-up; then the program prints
        # what cudaGetDeviceCount says (without an NVIDIA driver: cudaErrorInsufficientDriver).
        real = []
        for label in ('ot', 'nv'):
            out.put('real.cpp', REAL_MAIN.encode())
            out.run([cu.CLANGXX, 'real.cpp', label + '-two.o', LIBCUDART, '-o', 'real-' + label], check=True)
            r = run_with_libs([out.path('real-' + label)], cwd=out.dir)
            real.append((r.returncode, r.stdout, r.stderr))
        check('--keep %s: a program linked from our two.o and libcudart 11.8 runs as the one from nvprune\'s does'
              % keep, real[0] == real[1] and real[0][0] == 0 and 'cudaGetDeviceCount' in real[0][1], real)
        mine = link_program(out, 'prog-ours', [out.path('ot-two.o'), out.path('ot-k-rdc.o')])
        theirs = link_program(out, 'prog-nvprune', [out.path('nv-two.o'), out.path('nv-k-rdc.o')])
        check('--keep %s: the program linked from our two.o and k-rdc.o registers what the one linked from nvprune\'s '
              'does (3 fatbins, entries, sizes, checksums, kernels)' % keep,
              mine == theirs and mine.count('magic ba55ed50') == 3 and mine != original_program,
              'ours:\n%s\nnvprune:\n%s' % (mine, theirs))

    # Where our rules keep more: sm_86 (the sm_80 cubins) and compute_86 (the compute_80 PTX).
    out = harness.Folder(root)
    for keep, kind, kept in (('sm_86', 'cubin', 'what an 8.6 GPU loads: the sm_80 cubin'),
                             ('compute_86', 'ptx', 'the PTX an 8.6 GPU would JIT: compute_80')):
        for name, path in originals.items():
            what = '%s --keep %s' % (name, keep)
            theirs, ours = out.path('nv-%s-%s' % (keep, name)), out.path('ot-%s-%s' % (keep, name))
            r = run([NVPRUNE, '-arch', keep, path, '-o', theirs], text=True)
            nothing, info = cuobjdump_says_nothing(theirs)
            check('%s: nvprune -arch %s exits 0, warns that it stripped all device code, and cuobjdump lists no entry '
                  'in its output' % (what, keep),
                  r.returncode == 0 and 'No device code that matched architecture' in r.stderr and not nothing,
                  (r.returncode, r.stderr, nothing, info))
            r = run([OT, 'prune', '--keep', keep, path, '-o', ours], text=True)
            got, problem = listing(ours)
            before, _ = listing(path)
            want = [x for x in before if (x[1], x[2]) == (kind, 'sm_80')]
            check('DIFFERENCE (recorded): %s: offloadtool keeps %s of each fatbin (%d; cuobjdump lists nothing else)'
                  % (what, kept, len(want)),
                  r.returncode == 0 and problem is None and got == want and want, (r.stderr, got, want, problem))
            for (member, o), (_, orig) in zip(objects_of(out.dir, ours), objects_of(out.dir, path)):
                per = [[(e['kind'], e['target']) for e in fb['entries']] for fb in fatbins(o)]
                rule = [[(fb['entries'][i]['kind'], fb['entries'][i]['target'])
                         for i in kept_by_rules(fb['entries'], [keep])] for fb in fatbins(orig)]
                check('%s%s: each fatbin keeps what RULES give' % (what, ' member ' + member if member else ''),
                      per == rule and all(len(x) == 1 for x in per), 'ours %s\nrules %s' % (per, rule))
    # Both fatbin sections in one object (ld -r, either order): nvprune prunes .nv_fatbin only.
    for name, inputs in (('relfirst.o', ['k-rdc.o', 'k2.o']), ('exefirst.o', ['k2.o', 'k-rdc.o'])):
        what = '%s (ld -r %s) --keep sm_80' % (name, ' '.join(inputs))
        d.run(['ld', '-r'] + inputs + ['-o', name], check=True)
        path, theirs, ours = d.path(name), out.path('nv-' + name), out.path('ot-' + name)
        r1 = run([NVPRUNE, '-arch', 'sm_80', path, '-o', theirs], text=True)
        r2 = run([OT, 'prune', '--keep', 'sm_80', path, '-o', ours], text=True)
        if not check('%s: nvprune and offloadtool write their outputs' % what, r1.returncode == r2.returncode == 0,
                     (r1.stderr, r2.stderr)):
            continue
        per = {p: [(fb['section'], [e['target'] for e in fb['entries']]) for fb in fatbins(p)]
               for p in (path, theirs, ours)}
        check('%s: offloadtool keeps the sm_80 cubin of each fatbin of both sections' % what,
              per[ours] == [(sec, ['sm_80']) for sec, _ in per[path]], per[ours])
        o, t, a = sections_by_name(ours)[0], sections_by_name(theirs)[0], sections_by_name(path)[0]
        check('DIFFERENCE (recorded): %s: nvprune leaves __nv_relfatbin as it was (%s) and prunes .nv_fatbin, whose '
              'bytes are ours' % (what, [e for sec, e in per[theirs] if sec == '__nv_relfatbin']),
              section_bytes(theirs, t['__nv_relfatbin']) == section_bytes(path, a['__nv_relfatbin'])
              and section_bytes(theirs, t['.nv_fatbin']) == section_bytes(ours, o['.nv_fatbin'])
              and [e for sec, e in per[theirs] if sec == '.nv_fatbin'] == [['sm_80']], per[theirs])
        check_relocations(what, path, ours)

    # What nvprune writes when nothing matches is what we write when nothing stays.
    for name, path in originals.items():
        what = '%s --keep sm_60 --allow-empty' % name
        ours = out.path('ot-empty-' + name)
        r = run([OT, 'prune', '--keep', 'sm_60', '--allow-empty', path, '-o', ours], text=True)
        if check('%s: every fatbin left empty' % what, r.returncode == 0 and all(
                not fb['entries'] and fb['size'] == 16 for _, o in objects_of(out.dir, ours) for fb in fatbins(o)),
                r.stderr):
            nv_empty = objects_of(out.dir, out.path('nv-sm_86-' + name))
            for (member, o), (_, t) in zip(objects_of(out.dir, ours), nv_empty):
                compare_sections('%s%s (against nvprune -arch sm_86)' % (what, ' member ' + member if member else ''),
                                 o, t)


# ---------------------------------------------------------------------------
# 2. Linked files

LINKED_CASES = [  # (name, file, --keep, what the case shows)
    ('libcublas.so.11', LIBCUBLAS, 'sm_80', 'the sm_80 cubin of each fatbin'),
    ('libcurand.so.10', LIBCURAND, 'sm_86', 'sm_86 cubins; the first fatbin, no record\'s, keeps its address'),
    ('libcufft.so.10', LIBCUFFT, 'sm_80', '.nv_fatbin and __nv_relfatbin, the smaller packed in place'),
    ('bart', cu.BART, 'sm_52', 'an executable: its sm_52 cubins'),
    ('bart', cu.BART, 'sm_80', 'no cubin of major 8: the compute_52 PTX'),
]
PROPERTY = {'libcublas.so.11': 'cublasGetProperty', 'libcurand.so.10': 'curandGetProperty',
            'libcufft.so.10': 'cufftGetProperty'}
DLOPEN = r'''import ctypes, sys
lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL | 2)  # RTLD_NOW
get = getattr(lib, sys.argv[2])
values = []
for t in range(3):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
    v = ctypes.c_int(-1)
    values.append((get(t, ctypes.byref(v)), v.value))
print('property', values)
if len(sys.argv) > 3:  # libcurand: its host generator (no GPU)
    g = ctypes.c_void_p()
    rc = [lib.curandCreateGeneratorHost(ctypes.byref(g), 100),  # CURAND_RNG_PSEUDO_DEFAULT
          lib.curandSetPseudoRandomGeneratorSeed(g, ctypes.c_ulonglong(1234))]
    buf = (ctypes.c_float * 16)()
    rc.append(lib.curandGenerateUniform(g, buf, ctypes.c_size_t(16)))
    print('host generator', rc, [round(x, 7) for x in buf])
'''


def load_segments(path):
    """readelf -lW's PT_LOAD headers: [(offset, vaddr, filesz, memsz, flags)]."""
    r = run(['readelf', '-lW', path], text=True)
    out = []
    for line in r.stdout.splitlines():
        m = re.match(r'^\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+'
                     r'([RWE ]+?)\s+0x[0-9a-f]+$', line)
        if m:
            out.append((int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16),
                        m.group(5).replace(' ', '')))
    return out


def segment_of(segments, s):
    """The flags of the loadable segment that holds section s at its address, or None."""
    for off, vaddr, filesz, memsz, flags in segments:
        if s['type'] == 8:
            if vaddr <= s['addr'] and s['addr'] + s['size'] <= vaddr + memsz:
                return flags
        elif off <= s['offset'] and s['offset'] + s['size'] <= off + filesz and s['addr'] - vaddr == s['offset'] - off:
            return flags
    return None


def file_offset(segments, addr):
    for off, vaddr, filesz, _, _ in segments:
        if vaddr <= addr < vaddr + filesz:
            return off + addr - vaddr
    return None


def relative_relocations(path):
    """readelf -rW: {offset: addend} of the R_X86_64_RELATIVE relocations, and the other lines (as printed)."""
    r = run(['readelf', '-rW', path], text=True)
    rel, other = {}, []
    for line in r.stdout.splitlines():
        m = re.match(r'^([0-9a-f]{16})\s+[0-9a-f]{16}\s+R_X86_64_RELATIVE\s+([0-9a-f]+)$', line)
        if m:
            rel[int(m.group(1), 16)] = int(m.group(2), 16)
        elif not line.startswith('Relocation section '):
            other.append(line)
    return rel, other


def wrappers(path, relocs):
    """The .nvFatBinSegment records: [(slot address, magic, data pointer: the
    relocation's addend, the value in place)]."""
    secs, _ = sections_by_name(path)
    s = secs['.nvFatBinSegment']
    data = section_bytes(path, s)
    out = []
    for at in range(0, s['size'], RECORD):
        magic, _, in_place = struct.unpack_from('<IIQ', data, at)
        slot = s['addr'] + at + 8
        out.append((slot, magic, relocs.get(slot), in_place))
    return out


def readers_say(path):
    """What readelf -lSW (exit code, stderr) and eu-elflint --gnu-ld -q (its findings) say, file names as F."""
    r = run(['readelf', '-lSW', path], text=True)
    said = ['readelf: exit %s %s' % (r.returncode, r.stderr.replace(path, 'F').strip())]
    said += ['readelf: ' + l for l in r.stdout.splitlines() if re.search(r'warning|error', l, re.I)]
    r = run(['eu-elflint', '--gnu-ld', '-q', path], text=True, timeout=600)
    said += ['eu-elflint: ' + l.replace(path, 'F') for l in (r.stdout + r.stderr).splitlines() if l.strip()]
    return said


def run_with_libs(argv, cwd=None):
    return run(argv, cwd=cwd, env={'LD_LIBRARY_PATH': LIB_PATH}, text=True, timeout=300)


def check_linked(root, name, path, keep, about):
    what = '%s --keep %s (%s)' % (name, keep, about)
    d = harness.Folder(root)
    pruned = d.path(os.path.basename(path))
    before = fatbins(path)
    theirs, problem = listing(path)
    check('%s: the fatbin headers read here list what cuobjdump -all -lelf -lptx lists for the original (%d entries '
          'in %d fatbins)' % (what, len(theirs), len(before)),
          problem is None and [x[1:] for x in theirs] == in_cuobjdump_order(before), problem)
    expected = [[fb['entries'][i] for i in kept_by_rules(fb['entries'], [keep])] for fb in before]
    r = run([OT, 'prune', '--keep', keep, path, '-o', pruned], text=True, timeout=600)
    if not check('%s: offloadtool prune writes the pruned file' % what, r.returncode == 0 and not r.stderr,
                 (r.returncode, r.stderr)):
        return
    size_a, size_b = os.path.getsize(path), os.path.getsize(pruned)
    check('%s: the file is smaller by whole pages (%d -> %d)' % (what, size_a, size_b),
          size_b < size_a and (size_a - size_b) % 4096 == 0)

    # The entries: cuobjdump's listing, each fatbin's, the bytes.
    got, problem = listing(pruned)
    want = in_cuobjdump_order([{'section': fb['section'], 'entries': e} for fb, e in zip(before, expected)])
    check('%s: cuobjdump -all -lelf -lptx of the pruned file lists exactly the kept entries (%d of %d: %s)' % (
        what, len(want), len(theirs), ', '.join(sorted({'%s %s' % x for x in want}))),
        problem is None and [x[1:] for x in got] == want and want,
        'cuobjdump: %s\nexpected: %s\n%s' % (got[:20], want[:20], problem))
    after = fatbins(pruned)
    per = [(fb['section'], [e['target'] for e in fb['entries']]) for fb in after]
    rule = [(fb['section'], [e['target'] for e in e_]) for fb, e_ in zip(before, expected)]
    check('%s: each of the %d fatbins (in each section, in order) holds what RULES keep of it' % (what, len(before)),
          per == rule, 'first difference: %s' % (next(((i, a, b) for i, (a, b) in enumerate(zip(per, rule)) if a != b),
                                                       (len(per), len(rule))),))
    if per == rule:
        with open(path, 'rb') as fa, open(pruned, 'rb') as fb_:
            def entry_bytes(f, e):
                f.seek(e['header'])
                return f.read(e['end'] - e['header'])
            differ = [(x['target'], hex(x['header'])) for a, b in zip(expected, after) for x, y in zip(a, b['entries'])
                      if entry_bytes(fa, x) != entry_bytes(fb_, y)]
        check('%s: every kept entry (header and payload) holds the original\'s bytes' % what, not differ, differ[:5])
    for section in ('.nv_fatbin', '__nv_relfatbin'):
        in_sec = [(fb['offset'], fb['size']) for fb in after if fb['section'] == section]
        if not in_sec:
            continue
        s = sections_by_name(pruned)[0][section]
        packed = all(b[0] - (a[0] + a[1]) < 4096 for a, b in zip(in_sec, in_sec[1:]))
        check('%s: %s\'s fatbins are packed, and zeros fill the rest of the section' % (what, section),
              packed and in_sec[-1][0] + in_sec[-1][1] <= s['offset'] + s['size'], in_sec[:5])

    # The sections: all but the fatbin sections as they were.
    a_by, a_secs = sections_by_name(path)
    b_by, b_secs = sections_by_name(pruned)
    key = ('name', 'type', 'flags', 'addr', 'entsize')
    check('%s: every section keeps its name, type, flags and address (%d sections)' % (what, len(a_secs)),
          [[s[k] for k in key] for s in a_secs] == [[s[k] for k in key] for s in b_secs])
    fatbin_secs = [n for n in ('.nv_fatbin', '__nv_relfatbin') if n in a_by]
    resized = [n for n in fatbin_secs if b_by[n]['size'] != a_by[n]['size']]
    check('%s: one fatbin section shrinks (the larger), the other keeps its size' % what,
          len(resized) == 1 and b_by[resized[0]]['size'] < a_by[resized[0]]['size']
          and resized[0] == max(fatbin_secs, key=lambda n: a_by[n]['size']), resized)
    relocs_a, other_a = relative_relocations(path)
    relocs_b, other_b = relative_relocations(pruned)
    seg_a, seg_b = load_segments(path), load_segments(pruned)
    wa, wb = wrappers(path, relocs_a), wrappers(pruned, relocs_b)
    slots = {w[0] for w in wa}
    changed = []
    for s in a_secs:
        if s['name'] in fatbin_secs or s['type'] == 8 or s['name'] in ('.nvFatBinSegment', '.rela.dyn'):
            continue
        t = b_by[s['name']]
        if t['size'] != s['size'] or section_bytes(path, s) != section_bytes(pruned, t):
            changed.append(s['name'])
    check('%s: every other section (.text included) keeps its size and bytes' % what, not changed and '.text' in a_by,
          changed)
    seg = a_by['.nvFatBinSegment']
    ra, rb = bytearray(section_bytes(path, seg)), bytearray(section_bytes(pruned, b_by['.nvFatBinSegment']))
    for slot in slots:
        at = slot - seg['addr']
        ra[at:at + 8] = rb[at:at + 8] = bytes(8)
    check('%s: .nvFatBinSegment keeps its bytes but the records\' data pointers' % what, ra == rb)
    check('%s: readelf -rW lists the same relocations, but for the addends of the records\' data pointers' % what,
          other_a == other_b and {k: v for k, v in relocs_a.items() if k not in slots}
          == {k: v for k, v in relocs_b.items() if k not in slots} and set(relocs_a) == set(relocs_b),
          'other lines the same: %s; relative relocations %d / %d' % (other_a == other_b, len(relocs_a), len(relocs_b)))

    # The records: each data pointer at the header of the fatbin it named before.
    index_a = {fb['addr']: i for i, fb in enumerate(before)}
    index_b = {fb['addr']: i for i, fb in enumerate(after)}
    bad = []
    with open(pruned, 'rb') as f:
        for (slot, magic, rel, value), (_, magic0, rel0, value0) in zip(wb, wa):
            pointer = rel if rel is not None else value
            off = file_offset(seg_b, pointer)
            f.seek(off or 0)
            head = f.read(4) if off is not None else b''
            if magic != WRAPPER_MAGIC or head != FATBIN_MAGIC or index_b.get(pointer) is None \
                    or index_b.get(pointer) != index_a.get(rel0 if rel0 is not None else value0) \
                    or (value0 == rel0 and value != rel):
                bad.append((hex(slot), hex(magic), rel, value, head.hex(), index_b.get(pointer),
                            index_a.get(rel0 if rel0 is not None else value0)))
    check('%s: every .nvFatBinSegment record (%d) points (its R_X86_64_RELATIVE addend, and the value in place where '
          'the linker wrote it) at a fatbin header, magic 0xBA55ED50, of the fatbin it pointed at before'
          % (what, len(wa)),
          wa and len(wa) == len(wb) and not bad, bad[:5])
    pointed = {rel if rel is not None else value for _, _, rel, value in wa}
    unpointed = [i for i, fb in enumerate(before) if fb['addr'] not in pointed]
    moved = [i for i in unpointed if after[i]['addr'] != before[i]['addr']]
    check('%s: the fatbins no record points at (%s) keep their addresses' % (what, unpointed or 'none'), not moved,
          moved)
    if name == 'libcurand.so.10':
        check('%s: the first fatbin is one no record points at' % what, unpointed[:1] == [0], unpointed)

    # Loadable: every allocated section in a segment at its address, as writable and executable as before.
    lost = []
    for s in b_secs:
        if not s['flags'] & 2 or s['size'] == 0 or (s['type'] == 8 and s['flags'] & 0x400):  # .tbss: no memory
            continue
        fa_, fb2 = segment_of(seg_a, a_by[s['name']]), segment_of(seg_b, s)
        want_flags = fa_ if s['flags'] & 4 or s['name'] in fatbin_secs else (fa_ or '').replace('E', '')
        if fb2 is None or (fb2 != fa_ and fb2 != want_flags):
            lost.append((s['name'], fa_, fb2))
    check('%s: readelf -lW: every allocated section lies in a loadable segment at its address, with the segment '
          'flags it had (executable only where code is)' % what, not lost, lost)
    said_a, said_b = readers_say(path), readers_say(pruned)
    new = [l for l in said_b if l not in said_a]
    check('%s: readelf -lSW and eu-elflint --gnu-ld -q report nothing the original does not' % what, not new,
          '\n'.join(new[:20]))

    # Running it.
    if name in PROPERTY:
        outs = []
        for p in (path, pruned):
            r = run_with_libs([sys.executable, '-c', DLOPEN, p, PROPERTY[name]] + (['rng'] if 'curand' in name else []))
            outs.append((r.returncode, r.stdout, r.stderr))
        check('%s: Python\'s ctypes dlopens the pruned library (RTLD_NOW) and %s gives the original\'s version%s' % (
            what, PROPERTY[name], ', its host generator the original\'s numbers' if 'curand' in name else ''),
            outs[0] == outs[1] and outs[1][0] == 0 and '(0, ' in outs[1][1] and
            ('curand' not in name or 'host generator [0, 0, 0]' in outs[1][1]), outs)
    else:
        outs = []
        for p in (path, pruned):
            w = harness.Folder(d.dir)
            shutil.copy(p, w.path('bart'))
            rs = [run_with_libs([w.path('bart')] + args, cwd=w.dir) for args in (
                ['version', '-V'], ['phantom', '-x', '64', 'ph'], ['fft', '-u', '3', 'ph', 'k'])]
            outs.append(([(x.returncode, x.stdout, x.stderr) for x in rs],
                         {n: b for n, b in w.files().items() if n != 'bart'}))
        check('%s: the pruned bart runs: version -V, phantom and fft print and write what the original\'s do' % what,
              outs[0] == outs[1] and all(x[0] == 0 for x in outs[1][0]) and 'CUDA=1' in outs[1][0][0][1]
              and {'ph.cfl', 'k.cfl'} <= set(outs[1][1]),
              [(x[0], sorted(x[1])) for x in outs])
    return pruned, expected, before


# ---------------------------------------------------------------------------
# 3. --dry-run --json

def check_dry_run(root, pruned, expected, before):
    what = 'libcublas.so.11 --keep sm_80 --dry-run --json'
    d = harness.Folder(root)
    listed = sorted(os.listdir(os.path.dirname(LIBCUBLAS)))
    r = run([OT, 'prune', '--keep', 'sm_80', '--dry-run', '--json', LIBCUBLAS], cwd=d.dir, text=True)
    try:
        j = json.loads(r.stdout)
    except ValueError as e:
        check('%s: runs and prints JSON' % what, False, '%s %s %s' % (e, r.returncode, r.stderr))
        return
    check('%s: exit 0, nothing written (in its working folder, beside the input)' % what,
          r.returncode == 0 and not d.names() and j.get('written') is False
          and sorted(os.listdir(os.path.dirname(LIBCUBLAS))) == listed, (r.returncode, d.names(), r.stderr))
    with open(LIBCUBLAS, 'rb') as f:
        def usize(e):  # the entry header's uncompressed size, else its stored size
            f.seek(e['header'])
            h = cu.describe.ENTRY.unpack(f.read(cu.describe.ENTRY.size))
            return h[13] if h[11] & (cu.LZ4 | cu.ZSTD) else h[3]
        want = [{'id': e['target'], 'size': usize(e), 'kept': e in kept,
                 'where': 'section %s, fatbin %d at 0x%x' % (fb['section'], n + 1, fb['offset'])}
                for fb, kept in zip(before, expected) for n in [before.index(fb)] for e in fb['entries']]
    got = [{k: e.get(k) for k in ('id', 'size', 'kept', 'where')} for e in j.get('entries', [])]
    first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
    check('%s: every entry of every fatbin in file order (%d), with its target, uncompressed size, fatbin and kept as '
          'part 2 expects and finds (%d kept)' % (what, len(want), sum(w['kept'] for w in want)),
          got == want, 'first difference at %s: ours %s, expected %s; %d / %d entries' % (
              first, got[first] if first is not None else None, want[first] if first is not None else None,
              len(got), len(want)))
    sizes = (j.get('size_before'), j.get('size_after'), j.get('saved'))
    a, b = os.path.getsize(LIBCUBLAS), os.path.getsize(pruned)
    check('%s: size_before, size_after, saved are the files\' (%d, %d, %d)' % (what, a, b, a - b),
          sizes == (a, b, a - b), sizes)


def check_tree_none_for_targets(root):
    """A folder of libcurand.so.10 and CUDA 13's k-nvcc13.o (an sm_80 cubin and
    compute_80 PTX: nothing an sm_35 GPU loads) pruned --keep sm_35: the object
    is copied as it is, with a note, and libcurand pruned by the rules (a prune
    of a CUDA 13 install for sm_90 stopped at cuFFT 13's lone sm_75 cubin). A
    folder of the object alone is refused; --allow-empty empties it."""
    what = 'a folder of libcurand.so.10 and k-nvcc13.o --keep sm_35'
    obj = os.path.join(harness.DATA, 'nvidia', 'k-nvcc13.o')
    d = harness.Folder(root)
    tree = d.path('in')
    os.makedirs(tree)
    for f in (LIBCURAND, obj):
        shutil.copy(f, tree)
    r = run([OT, 'prune', '--keep', 'sm_35', tree, '-o', d.path('out')], text=True, timeout=600)
    check('%s: exit 0, nothing on stderr' % what, r.returncode == 0 and not r.stderr, (r.returncode, r.stderr))
    out_obj, out_lib = d.path('out/k-nvcc13.o'), d.path('out/' + os.path.basename(LIBCURAND))
    check('%s: the object is the input\'s, byte for byte' % what,
          os.path.exists(out_obj) and harness.same_file(obj, out_obj))
    if os.path.exists(out_lib):
        before = fatbins(LIBCURAND)
        want = [('sm_%d' % e['arch'], e['kind']) for fb in before for i in kept_by_rules(fb['entries'], ['sm_35'])
                for e in [fb['entries'][i]]]
        theirs, problem = listing(out_lib)
        got = [(x[2], x[1]) for x in theirs]
        check('%s: cuobjdump lists in the pruned libcurand the %d entries the rules keep' % (what, len(want)),
              problem is None and got == want, (problem, got[:6], want[:6]))
    else:
        check('%s: libcurand written' % what, False)
    r = run([OT, 'prune', '--keep', 'sm_35', '--dry-run', '--json', tree], text=True, timeout=600)
    try:
        rows = {os.path.basename(f['path']): f for f in json.loads(r.stdout)['files']}
    except (ValueError, KeyError) as e:
        rows = {}
        check('%s --dry-run --json: JSON' % what, False, '%s %s' % (e, r.stderr))
    row = rows.get('k-nvcc13.o', {})
    check('%s --dry-run --json: the object copied, its 2 entries kept, the note says why' % what,
          row.get('action') == 'copy' and [e.get('kept') for e in row.get('entries', [])] == [True, True]
          and row.get('saved') == 0 and any('no device entry for the kept targets' in n for n in row.get('notes', [])),
          row)
    alone = d.path('alone')
    os.makedirs(alone)
    shutil.copy(obj, alone)
    r = run([OT, 'prune', '--keep', 'sm_35', alone, '-o', d.path('alone-out')], text=True)
    check('a folder of k-nvcc13.o alone --keep sm_35: exit 1, one line, nothing written (no output, no staging folder)',
          r.returncode == 1 and r.stderr.count('\n') == 1 and 'no device entry of any of its files would stay'
          in r.stderr and not any(n.startswith(('alone-out', '.alone-out')) for n in os.listdir(d.dir)),
          (r.returncode, r.stderr, os.listdir(d.dir)))
    r = run([OT, 'prune', '--keep', 'sm_35', '--allow-empty', alone, '-o', d.path('empty-out')], text=True)
    said, err = cuobjdump_says_nothing(d.path('empty-out/k-nvcc13.o')) if r.returncode == 0 else (['not run'], '')
    check('a folder of k-nvcc13.o alone --keep sm_35 --allow-empty: the object written without device code '
          '(cuobjdump -all lists nothing)', r.returncode == 0 and not said, (r.returncode, r.stderr, said, err))


# ---------------------------------------------------------------------------

def cases(root):
    check_objects(root)
    for name, path, keep, about in LINKED_CASES:
        got = check_linked(root, name, path, keep, about)
        if name == 'libcublas.so.11' and got:
            check_dry_run(root, *got)
    check_tree_none_for_targets(root)
    for x in DIFFERENCES:
        print('NOTE', x)
    print('%d recorded differences (DIFFERENCES in %s)' % (len(DIFFERENCES), os.path.basename(__file__)))


if __name__ == '__main__':
    sys.exit(harness.run_suite('cuda-prune', cases, needs=[
        cu.CUOBJDUMP, NVPRUNE, cu.CLANGXX, CLANG, os.path.join(cu.CUDA_PATH, 'bin'), 'ld', 'ar', 'nm', 'readelf',
        'eu-elflint', LIBCUBLAS, LIBCURAND, LIBCUFFT, cu.BART, cu.LIBRARIES[1],
        LIBCUDART]))
