#!/usr/bin/env python3
"""The test helper's own behaviour where a mistake would make other suites
pass wrongly: harness.reference_run, which replays LLVM's side of a
differential check from $OT_REFERENCE_MEMO (scripts/test's sanitizer run).

A replay must give exactly what running the tool gives (exit code, output with
the work folder in place, the files it created, changed and removed), and any
difference in the command line, environment, standard input or the folder's
contents must run the tool again.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import check, read, write  # noqa: E402

# A stand-in for a reference tool: it counts its runs in a file outside the
# work folders, prints the folder it runs in, and creates, changes and removes
# files there.
TOOL = r'''
import os, sys
with open(sys.argv[1], 'a') as f:
    f.write('run\n')
os.makedirs('made/deep', exist_ok=True)
with open('made/deep/out', 'wb') as f:
    f.write(b'out of ' + os.getcwd().encode() + b' ' + open('in', 'rb').read())
os.chmod('made/deep/out', 0o751)
with open('in', 'ab') as f:
    f.write(b'+')
if os.path.exists('gone'):
    os.unlink('gone')
os.symlink('made/deep/out', 'link')
sys.stdout.write('cwd ' + os.getcwd() + ' arg ' + sys.argv[2] + '\n')
sys.stderr.write('stdin ' + sys.stdin.read() + '\n')
sys.exit(3)
'''


def cases(root):
    memo = os.path.join(root, 'memo')
    counter = os.path.join(root, 'runs')
    tool = write(os.path.join(root, 'tool.py'), TOOL.encode())
    harness._MEMO = memo  # as $OT_REFERENCE_MEMO would set it

    def runs():
        return read(counter).count(b'run\n') if os.path.exists(counter) else 0

    def one(name, arg='a', stdin=b'x', files=None, path_arg=False):
        """A fresh work folder <root>/<name> (a different path each time, as
        the suites' temporary folders are), the tool run in it through
        reference_run: (result, work folder, its files afterwards)."""
        work = os.path.join(root, name)
        case = os.path.join(work, 'c0')
        os.makedirs(case)
        harness.populate(case, files if files is not None else {'in': b'input', 'gone': b'old'})
        if path_arg:
            arg = os.path.join(case, 'in')

        def go():
            r = harness.run([sys.executable, tool, counter, arg], cwd=case, stdin=stdin)
            return r.returncode, r.stdout, r.stderr
        result = harness.reference_run(go, [tool, arg, stdin], work, [case])
        files_after = {k: (v, os.lstat(os.path.join(case, k)).st_mode & 0o7777)
                       for k, v in harness.tree_files(case, empty_dirs=True).items()}
        return result, case, files_after, os.path.islink(os.path.join(case, 'link'))

    first = one('w1')
    check('the first run runs the tool', runs() == 1, runs())
    check('the tool ran as written (exit 3)', first[0][0] == 3, first[0])
    second = one('w2')
    check('the same command on the same contents in another folder is replayed', runs() == 1, runs())
    check('replay: the exit code', second[0][0] == first[0][0], (second[0], first[0]))
    check('replay: stdout names the new folder, as a run there would',
          second[0][1] == first[0][1].replace(first[1].encode(), second[1].encode()) and second[1].encode() in second[0][1],
          second[0][1])
    check('replay: stderr', second[0][2] == first[0][2], second[0][2])
    expected = {k: (v.replace(first[1].encode(), second[1].encode()), mode) for k, (v, mode) in first[2].items()}
    check('replay: created, changed and removed files, their modes and the folder in their contents',
          second[2] == expected, harness.first_line_difference(repr(sorted(second[2].items())),
                                                               repr(sorted(expected.items()))))
    check('replay: the symlink is a symlink', second[3] and first[3], (first[3], second[3]))

    one('w3', arg='b')
    check('another argument runs the tool', runs() == 2, runs())
    one('w4', stdin=b'y')
    check('other standard input runs the tool', runs() == 3, runs())
    one('w5', files={'in': b'other input', 'gone': b'old'})
    check('other file contents run the tool', runs() == 4, runs())
    one('w6', files={'in': b'input', 'gone': b'old', 'extra': b''})
    check('another file in the folder runs the tool', runs() == 5, runs())
    os.chmod(os.path.join(root, 'tool.py'), 0o600)  # same key: replayed, whatever the file now says
    one('w7')
    check('the first command again is replayed', runs() == 5, runs())

    def timed_out():
        return 'timeout', b'', b''
    work = os.path.join(root, 'w8')
    os.makedirs(os.path.join(work, 'c0'))
    harness.reference_run(timed_out, ['slow'], work, [os.path.join(work, 'c0')])
    calls = []
    harness.reference_run(lambda: calls.append(1) or (0, b'', b''), ['slow'], work, [os.path.join(work, 'c0')])
    check('a timeout is not recorded (the next run runs the tool)', calls == [1], calls)

    one('w10', path_arg=True)
    check('an argument naming a file in the work folder runs the tool once', runs() == 6, runs())
    replayed = one('w11', path_arg=True)
    check('... and is replayed from another work folder', runs() == 6, runs())
    check('... with that folder in its output', replayed[1].encode() + b'/in' in replayed[0][1], replayed[0][1])

    harness._MEMO = None
    one('w9')
    check('without $OT_REFERENCE_MEMO every run runs the tool', runs() == 7, runs())


if __name__ == '__main__':
    sys.exit(harness.run_suite('harness', cases))
