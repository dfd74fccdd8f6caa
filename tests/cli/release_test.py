#!/usr/bin/env python3
"""Which LLVM release offloadtool impersonates, and why (src/cli/release.h):
a versioned name first, then OFFLOADTOOL_LLVM, then the LLVM tool that started
it, then the build's default (meson option llvm_release, $OT_BUILD_LLVM_RELEASE
here). Unsupported releases are one error line, exit 1. Under an LLVM name
--version prints that release's LLVM text, then one line naming offloadtool.

The LLVM texts are compared with the real tools' --version (LLVM 19 and 22).
The parent rule is checked with real clang 19 and 22 drivers in
tests/interop/hip_driver_test.py; here with stand-ins: a copy of a real LLVM
executable path cannot be faked, so a small program in an llvm-N folder runs
offloadtool (its name and folder are the signs the rule reads).
"""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import OT, check  # noqa: E402

DEFAULT = os.environ.get('OT_BUILD_LLVM_RELEASE', '23')
LLVM = {'19': '/usr/lib/llvm-19/bin', '22': '/usr/lib/llvm-22/bin',
        '23': os.path.join(harness.LLVM23_CACHE, 'llvm-23', 'bin')}  # sid's, in scripts/fetch-llvm23's chroot


def llvm_line(out):
    m = re.search(r'^llvm: (\d+) \((.*); supported: 19, 22, 23\)$', out, re.M)
    return (m.group(1), m.group(2)) if m else None


def cases(root):
    env_unset = {'OFFLOADTOOL_LLVM': None}
    f = harness.Folder(root)

    r = harness.run([OT, '--version'], env=env_unset, text=True)
    check('no name, no OFFLOADTOOL_LLVM, started by python: the build\'s default',
          llvm_line(r.stdout) == (DEFAULT, "the build's default"), r.stdout)
    for v in ('19', '22', '23'):
        r = harness.run([OT, '--version'], env={'OFFLOADTOOL_LLVM': v}, text=True)
        check('OFFLOADTOOL_LLVM=%s' % v, llvm_line(r.stdout) == (v, 'OFFLOADTOOL_LLVM=' + v), r.stdout)
    r = harness.run([OT, '--version'], env={'OFFLOADTOOL_LLVM': ''}, text=True)
    check('OFFLOADTOOL_LLVM empty: as unset', llvm_line(r.stdout) == (DEFAULT, "the build's default"), r.stdout)
    for bad in ('20', '14', 'x', '22.1', '019x'):
        r = harness.run([OT, 'list', '--help'], env={'OFFLOADTOOL_LLVM': bad}, text=True)
        check('OFFLOADTOOL_LLVM=%s: one error line, exit 1' % bad,
              (r.returncode, r.stdout, r.stderr) ==
              (1, '', 'offloadtool: error: OFFLOADTOOL_LLVM=%s: not a supported LLVM release (supported: 19, 22, 23)\n'
               % bad), (r.returncode, r.stdout, r.stderr))

    # Versioned names, and the LLVM text of --version in each release.
    names = {
        'clang-offload-bundler': {'19': 'Debian clang-offload-bundler version 19.1.7 (3~deb12u1)\n',
                                  '22': 'Debian clang-offload-bundler version 22.1.8 (1~deb12u1)\n',
                                  '23': 'Debian clang-offload-bundler version 23.1.4 (2)\n'},
        'llvm-offload-binary': {'19': 'Debian clang-offload-packager version 19.1.7 (3~deb12u1)\n',
                                '22': 'Debian LLVM version 22.1.8\n  Optimized build.\n',
                                '23': 'Debian LLVM version 23.1.4\n  Optimized build.\n'},
    }
    for name, texts in names.items():
        for v, text in texts.items():
            real = os.path.join(LLVM[v], 'clang-offload-packager' if name != 'clang-offload-bundler' and v == '19'
                                else name)
            got_real = harness.run([real, '--version'], text=True, cwd='/tmp')  # (23's chroot shares /tmp)
            check('LLVM %s %s --version is the text expected here' % (v, name), got_real.stdout == text,
                  got_real.stdout)
            for link in ('%s-%s' % (name, v), 'x86_64-linux-gnu-%s-%s' % (name, v), '%s-%s.exe' % (name, v)):
                os.symlink(OT, f.path(link))
                # The name wins over OFFLOADTOOL_LLVM.
                other = '19' if v == '22' else '22'
                r = harness.run([f.path(link), '--version'], env={'OFFLOADTOOL_LLVM': other}, text=True)
                check('%s --version: LLVM %s\'s text, then offloadtool\'s line' % (link, v),
                      r.returncode == 0 and r.stdout == text + 'offloadtool 0.1.0 as LLVM %s (the name %s)\n'
                      % (v, link.removesuffix('.exe')), r.stdout + r.stderr)
        os.symlink(OT, f.path(name))
        r = harness.run([f.path(name), '--version'], env=env_unset, text=True)
        check('%s (no version): the build\'s default' % name,
              r.stdout == names[name][DEFAULT] + "offloadtool 0.1.0 as LLVM %s (the build's default)\n" % DEFAULT,
              r.stdout)
    # A versioned name LLVM never shipped behaves as that release's tool under its own name.
    r = harness.run([f.path('llvm-offload-binary-19'), '--help'], text=True)
    check('llvm-offload-binary-19 --help: LLVM 19\'s packager under that name',
          'USAGE: llvm-offload-binary-19 [options] Extract from <file>.' in r.stdout
          and 'clang-offload-packager options:' in r.stdout, r.stdout)
    for name in ('clang-offload-bundler-20', 'llvm-offload-binary-14'):
        os.symlink(OT, f.path(name))
        r = harness.run([f.path(name), '--version'], text=True)
        check('%s: unsupported release, one error line, exit 1' % name,
              (r.returncode, r.stdout, r.stderr) ==
              (1, '', '%s: error: the name %s asks for LLVM %s, which offloadtool does not impersonate '
               '(supported: 19, 22, 23)\n' % (name, name, name.rsplit('-', 1)[1])), (r.returncode, r.stdout, r.stderr))
    r = harness.run([OT, 'clang-offload-bundler-22', '--version'], env={'OFFLOADTOOL_LLVM': '19'}, text=True)
    check('offloadtool clang-offload-bundler-22: the name\'s release', r.stdout.startswith(names[
        'clang-offload-bundler']['22']), r.stdout)
    # The name decides before the environment is read, named as the first argument too.
    r = harness.run([OT, 'clang-offload-bundler-22', '--version'], env={'OFFLOADTOOL_LLVM': '20'}, text=True)
    check('offloadtool clang-offload-bundler-22 with OFFLOADTOOL_LLVM=20: the name decides',
          (r.returncode, r.stdout, r.stderr) == (0, names['clang-offload-bundler']['22'] +
                                                 'offloadtool 0.1.0 as LLVM 22 (the name clang-offload-bundler-22)\n', ''),
          (r.returncode, r.stdout, r.stderr))
    r = harness.run([OT, 'clang-offload-bundler', '--version'], env={'OFFLOADTOOL_LLVM': '20'}, text=True)
    check('offloadtool clang-offload-bundler with OFFLOADTOOL_LLVM=20: one error line under the tool\'s name',
          (r.returncode, r.stdout, r.stderr) ==
          (1, '', 'clang-offload-bundler: error: OFFLOADTOOL_LLVM=20: not a supported LLVM release (supported: 19, 22, 23)\n'),
          (r.returncode, r.stdout, r.stderr))

    # The parent: a program named like an LLVM tool, in an llvm-N folder, that runs offloadtool.
    for v in ('19', '22', '23'):
        bin_dir = os.path.join(root, 'usr', 'lib', 'llvm-%s' % v, 'bin')
        os.makedirs(bin_dir)
        # a child, not an exec: the parent must stay alive as offloadtool's parent
        src = f.put('parent.c', b'#include <sys/wait.h>\n#include <unistd.h>\n'
                    b'int main(int c, char **v) { pid_t p = fork(); if (!p) { execv(v[1], v + 1); _exit(127); }\n'
                    b'  int s; waitpid(p, &s, 0); return WEXITSTATUS(s); }\n')
        parent = os.path.join(bin_dir, 'clang')
        harness.run(['cc', '-o', parent, src], check=True)
        r = harness.run([parent, OT, '--version'], env=env_unset, text=True)
        got = llvm_line(r.stdout)
        check('started by %s: LLVM %s' % (parent, v),
              got is not None and got[0] == v and got[1].startswith('started by %s (' % parent), r.stdout)
        r = harness.run([parent, OT, '--version'], env={'OFFLOADTOOL_LLVM': '19' if v == '22' else '22'}, text=True)
        check('OFFLOADTOOL_LLVM wins over the parent (LLVM %s)' % v,
              llvm_line(r.stdout)[0] != v, r.stdout)
    # Signs that disagree (llvm-19 folder, -22 name): the default.
    parent = os.path.join(root, 'usr', 'lib', 'llvm-19', 'bin', 'clang-22')
    harness.run(['cc', '-o', parent, f.path('parent.c')], check=True)
    r = harness.run([parent, OT, '--version'], env=env_unset, text=True)
    got = llvm_line(r.stdout)
    check('a parent whose signs disagree: the build\'s default, saying why',
          got is not None and got[0] == DEFAULT and 'signs disagree' in got[1], r.stdout)
    # An unsupported release of LLVM: the default, saying so.
    bin_dir = os.path.join(root, 'usr', 'lib', 'llvm-20', 'bin')
    os.makedirs(bin_dir)
    parent = os.path.join(bin_dir, 'clang')
    harness.run(['cc', '-o', parent, f.path('parent.c')], check=True)
    r = harness.run([parent, OT, '--version'], env=env_unset, text=True)
    got = llvm_line(r.stdout)
    check('a parent of LLVM 20: the build\'s default, saying why',
          got is not None and got[0] == DEFAULT and 'LLVM 20, which is not supported' in got[1], r.stdout)


if __name__ == '__main__':
    sys.exit(harness.run_suite('release', cases, needs=[LLVM['19'] + '/clang-offload-bundler',
                                                        LLVM['22'] + '/clang-offload-bundler', 'cc']))
