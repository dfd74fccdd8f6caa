#!/usr/bin/env python3
"""Damaged archives under `clang-offload-bundler -unbundle -type=a`: where
LLVM 19 fails with a message of its own, ours is that message, as LLVM prints
it, then "; " and our detail (file, what, offset); where LLVM 19 accepts the
file (a member past the end, a thin archive, a damaged member after the first)
ours is our detail alone. The native `offloadtool unbundle` prints our detail
alone in every case. Each case runs LLVM 19's bundler on the same bytes.

Environment: OFFLOADTOOL = the offloadtool binary. Needs /usr/lib/llvm-19/bin
(fails, not skips, without it). Prints "N passed, M failed"; exits 1 on failure.
"""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import OT, LLVM_BUNDLER, check  # noqa: E402

MAGIC = b'!<arch>\n'
TARGET = 'hip-amdgcn-amd-amdhsa--gfx906'


def hdr(name, size, term=b'`\n'):
    """A 60-byte member header; `size` an int or the raw size field."""
    size = str(size).encode() if isinstance(size, int) else size
    return (name.encode().ljust(16) + b'0'.ljust(12) + b'0'.ljust(6) + b'0'.ljust(6) + b'644'.ljust(8) +
            size.ljust(10) + term)


def member(name, data):
    return hdr(name, len(data)) + data + (b'\n' if len(data) % 2 else b'')


OK = member('ok.o/', b'a')
NAMES = member('//', b'averylongname.o/\n')
CASES = {
    'tiny': b'ab',
    'seven-bytes': b'!<arch>',
    'not-an-archive': b'hello world, not an archive at all',
    'truncated-header': MAGIC + b'foo.o/',
    'terminator': MAGIC + hdr('foo.o/', 3, b'XX') + b'abc\n',
    'terminator-escaped': MAGIC + hdr('foo.o/', 3, b'\x01"') + b'abc\n',
    'terminator-backslash': MAGIC + hdr('foo.o/', 3, b'\\\xff') + b'abc\n',
    'terminator-tab-newline': MAGIC + hdr('foo.o/', 3, b'\t\n') + b'abc\n',
    'terminator-symtab': MAGIC + hdr('/', 3, b'XX') + b'abc\n',
    'terminator-no-slash': MAGIC + hdr('foo.o', 3, b'XY') + b'abc\n',
    'terminator-space-in-name': MAGIC + hdr('foo bar.o/', 3, b'XY') + b'abc\n',
    'terminator-long-name': MAGIC + NAMES + hdr('/0', 3, b'XY') + b'abc\n',
    'terminator-long-name-unknown': MAGIC + hdr('/0', 3, b'XY') + b'abc\n',
    'terminator-bsd-name': MAGIC + hdr('#1/4', 8, b'XY') + b'abcdefgh',
    'terminator-bsd-bad-length': MAGIC + hdr('#1/x', 8, b'XY') + b'abcdefgh',
    'size-letters': MAGIC + hdr('foo.o/', b'1x') + b'abc\n',
    'size-negative': MAGIC + hdr('foo.o/', b'-3') + b'abc\n',
    'size-blank': MAGIC + hdr('foo.o/', b'') + b'abc\n',
    'size-leading-space': MAGIC + hdr('foo.o/', b' 3') + b'abc\n',
    'size-hex': MAGIC + hdr('foo.o/', b'0x3') + b'abc\n',
    'bsd-name-too-long': MAGIC + hdr('#1/20', 3) + b'abc\n',
    'bsd-name-length-letters': MAGIC + hdr('#1/x', 3) + b'abc\n',
    'bsd-name-length-space': MAGIC + hdr('#1/ 4', 8) + b'abcdefgh',
    'long-name-without-table': MAGIC + hdr('/12', 3) + b'abc\n',
    'long-name-past-table': MAGIC + NAMES + hdr('/40', 3) + b'abc\n',
    'long-name-unterminated': MAGIC + member('//', b'averylongname\n') + hdr('/0', 3) + b'abc\n',
    'slash-name': MAGIC + hdr('/x', 3) + b'abc\n',
    # LLVM 19 accepts these; ours refuses them with its own detail.
    'member-past-end': MAGIC + hdr('foo.o/', 100) + b'abc\n',
    'thin': b'!<thin>\n',
    'second-member-truncated-header': MAGIC + OK + b'foo.o/',
    'second-member-terminator': MAGIC + OK + hdr('foo.o/', 3, b'XX') + b'abc\n',
}


def run(argv, cwd):
    r = harness.run(argv, cwd=cwd)
    return r.returncode, r.stderr.decode('utf-8', 'backslashreplace')


def body(work):
    bundler = os.path.join(work, 'clang-offload-bundler')
    os.symlink(OT, bundler)
    for name, data in CASES.items():
        path = os.path.join(work, name + '.a')
        with open(path, 'wb') as f:
            f.write(data)
        args = ['-unbundle', '-type=a', '-input=' + name + '.a', '-targets=' + TARGET, '-output=out.a',
                '-allow-missing-bundles']
        lrc, lerr = run([LLVM_BUNDLER] + args, work)
        if os.path.exists(os.path.join(work, 'out.a')):  # LLVM writes it before some of its errors
            os.unlink(os.path.join(work, 'out.a'))
        orc, oerr = run([bundler] + args, work)
        prefix = bundler + ': error: '
        lines = oerr.splitlines()
        check('%s: ours fails with one error line' % name,
              orc == 1 and len(lines) == 1 and lines[0].startswith(prefix), 'exit %d, stderr %r' % (orc, oerr))
        ours = lines[0][len(prefix):] if lines else ''
        detail_re = re.escape(name + '.a') + r': [^;]+'
        if lrc != 0:
            llvm_text = lerr.strip().split(': error: ', 1)[-1]
            check('%s: LLVM 19\'s text first, then ours' % name,
                  re.fullmatch(re.escape(llvm_text) + '; ' + detail_re, ours) is not None,
                  'LLVM: %r\n    ours: %r' % (llvm_text, ours))
        else:
            check('%s: LLVM 19 accepts it, ours gives its own detail alone' % name,
                  re.fullmatch(detail_re, ours) is not None, 'ours: %r' % ours)
        check('%s: no output left behind' % name, not os.path.exists(os.path.join(work, 'out.a')),
              sorted(os.listdir(work)))
        nrc, nerr = run([OT, 'unbundle', '--type', 'a', name + '.a', '-t', TARGET + '=out.a'], work)
        nlines = nerr.splitlines()
        check('%s: the native applet prints its own detail alone' % name,
              nrc == 1 and len(nlines) == 1 and re.fullmatch(
                  re.escape('offloadtool unbundle: error: ') + detail_re, nlines[0]) is not None,
              'exit %d, stderr %r' % (nrc, nerr))
        check('%s: the native applet leaves no output' % name, not os.path.exists(os.path.join(work, 'out.a')))


if __name__ == '__main__':
    sys.exit(harness.run_suite('bundler-archive-errors', body, needs=[LLVM_BUNDLER]))
