#!/usr/bin/env python3
"""Golden test: the clang-offload-packager outputs saved in
$OT_TEST_DATA/reference/golden (made by LLVM 19.1.7, commands in its
README.txt) are reproduced byte for byte by offloadtool, through the
clang-offload-packager personality and through `offloadtool package create`;
both read them back (extraction of every image equals the inputs).

Environment: OFFLOADTOOL = the offloadtool binary, OT_TEST_DATA = tests/data (LLVM's reference outputs).
Prints "N passed, M failed"; exits 1 on failure.
"""

import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import GOLDEN, OT, check, golden, read, run  # noqa: E402


def main():
    return harness.run_suite('packager-golden', cases, needs=[GOLDEN])


def cases(tmp):
    for n in ('tgt1', 'tgt2', 'host.i'):
        shutil.copy(os.path.join(GOLDEN, n), tmp)
    os.symlink(OT, os.path.join(tmp, 'clang-offload-packager'))
    # The packager lines of README.txt, as run there.
    commands = {}
    with open(os.path.join(GOLDEN, 'README.txt')) as f:
        for line in f:
            words = line.split()
            if words and words[0].endswith('/clang-offload-packager'):
                commands[words[words.index('-o') + 1]] = words[1:]
    check('README.txt names the packager goldens', sorted(commands) == ['19-packager-1.bin', '19-packager-3.bin'],
          sorted(commands))
    for name, args in sorted(commands.items()):
        want = golden(name)
        out = 'ours-' + name
        argv = [a if a != name else out for a in args]
        r = run(['./clang-offload-packager'] + argv, cwd=tmp)
        got = read(os.path.join(tmp, out)) if r.returncode == 0 else None
        check(name + ' (personality)', r.returncode == 0 and not r.stderr and got == want, r.stderr)

        native = ['create', '-o', 'native-' + name] + [x for a in argv if a.startswith('--image=')
                                                       for x in ('--image', a[len('--image='):])]
        r = run([OT, 'package'] + native, cwd=tmp)
        got = read(os.path.join(tmp, 'native-' + name)) if r.returncode == 0 else None
        check(name + ' (offloadtool package create)', r.returncode == 0 and not r.stderr and got == want,
              r.stderr)

        # Reading back: every image, by its file= name, equals its input.
        for a in argv:
            if not a.startswith('--image='):
                continue
            keys = dict(kv.split('=', 1) for kv in a[len('--image='):].split(',') if '=' in kv)
            sel = 'file=back-%s,triple=%s' % (keys['file'], keys['triple'])
            if 'arch' in keys:
                sel += ',arch=' + keys['arch']
            r = run(['./clang-offload-packager', os.path.join(GOLDEN, name), '--image=' + sel], cwd=tmp)
            ok = r.returncode == 0 and read(os.path.join(tmp, 'back-' + keys['file'])) == golden(keys['file'])
            check('%s: extract %s' % (name, keys['file']), ok, r.stderr)


if __name__ == '__main__':
    sys.exit(main())
