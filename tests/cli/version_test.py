#!/usr/bin/env python3
"""`offloadtool --version` and every native applet's --version: one form (the
version, the commit, the linked zstd, zlib and libarchive as they report
themselves, whether --threads is available), the same text everywhere, the
same on every run, and the --threads line telling the truth about
`compress --threads`.

Environment: OFFLOADTOOL = the offloadtool binary; OT_SOURCE_ROOT = the source
tree (when it is a git checkout the commit must be its HEAD's).
Prints "N passed, M failed"; exits 1 on failure.
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import OT, check  # noqa: E402

FORM = [
    r'offloadtool version \d+\.\d+\.\d+',
    r'commit: (?P<commit>[0-9a-f]{12,40}(-dirty)?|unknown)',
    r'zstd: \d+\.\d+\.\d+',
    r'zlib: \d+(\.\d+)+',
    r'libarchive: \d+\.\d+\.\d+( \((\S+/\S+ ?)+\))?',
    r'--threads: (?P<threads>yes \(up to \d+ zstd workers\)|no \(this libzstd has no worker threads\))',
    r'llvm: (?P<llvm>\d+) \((?P<why>.*); supported: 19, 22, 23\)',
]


def run(args, cwd=None):
    r = subprocess.run([OT] + args, cwd=cwd, capture_output=True)
    return r.returncode, r.stdout.decode('utf-8', 'replace'), r.stderr.decode('utf-8', 'replace')


def main():
    return harness.run_suite('version', run_cases)


def run_cases(root):
    rc, out, err = run(['--version'])
    check('--version: exit 0, nothing on stderr', rc == 0 and err == '', 'rc=%d stderr=%r' % (rc, err))
    lines = out.split('\n')
    check('--version: seven lines and a final newline', len(lines) == len(FORM) + 1 and lines[-1] == '', repr(out))
    fields = {}
    for i, pattern in enumerate(FORM):
        line = lines[i] if i < len(lines) else ''
        m = re.fullmatch(pattern, line)
        check('--version line %d has the form %s' % (i + 1, pattern), m is not None, repr(line))
        if m:
            fields.update({k: v for k, v in m.groupdict().items() if v is not None})
    check('--version: the same on a second run', run(['--version']) == (rc, out, err))
    check('--version: the release of OFFLOADTOOL_LLVM (the harness sets it)',
          (fields.get('llvm'), fields.get('why')) == (harness.RELEASE, 'OFFLOADTOOL_LLVM=' + harness.RELEASE), fields)

    # Every native applet (as listed by --help) prints the same text.
    _, help_text, _ = run(['--help'])
    applets = re.findall(r'^  (\S+) ', help_text.split('applets:\n', 1)[-1].split('\n\n', 1)[0], re.M)
    check('--help lists the applets', len(applets) >= 7, help_text)
    for a in applets:
        got = run([a, '--version'])
        check('%s --version: the same text' % a, got == (0, out, ''), 'got rc=%d\n%s%s' % got)

    # The commit is the source tree's HEAD when the binary was built from a checkout.
    src = os.environ.get('OT_SOURCE_ROOT')
    if src and os.path.exists(os.path.join(src, '.git')) and fields.get('commit', 'unknown') != 'unknown':
        head = subprocess.run(['git', '-C', src, 'rev-parse', 'HEAD'], capture_output=True, text=True).stdout.strip()
        commit = fields['commit'].removesuffix('-dirty')
        check('commit: a prefix of HEAD (%s)' % head, head.startswith(commit), fields['commit'])

    # --threads: yes means compress --threads 2 works, no that it fails as it says.
    bundle = os.path.join(root, 'b.bin')
    with open(os.path.join(root, 'dev.o'), 'wb') as f:
        f.write(bytes(range(256)) * 64)
    rc_b = run(['bundle', '-o', bundle, '--type', 'o', '-t', 'host-x86_64-unknown-linux-gnu=/dev/null',
                '-t', 'hip-amdgcn-amd-amdhsa--gfx90a=dev.o'], cwd=root)
    check('a bundle to compress', rc_b[0] == 0, rc_b)
    got = run(['compress', '--threads', '2', bundle, '-o', os.path.join(root, 'b.ccob')])
    if fields.get('threads', '').startswith('yes'):
        check('--threads: yes, and compress --threads 2 works', got == (0, '', ''), got)
    else:
        # (no build of ours links such a libzstd any more: the message is not pinned here)
        check('--threads: no, and compress --threads 2 says why',
              got[0] == 1 and 'this libzstd cannot compress with 2 threads' in got[2], got)


if __name__ == '__main__':
    sys.exit(main())
