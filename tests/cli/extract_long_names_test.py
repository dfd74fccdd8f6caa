"""`unbundle --extract-dir` with long, valid member names (issue 25, item 3):
the output name holds the member's stem twice, so a name of ~115 characters
used to exceed the 255-byte limit of a file name and fail the whole extraction
("File name too long") where `tar x` extracts the member. Every file is
written, each name fits 255 bytes, keeps the start and end of the member's
stem, the whole entry ID and the extension, and names never collide."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import check  # noqa: E402

HOST = 'host-x86_64-unknown-linux-gnu-'
DEV = 'hipv4-amdgcn-amd-amdhsa--gfx90a'


def cases(root):
    def bundle(tag):
        return harness.binary_bundle([(HOST, b''), (DEV, b'\x7fELF device code ' + tag.encode())])

    # 120, 200 and two 180-character stems that differ only in the middle; ä: a
    # name is never cut inside a UTF-8 character.
    stem120 = 'libkernels_' + 'x' * 109
    stem200 = 'libkernels_' + 'y' * 94 + 'ä' * 5 + 'z' * 85
    mid_a = 'libmid_' + 'm' * 80 + 'A' + 'm' * 88 + '_tail'
    mid_b = 'libmid_' + 'm' * 80 + 'B' + 'm' * 88 + '_tail'
    stems = [stem120, stem200, mid_a, mid_b]
    tar = harness.tar_gnu([(s + '.bc', bundle(s)) for s in stems])
    lib = harness.llvm_ar([(stem120[:118] + '.o', bundle('ar'))], root)

    for container, data, want in (('tar', tar, stems), ('ar', lib, [stem120[:118]])):
        c = harness.Case(root, 'unbundle', {'in.' + container: data})
        rc, out, err = c.run('in.' + container, '--extract-dir', 'out')
        what = '%s members with %s-byte names' % (container, '/'.join(str(len(s.encode()) + 3) for s in want))
        check(what + ': extracted', rc == 0 and err == '', 'rc=%d\n%s' % (rc, err))
        names = sorted(os.listdir(c.path('out'))) if os.path.isdir(c.path('out')) else []
        check(what + ': one file per entry, no two the same', len(names) == 2 * len(want), str(names))
        check(what + ': every name fits 247 bytes (255 with the temporary file\'s dot and suffix)', all(len(n.encode()) <= 247 for n in names),
              str([len(n.encode()) for n in names]))
        for s in want:
            tag = (s if container == 'tar' else 'ar').encode()
            device = [n for n in names if harness.read(c.path('out/' + n)) == b'\x7fELF device code ' + tag]
            full = len(s.encode()) * 2 + len(DEV) + 4
            check(what + ': %d-character stem: its device file is named recognisably (stem start and end, ID%s)'
                  % (len(s), ', shortened' if full > 247 else ''),
                  len(device) == 1 and device[0].startswith(s[:40] + ('-' + DEV if full <= 247 else ''))
                  and DEV in device[0] and s[-20:] in device[0][-40:], str(device))
        check(what + ': nothing left beside the folder', c.new_files() != [] and all(
            f.startswith('out/') for f in c.new_files()), str(c.new_files()))
        if container == 'tar':
            r = harness.run(['tar', 'xf', 'in.tar', '-C', 'out'], cwd=c.dir)
            check('tar x extracts the same members', r.returncode == 0, r.stderr.decode('utf-8', 'replace'))


if __name__ == '__main__':
    sys.exit(harness.run_suite('extract-long-names', cases))
