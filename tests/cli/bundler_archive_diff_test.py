#!/usr/bin/env python3
"""Differential test for heterogeneous device archives (clang-offload-bundler
-unbundle -type=a, reference 2.16): offloadtool's personality against LLVM 19's
bundler, through the harness of bundler_diff_test.py (imported, not copied):
exit code, stdout, stderr and every file left behind, byte for byte.

Also the native `offloadtool unbundle` on archives (same bytes as the
personality) and its --extract-dir mode.

Environment: OFFLOADTOOL = the offloadtool binary (required).
Arguments:   [substring]  run only the cases whose name contains it.
"""

import os
import random
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bundler_diff_test as bd  # noqa: E402  (the differential harness of the bundler)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import binary_bundle, peak_resident_kib, read, resident_budget_kib  # noqa: E402

HOST = bd.HOST
G906 = 'hip-amdgcn-amd-amdhsa--gfx906'
G90A = 'hip-amdgcn-amd-amdhsa--gfx90a'
G1030 = 'hip-amdgcn-amd-amdhsa--gfx1030'
OMP906 = 'openmp-amdgcn-amd-amdhsa--gfx906'
SM70 = 'openmp-nvptx64-nvidia-cuda--sm_70'


# ---------------------------------------------------------------------------
# Inputs

def gnu_archive(members, long_table=None):
    """A GNU archive; names longer than 15 bytes or holding '/' go to '//'."""
    def header(name, size):
        return (name.ljust(16) + b'0'.ljust(12) + b'0'.ljust(6) + b'0'.ljust(6) + b'644'.ljust(8) +
                str(size).encode().ljust(10) + b'`\n')
    longs, names = b'', []
    for n, _ in members:
        n = n.encode() if isinstance(n, str) else n
        if len(n) > 15 or b'/' in n:
            names.append(b'/%d' % len(longs))
            longs += n + b'/\n'
        else:
            names.append(n + b'/')
    if long_table is not None:
        longs = long_table
    out = b'!<arch>\n'
    if longs:
        out += header(b'//', len(longs)) + longs + (b'\n' if len(longs) % 2 else b'')
    for h, (_, d) in zip(names, members):
        out += header(h, len(d)) + d + (b'\n' if len(d) % 2 else b'')
    return out


def llvm_ar(members):
    """An archive made by llvm-ar from files of these names (with symbol table)."""
    return harness.llvm_ar(members, bd.SCRATCH)


def make_inputs():
    f = {}
    host_o = bd.compile_object('x86_64-linux-gnu')
    dev = {G906: b'gfx906 code object\n', G90A: b'gfx90a code\n' * 7, G1030: b'rdna2\n',
           OMP906: b'openmp gfx906\n', SM70: b'ptx for sm_70 \x00\x01\n'}
    # an object with host + device bundles (the HIP -fgpu-rdc output)
    f['obj'] = bd.llvm_bundle(['-type=o', '-targets=%s,%s,%s' % (HOST, G906, G90A), '-input=h', '-input=a',
                               '-input=b'], {'h': host_o, 'a': dev[G906], 'b': dev[G90A]})
    f['obj_omp'] = bd.llvm_bundle(['-type=o', '-targets=%s,%s,%s' % (HOST, OMP906, SM70), '-input=h', '-input=a',
                                   '-input=b'], {'h': host_o, 'a': dev[OMP906], 'b': dev[SM70]})
    f['bc'] = bd.llvm_bundle(['-type=bc', '-targets=%s,%s,%s' % (G906, G1030, G90A + ':xnack+'), '-input=a',
                              '-input=b', '-input=c'], {'a': dev[G906], 'b': dev[G1030], 'c': dev[G90A]})
    f['ccob'] = bd.llvm_bundle(['-type=bc', '-compress', '-targets=%s,%s' % (G906, G1030), '-input=a', '-input=b'],
                               {'a': dev[G906] * 40, 'b': dev[G1030]})
    f['ccob_obj'] = bd.llvm_bundle(['-type=o', '-compress', '-targets=%s,%s' % (HOST, G906), '-input=/dev/null',
                                    '-input=a'], {'a': dev[G906]})
    f['hostbc'] = bd.llvm_bundle(['-type=bc', '-targets=%s,%s' % (HOST, G906), '-input=a', '-input=b'],
                                 {'a': b'host side bytes\n', 'b': dev[G906]})
    f['plain_o'] = host_o
    f['text'] = b'just a text file, not a bundle\n'
    f['conflict'] = binary_bundle([(G906, b'A'), (G906 + ':xnack+', b'B'), (G90A + ':sramecc+', b'C')])
    f['no_conflict'] = binary_bundle([(G906 + ':xnack-', b'A'), (G906 + ':xnack+', b'B')])
    return f


# ---------------------------------------------------------------------------
# Cases

def unbundle_argv(targets, flags=(), inp='lib.a'):
    return (['-type=a', '-unbundle', '-targets=' + ','.join(targets), '-input=' + inp] +
            ['-output=o%d.a' % i for i in range(len(targets))] + list(flags))


def archive_cases(f):
    mixed = llvm_ar([('ob.o', f['obj']), ('bb.bc', f['bc']), ('cb.bc', f['ccob']), ('t.txt', f['text']),
                     ('plain.o', f['plain_o']), ('hb.bc', f['hostbc']), ('co.o', f['ccob_obj']),
                     ('om.o', f['obj_omp'])])
    target_sets = [
        [G906], [G90A], [G90A + ':xnack+'], [G1030], [HOST], [OMP906], [SM70],
        [G906, G90A], [HOST, G906, G1030], [G906 + ':xnack+', G906 + ':xnack-'],
        ['hipv4-amdgcn-amd-amdhsa--gfx906'], [G906 + ':sramecc+:xnack-', G1030, SM70],
        ['openmp-x86_64-pc-linux-gnu'],
    ]
    for targets in target_sets:
        for flags in ([], ['-allow-missing-bundles']):
            bd.diff_case('hda mixed %s %s' % (','.join(targets), ' '.join(flags)),
                         [unbundle_argv(targets, flags)], {'lib.a': mixed}, objects='*')
    bd.diff_case('hda hip-openmp-compatible', [unbundle_argv([OMP906, G906], ['-hip-openmp-compatible'])],
                 {'lib.a': mixed})
    bd.diff_case('hda -### host', [unbundle_argv([HOST, G906], ['-###'])], {'lib.a': mixed})
    bd.diff_case('hda -### host, objcopy beside the bundler', [{'argv': unbundle_argv([HOST], ['-###']),
                                                                'prog': bd.PROG2}], {'lib.a': mixed})
    bd.diff_case('hda verbose', [unbundle_argv([G906], ['-verbose'])], {'lib.a': mixed})
    bd.diff_case('hda missing target', [unbundle_argv([G906, 'hip-amdgcn-amd-amdhsa--gfx1100'])], {'lib.a': mixed})
    bd.diff_case('hda missing target allowed', [unbundle_argv([G906, 'hip-amdgcn-amd-amdhsa--gfx1100'],
                                                              ['-allow-missing-bundles'])], {'lib.a': mixed})
    bd.diff_case('hda empty archive', [unbundle_argv([G906])], {'lib.a': b'!<arch>\n'})
    bd.diff_case('hda empty archive allowed', [unbundle_argv([G906, HOST], ['-allow-missing-bundles'])],
                 {'lib.a': b'!<arch>\n'})
    # existing outputs are untouched when a later target finds nothing
    # (LLVM writes o0.a before it fails on the second target; offloadtool writes nothing)
    kept = {'lib.a': mixed, 'o0.a': b'old 0\n', 'o1.a': b'old 1\n'}
    bd.ours_case('hda existing outputs kept on error', [unbundle_argv([G906, 'hip-amdgcn-amd-amdhsa--gfx1100'])],
                 kept, bd.clean_error(kept))
    # member names: paths, dots, colons, long and short, duplicates
    names = ['dir/x.bc', '.bc', 'noext', 'a.b.c', '..', '.', 'x/', 'dir/sub/.hidden', 'n:m.o', 'dir/x.bc', 's.o',
             '/abs/p.o', '../up.o', 'a_very_long_member_name_indeed.bc']
    b = binary_bundle([(G906, b'x' * 5), (HOST, b'host')])
    bd.diff_case('hda member names', [unbundle_argv([G906, HOST])], {'lib.a': gnu_archive([(n, b) for n in names])})
    # a nested archive is not a bundle: skipped, as by LLVM
    nested = gnu_archive([('inner.a', gnu_archive([('a.bc', b)])), ('b.bc', b)])
    bd.diff_case('hda nested archive', [unbundle_argv([G906])], {'lib.a': nested})
    # several entries of one member compatible with one target (file order vs StringMap order)
    many = binary_bundle([(G906 + ':xnack+', b'1'), (G906, b'2'), ('hip-amdgcn-amd-amdhsa--gfx906:sramecc+', b'3')])
    bd.diff_case('hda several entries one target', [unbundle_argv([G906 + ':sramecc+:xnack+'])],
                 {'lib.a': gnu_archive([('m.bc', many)])})
    # symbol tables: host objects bring one, device blobs none
    bd.diff_case('hda host objects only', [unbundle_argv([HOST])],
                 {'lib.a': llvm_ar([('a.o', f['obj']), ('b.o', f['obj_omp'])])}, objects='*')
    # an object too damaged to be one is no bundle for LLVM either
    bd.diff_case('hda truncated object member', [unbundle_argv([G906], ['-allow-missing-bundles'])],
                 {'lib.a': gnu_archive([('o.o', f['obj'][:200]), ('b.bc', f['bc'])])})
    # -check-input-archive
    conflicting = gnu_archive([('bb.bc', f['bc']), ('sub/conflicting_member.bc', f['conflict'])])
    for targets in ([G906], [G906 + ':xnack+']):
        bd.diff_case('hda check-input-archive conflict %s' % targets[0],
                     [unbundle_argv(targets, ['-check-input-archive'])], {'lib.a': conflicting})
        bd.diff_case('hda conflict unchecked %s' % targets[0], [unbundle_argv(targets)], {'lib.a': conflicting})
    bd.diff_case('hda check-input-archive ok', [unbundle_argv([G906 + ':xnack+'], ['-check-input-archive'])],
                 {'lib.a': gnu_archive([('m.bc', f['no_conflict']), ('c.bc', f['ccob'])])})
    # many members: scanned in slices side by side (host objects stripped and
    # compressed members decompressed in every slice); still LLVM's bytes and order
    kinds = [('ob%d.o', f['obj']), ('bb%d.bc', f['bc']), ('cb%d.bc', f['ccob']), ('t%d.txt', f['text']),
             ('pl%d.o', f['plain_o']), ('co%d.o', f['ccob_obj']), ('om%d.o', f['obj_omp'])]
    many_members = gnu_archive([(kinds[i % len(kinds)][0] % i, kinds[i % len(kinds)][1]) for i in range(300)])
    for targets, flags in (([G906, HOST], []), ([G90A + ':xnack+', OMP906, SM70], []), ([G906], ['-verbose']),
                           ([HOST, G1030], ['-###'])):
        bd.diff_case('hda 300 members %s %s' % (','.join(targets), ' '.join(flags)),
                     [unbundle_argv(targets, flags)], {'lib.a': many_members}, objects='*')
    # an archive larger than offloadtool keeps mapped (64 MiB): read with pages let go of behind
    rnd = random.Random(5)
    blob = rnd.randbytes(1 << 20)
    large = []
    for i in range(150):
        entries = [(G906, b'DEVICE CODE\n' + blob[i * 997:i * 997 + 230000 + i]),
                   (G90A, b'DEVICE CODE\n' + blob[i * 1999:i * 1999 + 240000 - i])]
        large.append(('big%d.bc' % i, binary_bundle(entries)))
        if i % 50 == 7:
            large.append(('host%d.o' % i, f['obj']))
    large = gnu_archive(large)
    assert len(large) > 64 << 20
    bd.diff_case('hda larger than 64 MiB', [unbundle_argv([G906, G90A, HOST])], {'lib.a': large}, objects='*')
    if bd.selected('native resident'):
        bd.CASES.append(('native resident memory, archive larger than 64 MiB', lambda: resident_check(large)))
    # validation order around -type=a
    for argv in (['-type=a', '-targets=' + G906, '-input=lib.a', '-output=o.a'],
                 ['-type=a', '-check-input-archive', '-targets=' + G906, '-input=lib.a', '-output=o.a'],
                 ['-type=o', '-unbundle', '-check-input-archive', '-targets=' + G906, '-input=lib.a', '-output=o.a'],
                 ['-type=a', '-unbundle', '-targets=' + G906, '-input=lib.a', '-input=x', '-output=o.a'],
                 ['-type=a', '-unbundle', '-targets=%s,%s' % (G906, G906), '-input=lib.a', '-output=o.a',
                  '-output=p.a'],
                 ['-type=a', '-unbundle', '-targets=%s,%s' % (G906, G906 + ':xnack+'), '-input=lib.a',
                  '-output=o.a', '-output=p.a'],
                 ['-type=a', '-unbundle', '-targets=%s,%s' % (HOST, HOST + '-'), '-input=lib.a', '-output=o.a',
                  '-output=p.a'],
                 ['-type=a', '-unbundle', '-targets=' + G906, '-input=missing.a', '-output=o.a'],
                 ['-type=a', '-list', '-input=lib.a']):
        bd.diff_case('hda validation %s' % ' '.join(argv), [argv], {'lib.a': mixed, 'x': b''})


def malformed_archive_cases(f):
    """Bad archives: offloadtool reports one error naming the file, the member
    where one is known, and the offset; nothing is written. LLVM's wording
    differs (or LLVM accepts the input), so only offloadtool is asserted."""
    b = binary_bundle([(G906, b'x' * 5)])
    good = gnu_archive([('a_long_member_name.bc', b), ('b.bc', b)])
    bad_size = bytearray(gnu_archive([('a.bc', b)]))
    i = bad_size.index(b'644')
    bad_size[i + 8:i + 18] = b'9999'.ljust(10)
    bad_digit = bytearray(bad_size)
    bad_digit[i + 8:i + 18] = b'12x'.ljust(10)
    bad_bundle = gnu_archive([('m.bc', b[:40])])
    bad_ccob = gnu_archive([('c.bc', f['ccob'][:-10])])
    cases = {
        'too small': (b'abc', None),
        'not an archive': (f['plain_o'], None),
        'truncated header': (good[:100], None),
        'size past end': (bytes(bad_size), None),
        'size not decimal': (bytes(bad_digit), None),
        'long name offset out of range': (gnu_archive([('a_long_member_name.bc', b)], long_table=b''), None),
        'long name offset past table': (gnu_archive([('a_long_member_name.bc', b), ('another_long_name.bc', b)],
                                                    long_table=b'ab/\n'), None),
        'long name unterminated': (gnu_archive([('a_long_member_name.bc', b)],
                                               long_table=b'a_long_member_name.bc'), None),
        'thin archive': (b'!<thin>\n' + good[8:], None),
        'truncated bundle in member': (bad_bundle, 'm.bc'),
        'truncated compressed member': (bad_ccob, 'c.bc'),
    }
    # damaged members far apart (in different scan slices): the first one is reported
    good_members = [('m%d.bc' % i, b) for i in range(400)]
    for bad in ([350], [40, 350], [0, 399]):
        members = [(n, d[:40] if int(n[1:-3]) in bad else d) for n, d in good_members]
        cases['damaged members %s' % bad] = (gnu_archive(members), 'm%d.bc' % bad[0])
    for name, (data, member) in cases.items():
        for flags in ([], ['-allow-missing-bundles']):
            bd.ours_case('hda malformed %s %s' % (name, ' '.join(flags)),
                         [unbundle_argv([G906], flags)], {'lib.a': data},
                         bd.clean_error({'lib.a': data}, mention='lib.a' + ('(%s)' % member if member else '')))
            bd.ours_case('hda malformed %s existing output %s' % (name, ' '.join(flags)),
                         [unbundle_argv([G906], flags)], {'lib.a': data, 'o0.a': b'keep me\n'},
                         bd.clean_error({'lib.a': data, 'o0.a': b'keep me\n'}))


# ---------------------------------------------------------------------------
# Native offloadtool unbundle

def run_ours(argv, cwd):
    return harness.outcome([harness.OT] + argv, cwd, text=False)


def resident_check(large):
    """Reading an archive larger than the 64 MiB kept mapped lets go of its pages
    behind every reader: list, check and unbundle stay far below its size."""
    d = harness.Folder(bd.SCRATCH).dir
    lib = harness.write(os.path.join(d, 'lib.a'), large)
    ours = harness.OT
    limit = resident_budget_kib(32)  # the archive is over 64 MiB
    for argv in ([ours, 'list', lib],
                 [ours, 'clang-offload-bundler', '-type=a', '-unbundle', '-check-input-archive',
                  '-targets=%s,%s' % (G906, G90A), '-input=' + lib, '-output=' + lib + '.0',
                  '-output=' + lib + '.1'],
                 [ours, 'unbundle', lib, '--extract-dir', os.path.join(d, 'x'), '--target', G906]):
        rc, peak = peak_resident_kib(argv)
        if rc != 0:
            return '%s: exit %d' % (' '.join(argv[1:3]), rc)
        if peak > limit:
            return '%s: peak resident %d KiB for a %d MiB archive (limit %d KiB)' % (
                ' '.join(argv[1:3]), peak, len(large) >> 20, limit)
    shutil.rmtree(d)
    return None


def native_cases(f):
    mixed = llvm_ar([('ob.o', f['obj']), ('bb.bc', f['bc']), ('cb.bc', f['ccob']), ('t.txt', f['text'])])

    def same_as_personality():
        d = harness.Folder(bd.SCRATCH, files={'lib.a': mixed}).dir
        p = harness.run([bd.LLVM_BUNDLER] + unbundle_argv([G906, HOST]), cwd=d)
        if p.returncode:
            return 'llvm failed: %s' % p.stderr
        rc, out, err = run_ours(['unbundle', 'lib.a', '-t', G906 + '=n0.a', '-t', HOST + '=n1.a'], d)
        if rc:
            return 'native unbundle failed: %s' % err.decode()
        for a, b in (('o0.a', 'n0.a'), ('o1.a', 'n1.a')):
            if read(os.path.join(d, a)) != read(os.path.join(d, b)):
                return '%s differs from LLVM\'s %s' % (b, a)
        shutil.rmtree(d)
        return None
    bd.CASES.append(('native unbundle archive = LLVM', same_as_personality))

    def extract():
        d = harness.Folder(bd.SCRATCH, files={'lib.a': mixed}).dir
        harness.run([bd.LLVM_BUNDLER] + unbundle_argv([G906]), cwd=d, check=True)
        os.makedirs(os.path.join(d, 'ref'))
        harness.run([bd.LLVM_BIN + '/llvm-ar', 'x', '../o0.a'], cwd=os.path.join(d, 'ref'), check=True)
        rc, out, err = run_ours(['unbundle', 'lib.a', '--extract-dir', 'x', '--target', G906, '-v'], d)
        if rc:
            return 'extract failed: %s' % err.decode()
        ref, got = sorted(os.listdir(os.path.join(d, 'ref'))), sorted(os.listdir(os.path.join(d, 'x')))
        if ref != got:
            return 'extracted %s, LLVM\'s device archive holds %s' % (got, ref)
        for n in ref:
            if read(os.path.join(d, 'ref', n)) != read(os.path.join(d, 'x', n)):
                return 'extracted %s differs from the device archive member' % n
        if len(out.splitlines()) != len(ref):
            return '-v printed %r' % out
        # all entries, then a missing target: nothing new is written
        rc, out, err = run_ours(['unbundle', 'lib.a', '--extract-dir', 'all'], d)
        if rc or len(os.listdir(os.path.join(d, 'all'))) != 3 + 3 + 2:
            return 'extract all: rc=%s %s %s' % (rc, os.listdir(os.path.join(d, 'all')), err.decode())
        rc, out, err = run_ours(['unbundle', 'lib.a', '--extract-dir', 'none', '--target', G906, '--target',
                                 'hip-amdgcn-amd-amdhsa--gfx1100'], d)
        if rc != 1 or os.path.exists(os.path.join(d, 'none')):  # the folder it created is removed
            return 'missing target: rc=%s, folder left: %s' % (rc, os.path.exists(os.path.join(d, 'none')))
        # a bundle input: named after the input file
        harness.write(os.path.join(d, 'k.bc'), f['bc'])
        rc, out, err = run_ours(['unbundle', 'k.bc', '--extract-dir', 'b'], d)
        want = sorted(['k-%sk.bc' % G906, 'k-%sk.bc' % G1030, 'k-%s_xnack+k.bc' % G90A])
        if rc or sorted(os.listdir(os.path.join(d, 'b'))) != want:
            return 'bundle extract: %s' % os.listdir(os.path.join(d, 'b'))
        shutil.rmtree(d)
        return None
    bd.CASES.append(('native extract-dir', extract))


def cases(root):
    bd.start(root)
    f = make_inputs()
    archive_cases(f)
    malformed_archive_cases(f)
    if bd.selected('native'):
        native_cases(f)
    bd.run_all()


def main():
    return harness.run_suite('bundler-archive-diff', cases, needs=bd.NEEDS + [bd.LLVM_BIN + '/llvm-ar'], keep=bd.KEEP)


if __name__ == '__main__':
    sys.exit(main())
