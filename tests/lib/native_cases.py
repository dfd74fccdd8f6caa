"""Shared pieces of the tests that run offloadtool's native applets: one case
per behaviour with the exact exit code, stdout and stderr, and the files left
behind (a failing case must leave no output and no temporary file).

Environment: OFFLOADTOOL = the offloadtool binary, OT_TEST_DATA = tests/data (LLVM's reference outputs).
"""

import os
import shutil
import subprocess
import tempfile

OT = os.environ.get('OFFLOADTOOL')
DATA = os.environ.get('OT_TEST_DATA', os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data'))
GOLDEN = os.path.join(DATA, 'reference', 'golden')
LLVM_BIN = '/usr/lib/llvm-19/bin'

passed = failed = 0


def check(name, ok, detail=''):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print('FAIL', name)
        if detail:
            print('    ' + str(detail)[:2000])


def golden(name):
    with open(os.path.join(GOLDEN, name), 'rb') as f:
        return f.read()


def summary():
    """Prints "N passed, M failed"; the exit code for the test."""
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


def peak_resident_kib(argv, cwd=None):
    """Run argv (in `cwd`); its exit code and its peak resident set (KiB) as GNU
    time sees it (from this process a child's ru_maxrss would include this
    process's own memory, which a fork copies)."""
    with tempfile.NamedTemporaryFile() as t:
        p = subprocess.run(['/usr/bin/time', '-f', '%M', '-o', t.name] + argv, cwd=cwd, capture_output=True)
        lines = open(t.name).read().split()
    return p.returncode, int(lines[-1]) if lines else -1


def resident_budget_kib(mib):
    """The peak resident set (KiB) an offloadtool run may reach when it should
    stay within `mib` MiB of what the binary needs to start; AddressSanitizer
    keeps freed memory in quarantine and shadows the heap, so there it is 3 x."""
    rc, base = peak_resident_kib([OT, '--version'])
    if rc != 0:
        raise RuntimeError('offloadtool --version: exit %d' % rc)
    with open(OT, 'rb') as fh:
        sanitized = b'__asan_init' in fh.read()
    return base + ((3 * mib if sanitized else mib) << 10)


def run_suite(name, body, needs=()):
    """Runs `body(root)` in a fresh temporary folder (removed afterwards) and
    returns the test's exit code. Fails, never skips, when OFFLOADTOOL is unset
    or a tool in `needs` is missing."""
    missing = [] if OT else ['OFFLOADTOOL (the offloadtool binary)']
    missing += [t for t in needs if not os.access(t, os.X_OK)]
    if missing:
        print('missing: %s' % ', '.join(missing))
        print('0 passed, 1 failed')
        return 1
    root = tempfile.mkdtemp(prefix=name + '-')
    try:
        body(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return summary()


class Case:
    """A fresh folder holding `files`, in which `offloadtool <applet> ...` runs."""

    def __init__(self, root, applet, files):
        self.applet = applet
        self.dir = tempfile.mkdtemp(dir=root)
        for n, data in files.items():
            p = os.path.join(self.dir, n)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, 'wb') as f:
                f.write(data)
        self.before = set(files)

    def run(self, *args, stdin=b''):
        r = subprocess.run([OT, self.applet] + list(args), cwd=self.dir, input=stdin, capture_output=True)
        return r.returncode, r.stdout.decode('utf-8', 'replace'), r.stderr.decode('utf-8', 'replace')

    def path(self, name):
        return os.path.join(self.dir, name)

    def files(self):
        out = {}
        for dirpath, _, names in os.walk(self.dir):
            for n in names:
                p = os.path.join(dirpath, n)
                with open(p, 'rb') as f:
                    out[os.path.relpath(p, self.dir)] = f.read()
        return out

    def new_files(self):
        return sorted(set(self.files()) - self.before)


def expect(name, case, args, rc, out=None, err='', files=None, stdin=b''):
    """Runs the case's applet with `args`; checks the exit code, stdout (unless
    None), stderr and, when given, the names of the files it created."""
    got = case.run(*args, stdin=stdin)
    ok = got[0] == rc and (out is None or got[1] == out) and got[2] == err
    if files is not None:
        ok = ok and case.new_files() == sorted(files)
    check(name, ok, 'got rc=%d\n--- stdout\n%s--- stderr\n%s--- new files %s' % (got[0], got[1], got[2], case.new_files()))
    return got
