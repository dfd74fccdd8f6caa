#!/usr/bin/env python3
"""The pip wheels scripts/dist makes beside the SDK tarballs, each checked
against its tarball (the same folder's offloadtool-<version>-<arch>-linux.tar.xz):

- the name (offloadtool-<version>-py3-none-manylinux_2_17_<arch>.whl), WHEEL
  (its tag the name's, Root-Is-Purelib false) and METADATA;
- RECORD, read with csv and checked with hashlib: every other entry listed once
  with its urlsafe-base64 sha256 and size, RECORD's own line without either;
- the layout: .data/scripts/offloadtool the tarball's bin/offloadtool, one
  sh script per LLVM name, .data/data/share/ the tarball's share/, the
  licence the tarball's LICENSE; modes 0755 for the scripts, 0644 otherwise;
- x86_64 only (aarch64 would need qemu under pip): `pip install --no-index`
  into a fresh venv of Debian's python3 (its ensurepip's pip 23), then there
  `offloadtool --version`, a prune of a bundle of tests/data/samples that
  gives the tarball binary's bytes, the LLVM names (clang++-19 -B <venv>/bin
  compiles HIP through them into LLVM 19's object), the man pages and
  completions under <venv>/share (sdk_tarball_test's checks), and
  `pip uninstall -y offloadtool` leaving the venv's files as they were (pip
  leaves empty the folders it made above the leaves, such as share/man/).

Usage: wheel_test.py WHEEL...   Prints "N passed, M failed"; exit 1 on failure.
"""

import base64
import csv
import hashlib
import io
import os
import re
import shutil
import sys
import tarfile
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sdk_tarball_test as sdk  # noqa: E402  (its harness, ALIASES and checks of an unpacked tree)
from sdk_tarball_test import ALIASES, ROOT, harness, run  # noqa: E402

check, check_problem = harness.check, harness.check_problem

DEBIAN_PYTHON = '/usr/bin/python3'  # venv and ensurepip (pyenv's python3 may lack either)


def wheel_name(path):
    m = re.fullmatch(r'offloadtool-(.+)-py3-none-manylinux_2_17_(x86_64|aarch64)\.whl', os.path.basename(path))
    if not m:
        raise SystemExit('wheel_test: %s is not named offloadtool-<version>-py3-none-manylinux_2_17_<arch>.whl' % path)
    return m.group(1), m.group(2)


def record_problems(z, info_dir):
    """RECORD against the entries' bytes (hashlib, not the writer's code)."""
    problems = []
    rows = list(csv.reader(io.StringIO(z.read(info_dir + '/RECORD').decode())))
    listed = [r[0] for r in rows]
    names = [i.filename for i in z.infolist()]
    if sorted(listed) != sorted(names):
        problems.append('RECORD lists %s, the wheel holds %s' % (
            sorted(set(listed) ^ set(names)) or 'some twice', 'the others'))
    for r in rows:
        if len(r) != 3:
            problems.append('RECORD row %s has %d fields' % (r, len(r)))
            continue
        name, digest, size = r
        if name == info_dir + '/RECORD':
            if digest or size:
                problems.append('RECORD\'s own row has a hash or size: %s' % r)
            continue
        if name not in names:
            continue
        data = z.read(name)
        want = 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip('=')
        if digest != want or size != str(len(data)):
            problems.append('%s: RECORD says %s,%s; the entry is %s,%d' % (name, digest, size, want, len(data)))
    return '\n'.join(problems)


def metadata_problems(z, info_dir, version, arch):
    problems = []
    wheel = z.read(info_dir + '/WHEEL').decode()
    for line in ('Wheel-Version: 1.0', 'Root-Is-Purelib: false', 'Tag: py3-none-manylinux_2_17_' + arch):
        if line not in wheel.splitlines():
            problems.append('WHEEL lacks "%s":\n%s' % (line, wheel))
    if not re.search(r'^Generator: \S', wheel, re.M):
        problems.append('WHEEL names no Generator')
    meta = z.read(info_dir + '/METADATA').decode().split('\n\n')[0].splitlines()
    for line in ('Metadata-Version: 2.1', 'Name: offloadtool', 'Version: ' + version,
                 'License: Apache-2.0 WITH LLVM-exception'):
        if line not in meta:
            problems.append('METADATA lacks "%s"' % line)
    if not any(m.startswith('Summary: ') for m in meta):
        problems.append('METADATA has no Summary')
    return '\n'.join(problems)


def layout_problems(z, top, version):
    """The wheel's files are the tarball's (unpacked at `top`), where pip puts them."""
    data_dir, info_dir = 'offloadtool-%s.data' % version, 'offloadtool-%s.dist-info' % version
    want = {data_dir + '/scripts/offloadtool': harness.read(os.path.join(top, 'bin', 'offloadtool')),
            info_dir + '/LICENSE': harness.read(os.path.join(top, 'LICENSE'))}
    for rel, data in harness.tree_files(os.path.join(top, 'share')).items():
        want['%s/data/share/%s' % (data_dir, rel)] = data
    scripts = {data_dir + '/scripts/' + a for a in ALIASES}
    meta = {info_dir + '/' + n for n in ('METADATA', 'WHEEL', 'RECORD')}
    problems = []
    names = {i.filename for i in z.infolist()}
    for n in sorted(set(want) | scripts | meta):
        if n not in names:
            problems.append('missing ' + n)
    if names - set(want) - scripts - meta:
        problems.append('unexpected entries: %s' % sorted(names - set(want) - scripts - meta))
    for n in sorted(set(want) & names):
        if z.read(n) != want[n]:
            problems.append('%s is not the tarball\'s file' % n)
    for n in sorted(scripts & names):
        text = z.read(n).decode()
        alias = n.rsplit('/', 1)[1]
        if not text.startswith('#!/bin/sh\n') or ' %s "$@"' % alias not in text:
            problems.append('%s does not run offloadtool %s:\n%s' % (n, alias, text))
    executables = scripts | {data_dir + '/scripts/offloadtool'}
    for i in z.infolist():
        mode = 0o100755 if i.filename in executables else 0o100644
        if i.external_attr >> 16 != mode or i.create_system != 3:
            problems.append('%s: mode %o (system %d), not %o' % (i.filename, i.external_attr >> 16,
                                                                  i.create_system, mode))
    if len({i.date_time for i in z.infolist()}) != 1:
        problems.append('the entries\' times differ (they are the commit\'s)')
    return '\n'.join(problems)


def venv_files(venv):
    """The venv's files, but for the byte code Python writes as pip runs."""
    return {f for f in harness.tree_files(venv) if not f.endswith('.pyc')}


def prune_problems(ours, theirs, work):
    """A prune of a bundle of the committed samples, by the installed binary
    and by the tarball's: exit 0, the same bytes, only gfx90a left."""
    s = os.path.join(ROOT, 'tests', 'data', 'samples')
    d = os.path.join(work, 'prune')
    os.makedirs(d)
    r = run([theirs, 'bundle', '--type', 'bc', '-o', 'app.bc', '-t', 'hip-amdgcn-amd-amdhsa--gfx906=%s/gfx906.bc' % s,
             '-t', 'hip-amdgcn-amd-amdhsa--gfx90a:xnack+=%s/gfx90a.bc' % s], cwd=d)
    if r.returncode != 0:
        return 'bundle: exit %d: %s' % (r.returncode, r.stderr)
    outs = {}
    for tag, ot in (('wheel', ours), ('tarball', theirs)):
        r = run([ot, 'prune', '--keep', 'gfx90a', 'app.bc', '-o', tag + '.bc'], cwd=d)
        if r.returncode != 0:
            return '%s prune: exit %d: %s' % (tag, r.returncode, r.stderr)
        outs[tag] = harness.read(os.path.join(d, tag + '.bc'))
    if outs['wheel'] != outs['tarball']:
        return 'the installed binary\'s prune differs from the tarball binary\'s'
    r = run([ours, 'list', 'wheel.bc'], cwd=d)
    if r.returncode != 0 or 'gfx90a' not in r.stdout or 'gfx906' in r.stdout:
        return 'the pruned bundle lists:\n%s%s' % (r.stdout, r.stderr)
    return None


def pip_install_checks(wheel, top, work):
    venv = os.path.join(work, 'venv')
    r = run([DEBIAN_PYTHON, '-m', 'venv', venv])
    if not check('x86_64: a fresh venv of %s' % DEBIAN_PYTHON, r.returncode == 0, r.stderr):
        return
    pip = [os.path.join(venv, 'bin', 'python'), '-m', 'pip', '--disable-pip-version-check', '--no-input']
    before = venv_files(venv)
    r = run(pip + ['install', '--no-index', '--no-cache-dir', os.path.abspath(wheel)])
    if not check('x86_64: pip install --no-index', r.returncode == 0, r.stdout + r.stderr):
        return
    ot = os.path.join(venv, 'bin', 'offloadtool')
    installed = sorted(venv_files(venv) - before)
    check('x86_64: installed bin/offloadtool, executable, the tarball\'s binary',
          os.access(ot, os.X_OK) and harness.read(ot) == harness.read(os.path.join(top, 'bin', 'offloadtool')),
          'installed: %s' % installed)
    check_problem('x86_64: the installed offloadtool --version', sdk.version_problems(ot))
    check_problem('x86_64: a prune by the installed offloadtool',
                  prune_problems(ot, os.path.join(top, 'bin', 'offloadtool'), work))
    for a in ALIASES:
        r = run([os.path.join(venv, 'bin', a), '--version'])
        check('x86_64: the installed %s is that LLVM tool' % a,
              r.returncode == 0 and ('as LLVM' in r.stdout), 'exit %s\n%s%s' % (r.returncode, r.stdout, r.stderr))
    check_problem('x86_64: clang++-19 -B <venv>/bin compiles HIP through the installed LLVM names',
                  sdk.hip_driver_problems(venv, work))
    check_problem('x86_64: man pages under <venv>/share render, completions load', sdk.docs_problems(ot, venv))
    r = run(pip + ['uninstall', '-y', 'offloadtool'])
    check('x86_64: pip uninstall -y offloadtool', r.returncode == 0, r.stdout + r.stderr)
    after = venv_files(venv)
    check('x86_64: the uninstall leaves the venv\'s files as they were before the install', after == before,
          'left: %s\nremoved: %s' % (sorted(after - before), sorted(before - after)))


def test_wheel(path):
    version, arch = wheel_name(path)
    tarball = os.path.join(os.path.dirname(path), 'offloadtool-%s-%s-linux.tar.xz' % (version, arch))
    if not check('%s: its tarball is beside it' % arch, os.path.exists(tarball), 'missing ' + tarball):
        return
    work = tempfile.mkdtemp(prefix='wheel-')
    try:
        with tarfile.open(tarball) as t:
            t.extractall(work)
        top = os.path.join(work, 'offloadtool-%s-%s-linux' % (version, arch))
        info_dir = 'offloadtool-%s.dist-info' % version
        with zipfile.ZipFile(path) as z:
            check('%s: the zip reads back (CRCs)' % arch, z.testzip() is None, z.testzip())
            check_problem('%s: RECORD (hashlib, sizes)' % arch, record_problems(z, info_dir))
            check_problem('%s: WHEEL and METADATA' % arch, metadata_problems(z, info_dir, version, arch))
            check_problem('%s: the layout (the tarball\'s files)' % arch, layout_problems(z, top, version))
        if arch == 'x86_64':
            pip_install_checks(path, top, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    missing = [t for t in (DEBIAN_PYTHON, os.path.join(sdk.LLVM_BIN, 'clang++'), 'man', 'bash', 'zsh', 'fish')
               if not (os.path.exists(t) if os.sep in t else shutil.which(t))]
    check('the tools the checks need are installed', not missing, 'missing: %s' % ', '.join(missing))
    for path in sys.argv[1:]:
        test_wheel(path)
    return harness.summary()


if __name__ == '__main__':
    sys.exit(main())
