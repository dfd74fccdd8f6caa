#!/usr/bin/env python3
"""`offloadtool prune` of linked CUDA files built here, in the layouts NVIDIA's
libraries have, from the committed fatbins of tests/data/nvidia (made by
NVIDIA's fatbinary; see its README) -- no CUDA toolkit needed:

  * a shared library (clang 19, GNU ld) whose .nv_fatbin holds three fatbins:
    the first registered by no record (as libcurand's and libcusparse's first
    fatbin), then two each registered by a version-1 __fatBinC_Wrapper_t in
    .nvFatBinSegment, and a version-2 record whose prelinked-fatbin list lies
    in .bss; .nv_fatbin lies in the read-execute segment with .eh_frame after
    it (as in Debian's CUDA 11.8 libraries) and .cask_resource right after it,
    which a pointer in .data names (as in CUDA 13's libcublasLt: a pointer to
    the section's end is one to what follows, and must not move -- the prune
    was refused before);
  * the same with __nv_relfatbin beside .nv_fatbin (libcufft's layout): the
    smaller one is packed in place.

After `prune --keep sm_90` (per fatbin: the sm_90 cubin, else what an sm_90
GPU loads):
  * the records point at fatbin headers (magic 0xBA55ED50) holding what the
    rules keep -- read here with a small reader of the format's facts, not
    with offloadtool -- the unregistered fatbin keeps its address, the v2
    record's list pointer is untouched, the .data pointer still names
    .cask_resource;
  * every allocated section but the fatbin sections keeps its address, size
    and bytes; the file is smaller;
  * the library still loads (Python's ctypes) and its function answers;
  * readelf, llvm-readelf and eu-elflint say nothing the input did not.
"""
import ctypes
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import CLANG, OT, check, read, run, write  # noqa: E402

DATA = os.path.join(os.environ.get('OT_TEST_DATA', os.path.join(os.path.dirname(__file__), '..', 'data')), 'nvidia')
FATBIN_MAGIC = 0xBA55ED50
WRAPPER_MAGIC = 0x466243B1


def asm(relfatbin):
    """The library's assembly: fatbins as .incbin of the committed files."""
    arch = os.path.join(DATA, 'arch-specific.fatbin')  # sm_80 compute_80 sm_90 sm_90a compute_90a sm_100f
    lz4 = os.path.join(DATA, 'lz4.fatbin')             # sm_80 compute_80 (LZ4)
    zstd = os.path.join(DATA, 'zstd.fatbin')           # sm_80 compute_80 (zstd)
    second = '__nv_relfatbin' if relfatbin else '.nv_fatbin'
    return f'''
    .text
    .globl answer
    .type answer, @function
answer:
    .cfi_startproc
    movl $42, %eax
    ret
    .cfi_endproc
    .size answer, .-answer

    .section .nv_fatbin, "a"
    .p2align 3
unregistered:
    .incbin "{lz4}"
    .p2align 3
fatbin_a:
    .incbin "{arch}"
    .section {second}, "a"
    .p2align 3
fatbin_b:
    .incbin "{zstd}"
    .section .cask_resource, "a"
    .p2align 3
cask:
    .quad 0x1234567812345678

    .section .nvFatBinSegment, "aw"
    .p2align 3
    .long {WRAPPER_MAGIC}, 1
    .quad fatbin_a, 0
    .long {WRAPPER_MAGIC}, 1
    .quad fatbin_b, 0
    .long {WRAPPER_MAGIC}, 2
    .quad fatbin_a, prelinked

    .bss
    .p2align 3
prelinked:
    .zero 24

    .data
    .p2align 3
    .globl cask_pointer
cask_pointer:
    .quad cask
'''


def sections(path):
    return {s['name']: s for s in harness.elf64_sections(path)}


def relative_addends(path):
    """address -> addend of every R_X86_64_RELATIVE in .rela.dyn."""
    secs = sections(path)
    rela = secs['.rela.dyn']
    data = read(path)[rela['offset']:rela['offset'] + rela['size']]
    out = {}
    for i in range(0, len(data), 24):
        off, info, addend = struct.unpack_from('<QQq', data, i)
        if info & 0xffffffff == 8:
            out[off] = addend
    return out


def file_offset(secs, addr):
    for s in secs.values():
        if s['type'] != 8 and s['addr'] <= addr < s['addr'] + s['size'] and s['flags'] & 2:
            return s['offset'] + addr - s['addr']
    raise AssertionError('address 0x%x in no section' % addr)


def fatbin_at(data, off):
    """(kinds+archs of the entries) of the fatbin at file offset `off`, read from its headers."""
    magic, version, hsize, fat = struct.unpack_from('<IHHQ', data, off)
    assert magic == FATBIN_MAGIC, hex(magic)
    out, at = [], off + hsize
    while at < off + hsize + fat:
        kind, _, ehsize, payload = struct.unpack_from('<HHIQ', data, at)
        arch, = struct.unpack_from('<I', data, at + 28)
        flags, = struct.unpack_from('<Q', data, at + 40)
        suffix = 'a' if flags & 0x100000 else 'f' if flags & 0x200000 else ''
        out.append(('sm_%d%s' if kind == 2 else 'compute_%d%s') % (arch, suffix))
        at += ehsize + payload
    return out


def build(root, name, relfatbin):
    s = os.path.join(root, name + '.s')
    write(s, asm(relfatbin).encode())
    so = os.path.join(root, 'lib%s.so' % name)
    r = run([CLANG, '-shared', '-fPIC', '-nostdlib', '-fuse-ld=bfd', '-Wl,-z,norelro', s, '-o', so], text=True)
    check('%s: built' % name, r.returncode == 0, r.stderr)
    return so


def body(root):
    for name, relfatbin in (('cudalike', False), ('cufftlike', True)):
        so = build(root, name, relfatbin)
        if not os.path.exists(so):
            continue
        before = sections(so)
        check('%s: .cask_resource starts where .nv_fatbin ends (the layout under test)' % name,
              before['.cask_resource']['addr'] == before['.nv_fatbin']['addr'] + before['.nv_fatbin']['size']
              or relfatbin, '%x %x' % (before['.cask_resource']['addr'], before['.nv_fatbin']['addr']))
        out = os.path.join(root, 'slim-' + os.path.basename(so))
        r = run([OT, 'prune', '--keep', 'sm_90', so, '-o', out], text=True)
        check('%s: prune --keep sm_90 succeeds' % name, r.returncode == 0, r.stderr)
        if r.returncode != 0:
            continue
        after = sections(out)
        data, old = read(out), read(so)
        check('%s: smaller' % name, len(data) < len(old), '%d -> %d' % (len(old), len(data)))
        fat = ('.nv_fatbin', '__nv_relfatbin')
        for n, s in before.items():
            if not s['flags'] & 2 or n in fat or s['type'] == 8:
                continue
            a = after[n]
            same = (a['addr'], a['size']) == (s['addr'], s['size']) and \
                data[a['offset']:a['offset'] + a['size']] == old[s['offset']:s['offset'] + s['size']] \
                if n not in ('.rela.dyn', '.nvFatBinSegment', '.dynsym', '.symtab') else a['addr'] == s['addr']
            check('%s: %s keeps its address and bytes' % (name, n), same)
        # The records, by their relocations.
        seg = after['.nvFatBinSegment']
        rel = relative_addends(out)
        rel_old = relative_addends(so)
        kept = []
        for i in range(seg['size'] // 24):
            rec = seg['offset'] + i * 24
            magic, version = struct.unpack_from('<II', data, rec)
            target = rel.get(seg['addr'] + i * 24 + 8)
            check('%s: record %d is a wrapper with a relocated data pointer' % (name, i),
                  magic == WRAPPER_MAGIC and target is not None)
            if target is None:
                continue
            entries = fatbin_at(data, file_offset(after, target))
            kept.append(entries)
            if version == 2:
                check('%s: the v2 record\'s prelinked list still points into .bss' % name,
                      rel.get(seg['addr'] + i * 24 + 16) == rel_old.get(seg['addr'] + i * 24 + 16) and
                      after['.bss']['addr'] <= rel[seg['addr'] + i * 24 + 16] < after['.bss']['addr'] + after['.bss']['size'])
        # arch-specific.fatbin keeps its sm_90 cubin; zstd.fatbin (sm_80 + compute_80) what an sm_90 GPU
        # loads: the compute_80 PTX (no sm_9x cubin; PTX is JIT-compiled for newer GPUs).
        check('%s: the records name fatbins holding what an sm_90 GPU loads' % name,
              kept == [['sm_90'], ['compute_80'], ['sm_90']], kept)
        # The unregistered fatbin (lz4.fatbin) keeps its address: .nv_fatbin's start.
        nv = after['.nv_fatbin']
        check('%s: the fatbin no record names keeps its address' % name,
              nv['addr'] == before['.nv_fatbin']['addr'] and fatbin_at(data, nv['offset']) == ['compute_80'], 
              fatbin_at(data, nv['offset']))
        # The .data pointer to .cask_resource's start is unchanged.
        ptr = [a for a, v in rel.items() if v == before['.cask_resource']['addr']]
        check('%s: the pointer to .cask_resource still names it' % name,
              len(ptr) == 1 and rel_old.get(ptr[0]) == before['.cask_resource']['addr'], ptr)
        # Loads, and answers.
        lib = ctypes.CDLL(os.path.abspath(out))
        check('%s: the pruned library loads and answers' % name, lib.answer() == 42)
        check('%s: readers say nothing new' % name,
              harness.elf_readers_say(out) == harness.elf_readers_say(so),
              (harness.elf_readers_say(so), harness.elf_readers_say(out)))
        if relfatbin:
            r = run([OT, 'prune', '--keep', 'sm_90', so, '--dry-run', '--json'], text=True)
            check('%s: the in-place section is noted' % name, 'pruned in place' in r.stdout, r.stdout)


if __name__ == '__main__':
    sys.exit(harness.run_suite('prune-cuda-linked', body, needs=[CLANG, 'readelf', 'eu-elflint']))
