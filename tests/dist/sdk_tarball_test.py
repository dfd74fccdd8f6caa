#!/usr/bin/env python3
"""The SDK tarballs scripts/dist makes, each tested after unpacking into an
empty folder, as a user gets them:

- the layout: bin/offloadtool (static, stripped, of the tarball's architecture;
  x86_64 within the 8 MB budget), the four LLVM-name symlinks to it, the man
  pages (offloadtool-json(7) too) and completions scripts/gen-docs makes, LICENSE
  and README; nothing else;
- `--version` names the commit, the linked libraries, and that --threads works;
- scripts/quickstart with the unpacked binary;
- x86_64: clang++-19 -B <unpacked>/bin compiles a HIP program through the
  tarball's clang-offload-bundler (the driver's -### says so) into an object
  byte-identical to the one LLVM 19's bundler gives;
- aarch64: the same binary run under qemu-aarch64 (every name, through a
  launcher that passes argv[0] on), for quickstart and the CLI suites listed in
  QEMU_SUITES;
- each man page renders with `man -l` without a warning, and the completions
  load in bash, zsh and fish (tests/cli/docs_test.py's checks, on the
  unpacked share/ folder).

Usage: sdk_tarball_test.py TARBALL...   Prints "N passed, M failed"; exit 1 on failure.
Needs clang++-19, qemu-aarch64, man, bash, zsh and fish (missing is a failure).
"""

import os
import re
import shutil
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'lib'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'interop'))
import harness  # noqa: E402
from harness import LLVM_BIN  # noqa: E402
import hip_driver_test  # noqa: E402  (the HIP sources that need no ROCm)

ALIASES = ['clang-offload-bundler', 'clang-offload-packager', 'llvm-offload-binary', 'clang-offload-wrapper',
           'llvm-offload-wrapper']
SIZE_BUDGET = 8_000_000  # bytes, stripped static x86_64 binary
FILE_ARCH = {'x86_64': 'x86-64', 'aarch64': 'ARM aarch64'}
# CLI suites run against the aarch64 binary under qemu (LLVM's reference tools
# run natively beside it).
QEMU_SUITES = ['tests/cli/bundler_native_test.py', 'tests/cli/package_native_test.py',
               'tests/golden/packager_golden_test.py', 'tests/cli/compat_test.py']

check = harness.check_problem


def run(argv, **kw):
    return harness.run(argv, text=True, **kw)


def tarball_arch(path):
    m = re.fullmatch(r'offloadtool-(.+)-(x86_64|aarch64)-linux\.tar\.xz', os.path.basename(path))
    if not m:
        raise SystemExit('sdk_tarball_test: %s is not named offloadtool-<version>-<arch>-linux.tar.xz' % path)
    return m.group(1), m.group(2)


def layout_problems(top, version, arch):
    problems = []
    bin_dir = os.path.join(top, 'bin')
    found = set()
    for d, dirs, files in os.walk(top):
        for n in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            found.add(os.path.relpath(os.path.join(d, n), top))
    expected = {'bin/offloadtool', 'LICENSE', 'README'} | {'bin/' + a for a in ALIASES}
    for f in sorted(expected - found):
        problems.append('missing ' + f)
    for a in ALIASES:
        p = os.path.join(bin_dir, a)
        if os.path.islink(p) and os.readlink(p) != 'offloadtool':
            problems.append('bin/%s -> %s, not offloadtool' % (a, os.readlink(p)))
    shares = {'share/bash-completion/completions/offloadtool', 'share/zsh/site-functions/_offloadtool',
              'share/fish/vendor_completions.d/offloadtool.fish', 'share/man/man1/offloadtool.1'}
    for f in sorted(shares - found):
        problems.append('missing ' + f)
    other = {f for f in found - expected - shares
             if not (f.startswith('share/man/man1/') and f.endswith('.1'))
             and f != 'share/man/man7/offloadtool-json.7'
             and not f.startswith(('share/bash-completion/completions/', 'share/zsh/site-functions/',
                                   'share/fish/vendor_completions.d/'))}
    if other:
        problems.append('unexpected files: %s' % sorted(other))
    binary = os.path.join(bin_dir, 'offloadtool')
    if os.path.exists(binary):
        desc = run(['file', '-b', binary]).stdout
        for want in ('statically linked', 'stripped', FILE_ARCH[arch]):
            if want not in desc:
                problems.append('bin/offloadtool is not %s: %s' % (want, desc.strip()))
        if 'not stripped' in desc:
            problems.append('bin/offloadtool is not stripped')
        size = os.path.getsize(binary)
        print('     bin/offloadtool (%s): %d bytes' % (arch, size))
        if arch == 'x86_64' and size > SIZE_BUDGET:
            problems.append('bin/offloadtool is %d bytes, over the %d budget' % (size, SIZE_BUDGET))
    for f in ('LICENSE', 'README'):
        p = os.path.join(top, f)
        if os.path.exists(p) and os.path.getsize(p) == 0:
            problems.append(f + ' is empty')
    readme = os.path.join(top, 'README')
    if os.path.exists(readme):
        text = open(readme).read()
        if version not in text or arch not in text:
            problems.append('README does not name version %s and architecture %s' % (version, arch))
    return '\n'.join(problems)


def launchers(top, arch, work):
    """A folder whose offloadtool and LLVM names run the tarball's binary: the
    unpacked bin/ itself for x86_64; for aarch64, scripts that start it under
    qemu-aarch64 with the name they were called by as argv[0]."""
    if arch == 'x86_64':
        return os.path.join(top, 'bin')
    qemu = shutil.which('qemu-aarch64')
    if not qemu:
        raise RuntimeError('qemu-aarch64 is missing (Debian package qemu-user)')
    d = os.path.join(work, 'qemu-bin')
    os.makedirs(d)
    real = os.path.join(top, 'bin', 'offloadtool')
    for name in ['offloadtool'] + ALIASES:
        p = os.path.join(d, name)
        with open(p, 'w') as f:
            f.write('#!/bin/sh\nexec %s -0 "$0" %s "$@"\n' % (qemu, real))
        os.chmod(p, 0o755)
    return d


def version_problems(ot):
    r = run([ot, '--version'])
    if r.returncode != 0:
        return 'exit %d: %s' % (r.returncode, r.stderr)
    text = r.stdout.lower()
    missing = [w for w in ('offloadtool', 'commit', 'zstd', 'zlib', 'libarchive', 'threads') if w not in text]
    if missing:
        return 'does not mention %s:\n%s' % (missing, r.stdout)
    if re.search(r'threads[^\n]*\b(no|not|unavailable)\b', text):
        return '--threads is not available:\n' + r.stdout
    return None


def quickstart_problems(ot):
    r = run([os.path.join(ROOT, 'scripts', 'quickstart'), ot])
    return None if r.returncode == 0 else 'exit %d\n%s%s' % (r.returncode, r.stdout[-1500:], r.stderr[-1500:])


def hip_driver_problems(top, work):
    """clang++-19 -B <unpacked>/bin runs the tarball's bundler, and the object
    equals the one made with LLVM 19's bundler (a fixed -cuid keeps the device
    code independent of the -B path)."""
    clang = os.path.join(LLVM_BIN, 'clang++')
    if not os.path.exists(clang):
        return 'missing ' + clang
    d = os.path.join(work, 'hip')
    os.makedirs(d)
    with open(os.path.join(d, 'k.hip'), 'wb') as f:
        f.write(hip_driver_test.KERNEL)
    llvm_b = os.path.join(work, 'llvm-bin')
    os.makedirs(llvm_b)
    os.symlink(os.path.join(LLVM_BIN, 'clang-offload-bundler'), os.path.join(llvm_b, 'clang-offload-bundler'))
    ours_b = os.path.join(top, 'bin')
    base = [clang] + hip_driver_test.HIP + ['-cuid=sdk', '-c', 'k.hip']
    r = run(base + ['-o', 'x.o', '-B', ours_b, '-###'], cwd=d)
    want = '"%s/clang-offload-bundler"' % ours_b
    if want not in r.stderr:
        return 'the driver does not run %s:\n%s' % (want, r.stderr[-2000:])
    objs = {}
    for tag, b in (('ours', ours_b), ('llvm', llvm_b)):
        r = run(base + ['-o', tag + '.o', '-B', b], cwd=d)
        if r.returncode != 0:
            return 'clang++-19 -B %s failed: %s' % (b, r.stderr[-2000:])
        objs[tag] = open(os.path.join(d, tag + '.o'), 'rb').read()
    if objs['ours'] != objs['llvm']:
        return 'the object differs from the one LLVM 19\'s bundler gives (%d vs %d bytes)' % (
            len(objs['ours']), len(objs['llvm']))
    for gpu in ('gfx906', 'gfx90a', 'gfx1030'):  # the object's .hip_fatbin holds each GPU's code
        r = run([os.path.join(ours_b, 'offloadtool'), 'compat', 'select', os.path.join(d, 'ours.o'), '--target', gpu])
        if r.returncode != 0 or not r.stdout.startswith('selected hipv4-amdgcn-amd-amdhsa--%s ' % gpu):
            return 'offloadtool compat select --target %s of the object: exit %d\n%s%s' % (
                gpu, r.returncode, r.stdout, r.stderr)
    return None


def suite_problems(ot, suite):
    env = dict(os.environ, OFFLOADTOOL=ot, OT_SOURCE_ROOT=ROOT, OT_TEST_DATA=os.path.join(ROOT, 'tests', 'data'))
    r = run([sys.executable, os.path.join(ROOT, suite)], env=env, cwd=ROOT)
    last = (r.stdout.strip().splitlines() or [''])[-1]
    print('     %s under qemu: %s' % (suite, last))
    return None if r.returncode == 0 else 'exit %d\n%s%s' % (r.returncode, r.stdout[-3000:], r.stderr[-1500:])


def docs_problems(ot, top):
    """tests/cli/docs_test.py's checks on the unpacked share/ (which must equal
    what the binary generates)."""
    env = dict(os.environ, OFFLOADTOOL=ot, OT_SOURCE_ROOT=ROOT, OT_DOCS_TREE=top)
    r = run([sys.executable, os.path.join(ROOT, 'tests', 'cli', 'docs_test.py')], env=env)
    last = (r.stdout.strip().splitlines() or [''])[-1]
    print('     docs checks on the unpacked tree: %s' % last)
    return None if r.returncode == 0 else 'exit %d\n%s%s' % (r.returncode, r.stdout[-3000:], r.stderr[-1500:])


def test_tarball(path):
    version, arch = tarball_arch(path)
    work = tempfile.mkdtemp(prefix='sdk-')
    try:
        unpack = os.path.join(work, 'unpacked')
        os.makedirs(unpack)
        r = run(['tar', '-xf', os.path.abspath(path), '-C', unpack])
        check('%s: unpacks' % arch, r.stderr if r.returncode else None)
        tops = os.listdir(unpack)
        name = 'offloadtool-%s-%s-linux' % (version, arch)
        check('%s: one top folder %s' % (arch, name), None if tops == [name] else 'found %s' % tops)
        if tops != [name]:
            return
        top = os.path.join(unpack, name)
        check('%s: layout' % arch, layout_problems(top, version, arch))
        bindir = launchers(top, arch, work)
        ot = os.path.join(bindir, 'offloadtool')
        check('%s: --version' % arch, version_problems(ot))
        check('%s: quickstart' % arch, quickstart_problems(ot))
        if arch == 'x86_64':
            check('%s: clang++-19 -B bin compiles HIP with it' % arch, hip_driver_problems(top, work))
        else:
            for suite in QEMU_SUITES:
                check('%s: %s under qemu-aarch64' % (arch, suite), suite_problems(ot, suite))
        check('%s: man pages render, completions load' % arch, docs_problems(ot, top))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    # The binary under test is each tarball's own, so not harness.run_suite
    # (which wants $OFFLOADTOOL); its missing-tool rule all the same.
    missing = [t for t in (os.path.join(LLVM_BIN, 'clang++'), 'qemu-aarch64', 'man', 'bash', 'zsh', 'fish')
               if not (os.path.exists(t) if os.sep in t else shutil.which(t))]
    check('the tools the checks need are installed', missing and 'missing: %s' % ', '.join(missing))
    for path in sys.argv[1:]:
        test_tarball(path)
    return harness.summary()


if __name__ == '__main__':
    sys.exit(main())
