#!/usr/bin/env python3
"""`offloadtool prune` of ar archives of CUDA objects (what NVIDIA ships as
lib*_static.a), from the committed nvcc 13 objects of tests/data/nvidia:

  * a member whose fatbins keep nothing stays, its fatbin empty (as nvprune
    leaves it): only an archive left without any device code is an error (it
    was refused member by member before, so libcublasLt_static.a could not be
    pruned to sm_80: its sm_70-only members keep nothing);
  * the GNU symbol table "/" is rewritten with the members' new offsets,
    read back here from the output's own headers; its names (48 MiB here,
    58 MB in libcublasLt_static.a) are not held in memory: the run stays
    within 32 MiB of the binary's own resident set (it held them, and every
    member's plan, before: 577 MB for libcublasLt_static.a);
  * the members' fatbins hold what the CUDA rules keep, read with a small
    reader of the format's facts (not with offloadtool).
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import OT, check, read, run  # noqa: E402

DATA = os.path.join(os.environ.get('OT_TEST_DATA', os.path.join(os.path.dirname(__file__), '..', 'data')), 'nvidia')


def member_header(name, size):
    return b'%-16s%-12s%-6s%-6s%-8s%-10d`\n' % (name, b'0', b'0', b'0', b'644', size)


def gnu_archive(members, names_bytes):
    """An ar archive: a GNU symbol table "/" with one symbol per member
    (pointing at its header) and `names_bytes` bytes of names, then the
    members (name, bytes)."""
    count = len(members)
    names = b''.join(b'sym_%s\0' % n for n, _ in members)
    names += b'x' * (names_bytes - len(names) - 1) + b'\0'
    table_size = 4 + 4 * count + len(names)
    offsets, at = [], 8 + 60 + table_size + table_size % 2
    for n, data in members:
        offsets.append(at)
        at += 60 + len(data) + len(data) % 2
    table = struct.pack('>I', count) + b''.join(struct.pack('>I', o) for o in offsets) + names
    out = b'!<arch>\n' + member_header(b'/', len(table)) + table + b'\n' * (len(table) % 2)
    for n, data in members:
        out += member_header(n + b'/', len(data)) + data + b'\n' * (len(data) % 2)
    return out


def members_of(data):
    """[(name, header offset, bytes)] of an ar archive (short names only)."""
    out, at = [], 8
    while at < len(data):
        name = data[at:at + 16].rstrip(b' ')
        size = int(data[at + 48:at + 58])
        out.append((name, at, data[at + 60:at + 60 + size]))
        at += 60 + size + size % 2
    return out


def fatbin_targets(obj):
    """The targets of the fatbins in the ELF object's .nv_fatbin / __nv_relfatbin, in order."""
    shoff, = struct.unpack_from('<Q', obj, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', obj, 0x3a)
    secs = [struct.unpack_from('<IIQQQQ', obj, shoff + i * shentsize) for i in range(shnum)]
    strtab = secs[shstrndx]
    out = []
    for name, _, _, _, off, size in secs:
        n = obj[strtab[4] + name:obj.index(b'\0', strtab[4] + name)]
        if n not in (b'.nv_fatbin', b'__nv_relfatbin'):
            continue
        at = off
        while at < off + size:
            magic, _, hsize, fat = struct.unpack_from('<IHHQ', obj, at)
            assert magic == 0xBA55ED50
            e = at + hsize
            while e < at + hsize + fat:
                kind, _, ehsize, payload = struct.unpack_from('<HHIQ', obj, e)
                arch, = struct.unpack_from('<I', obj, e + 28)
                out.append(('sm_%d' if kind == 2 else 'compute_%d') % arch)
                e += ehsize + payload
            at += hsize + fat
    return out


def body(root):
    nvcc = read(os.path.join(DATA, 'k-nvcc13.o'))      # compute_80 PTX, sm_80 cubin
    rdc = read(os.path.join(DATA, 'k-rdc-nvcc13.o'))   # the same in __nv_relfatbin
    host = b'not an object, kept as it is\n'
    ar = os.path.join(root, 'libk_static.a')
    harness.write(ar, gnu_archive([(b'k.o', nvcc), (b'notes.txt', host), (b'k-rdc.o', rdc)], 48 << 20))
    out = os.path.join(root, 'slim.a')
    budget = harness.resident_budget_kib(32)

    # sm_90: no sm_9x cubin; an sm_90 GPU JIT-compiles the compute_80 PTX.
    rc, kib = harness.peak_resident_kib([OT, 'prune', '--keep', 'sm_90', ar, '-o', out])
    check('--keep sm_90: pruned', rc == 0)
    check('--keep sm_90: within 32 MiB of the binary\'s resident set (the symbol table\'s names are not copied)',
          0 < kib <= budget, '%d KiB, budget %d KiB' % (kib, budget))
    if rc == 0:
        data = read(out)
        got = members_of(data)
        check('the members, in order', [m[0] for m in got] == [b'/', b'k.o/', b'notes.txt/', b'k-rdc.o/'],
              [m[0] for m in got])
        table = got[0][2]
        count, = struct.unpack_from('>I', table, 0)
        offsets = [struct.unpack_from('>I', table, 4 + 4 * i)[0] for i in range(count)]
        check('the symbol table points at the members\' new headers', offsets == [got[1][1], got[2][1], got[3][1]],
              (offsets, [m[1] for m in got]))
        check('the symbol names as they were', table[4 + 4 * count:] == gnu_archive(
            [(b'k.o', nvcc), (b'notes.txt', host), (b'k-rdc.o', rdc)], 48 << 20)[68 + 4 + 4 * count:68 + len(table)])
        check('k.o keeps the compute_80 PTX', fatbin_targets(got[1][2]) == ['compute_80'], fatbin_targets(got[1][2]))
        check('the other member is as it was', got[2][2] == host)
        check('k-rdc.o keeps the compute_80 PTX', fatbin_targets(got[3][2]) == ['compute_80'],
              fatbin_targets(got[3][2]))

    # A member keeping nothing stays, with an empty fatbin; the archive keeps device code elsewhere.
    one = os.path.join(root, 'mixed.a')
    ptx_only = read(os.path.join(DATA, 'k-nvcc13.o'))
    harness.write(one, gnu_archive([(b'k.o', ptx_only), (b'k-rdc.o', rdc)], 4096))
    r = run([OT, 'prune', '--drop', 'sm_80,compute_80', one, '-o', out], text=True)
    check('every entry dropped: an error naming the archive', r.returncode == 1 and
          'no device entry of the NVIDIA fatbins of the archive\'s members would stay' in r.stderr, r.stderr)
    r = run([OT, 'prune', '--keep', 'sm_80', one, '-o', out], text=True)
    check('--keep sm_80: pruned', r.returncode == 0, r.stderr)
    # sm_75 keeps nothing in either member: with --allow-empty, both stay with empty fatbins.
    r = run([OT, 'prune', '--keep', 'sm_75', one, '-o', out], text=True)
    check('--keep sm_75: nothing would stay: refused', r.returncode == 1, r.stderr)
    r = run([OT, 'prune', '--keep', 'sm_75', '--allow-empty', one, '-o', out], text=True)
    if r.returncode == 0:
        got = members_of(read(out))
        check('--allow-empty: both members stay, their fatbins empty',
              [fatbin_targets(m[2]) for m in got[1:]] == [[], []], [fatbin_targets(m[2]) for m in got[1:]])
    else:
        check('--allow-empty: pruned', False, r.stderr)
    # One member keeps nothing, the other keeps its cubin: pruned (refused member by member before).
    mixed = os.path.join(root, 'mixed2.a')
    arch = read(os.path.join(DATA, 'arch-specific.fatbin'))  # a container member: sm_80 ... sm_100f
    harness.write(mixed, gnu_archive([(b'k.o', nvcc), (b'arch.fatbin', arch)], 4096))
    r = run([OT, 'prune', '--drop', 'sm_80,compute_80', mixed, '-o', out], text=True)
    check('--drop sm_80,compute_80: k.o keeping nothing stays, the other member keeps the rest', r.returncode == 0,
          r.stderr)
    if r.returncode == 0:
        got = members_of(read(out))
        check('k.o\'s fatbin is empty', fatbin_targets(got[1][2]) == [], fatbin_targets(got[1][2]))
        check('arch.fatbin keeps sm_90, sm_90a, compute_90a, sm_100f', run(
            [OT, 'list', '--json', out], text=True).stdout.count('"kind": "') == 4)


if __name__ == '__main__':
    sys.exit(harness.run_suite('prune-cuda-archive', body, needs=['/usr/bin/time']))
