#!/usr/bin/env python3
"""The tour in README.md, run as a reader runs it.

Every ```console block of README.md is a shell session: a line "$ COMMAND"
(continued on the next line while it ends with a backslash) followed by what
the command prints. The suite runs all the sessions' commands, in order, in one
bash shell (so `cd`, files and links carry over from one command to the next,
as they do for the reader), in a temporary folder holding tests/data/samples
as the source tree does, with `offloadtool` on PATH. Each command must exit 0
and print (standard output and standard error together) exactly the lines
shown after it: editing a shown output, or a change in what the binary prints,
fails here.

What the README shows is also checked against the reference tools where one
exists: LLVM 19's clang-offload-bundler lists the tour's bundle with the IDs
`offloadtool list` shows, lists the pruned install's bundle with the entries
kept, gives back the samples' bytes from the bundle and writes the
`clang-offload-bundler-19 -compress` bundle's bytes; LLVM 22's writes the
`-22` one's; the sizes shown are the samples' sizes.

Environment: OFFLOADTOOL = the offloadtool binary, OT_SOURCE_ROOT = the source tree.
Needs bash and LLVM 19's and 22's clang-offload-bundler (scripts/install-deps).
Prints "N passed, M failed"; exits 1 on failure.
"""

import glob
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import OT, check  # noqa: E402

README = os.path.join(harness.SOURCE_ROOT, 'README.md')
LLVM19_BUNDLER = '/usr/lib/llvm-19/bin/clang-offload-bundler'
LLVM22_BUNDLER = '/usr/lib/llvm-22/bin/clang-offload-bundler'
SAMPLES = os.path.join(harness.DATA, 'samples')
MAX_LINES = 210  # the README a newcomer reads (issue 35: "at most ~200 lines"); the rest is in docs/


def sessions(text):
    """[(command, shown output)] of the ```console blocks, in order."""
    steps = []
    for block in re.findall(r'^```console\n(.*?)^```$', text, re.M | re.S):
        for line in block.split('\n')[:-1]:
            if steps and steps[-1][0].endswith('\\') and not steps[-1][1]:
                steps[-1][0] += '\n' + line
            elif line.startswith('$ '):
                steps.append([line[2:], []])
            elif steps:
                steps[-1][1].append(line)
            else:
                raise ValueError('a console block starts with output, not with "$ ": %r' % line)
    return [(cmd, ''.join(line + '\n' for line in out)) for cmd, out in steps]


def run_session(steps, root):
    """Run the steps in one bash in root/work; [(exit status, output)]."""
    work, record, bindir = (os.path.join(root, d) for d in ('work', 'record', 'bin'))
    for d in (record, bindir):
        os.makedirs(d)
    shutil.copytree(SAMPLES, os.path.join(work, 'tests', 'data', 'samples'))
    os.symlink(OT, os.path.join(bindir, 'offloadtool'))
    script = []
    for i, (cmd, _) in enumerate(steps):
        script.append('{\n%s\n} >%s/%d.out 2>&1 </dev/null; echo $? >%s/%d.rc' % (cmd, record, i, record, i))
    env = harness.neutral_env(PATH=bindir + ':' + os.environ.get('PATH', '/usr/bin:/bin'), LC_ALL='C',
                              OFFLOADTOOL_LLVM=None)
    r = harness.run(['bash', '--noprofile', '--norc', '-c', '\n'.join(script)], cwd=work, env=env, text=True)
    check('the session runs through', r.returncode == 0, r.stdout + r.stderr)
    results = []
    for i in range(len(steps)):
        out_path, rc_path = os.path.join(record, '%d.out' % i), os.path.join(record, '%d.rc' % i)
        if not os.path.exists(rc_path):
            results.append((None, ''))
            continue
        with open(rc_path) as f:
            rc = int(f.read())
        with open(out_path, encoding='utf-8', errors='replace') as f:
            results.append((rc, f.read()))
    return work, results


def shown(steps, prefix):
    """The shown output of the one step whose command starts with prefix."""
    found = [out for cmd, out in steps if cmd.startswith(prefix)]
    check('README shows one "%s"' % prefix, len(found) == 1, len(found))
    return found[0] if found else ''


def bundler(tool, args, cwd):
    r = harness.run([tool] + args, cwd=cwd, env=harness.neutral_env(), text=True)
    check('%s %s' % (tool, ' '.join(args)), r.returncode == 0, r.stderr)
    return r.stdout


def reference_checks(steps, work):
    """What the README shows, against LLVM's bundlers and the samples themselves."""
    tour = os.path.join(work, 'tour')
    ids = re.findall(r'^\s+\d+\s+(\S+)', shown(steps, 'offloadtool list app.hipfb'), re.M)
    llvm = bundler(LLVM19_BUNDLER, ['-list', '-type=o', '-input=app.hipfb'], tour).split()
    check('the IDs `offloadtool list app.hipfb` shows are the ones LLVM 19 lists', sorted(ids) == sorted(llvm),
          (ids, llvm))
    as_llvm = shown(steps, './clang-offload-bundler-19 -list').split()
    check('clang-offload-bundler-19 -list shows what LLVM 19 lists (in file order)',
          sorted(as_llvm) == sorted(llvm) and as_llvm == ids, (as_llvm, llvm))
    samples = {'hip-amdgcn-amd-amdhsa--gfx906': 'gfx906.bc', 'hip-amdgcn-amd-amdhsa--gfx90a:xnack+': 'gfx90a.bc'}
    for target, name in samples.items():
        bundler(LLVM19_BUNDLER, ['-unbundle', '-type=o', '-input=app.hipfb', '-targets=' + target,
                                 '-output=llvm-' + name], tour)
        check('LLVM 19 unbundles %s from app.hipfb: the sample' % target,
              harness.same_file(os.path.join(tour, 'llvm-' + name), os.path.join(SAMPLES, name)))
        size = os.path.getsize(os.path.join(SAMPLES, name))
        table = shown(steps, 'offloadtool size --per-file inst')
        rows = re.findall(r'^ *%s\s+1\s+(\d+) B\s' % re.escape(target), table, re.M)
        check('size --per-file shows %s at %d B (the sample\'s size) in its three tables' % (target, size),
              rows == [str(size)] * 3, table)
    pruned = bundler(LLVM19_BUNDLER, ['-list', '-type=o', '-input=inst-gfx90a/lib/app.hipfb'], tour).split()
    check('LLVM 19 lists the pruned install\'s bundle: the host and gfx90a:xnack+',
          sorted(pruned) == ['hip-amdgcn-amd-amdhsa--gfx90a:xnack+', 'host-x86_64-unknown-linux-gnu-'], pruned)
    kept = re.findall(r'^\s+\d+\s+(\S+)', shown(steps, 'offloadtool list inst-gfx90a'), re.M)
    check('`list inst-gfx90a` shows what LLVM 19 lists', sorted(kept) == sorted(pruned), (kept, pruned))
    targets = '-targets=' + ','.join(samples)
    for release, tool in (('19', LLVM19_BUNDLER), ('22', LLVM22_BUNDLER)):
        bundler(tool, ['-type=bc', '-compress', '-input=gfx906.bc', '-input=gfx90a.bc', '-output=llvm-%s.bc' % release,
                       targets], tour)
        check('clang-offload-bundler-%s -compress: LLVM %s\'s bytes' % (release, release),
              harness.same_file(os.path.join(tour, 'app-%s.bc' % release), os.path.join(tour, 'llvm-%s.bc' % release)))
    info = shown(steps, 'offloadtool compress --info app-22.bc')
    check('compress --info shows version 3, as LLVM 22 writes (COMPRESSED_BUNDLE_FORMAT_VERSION default)',
          'compressed bundle version 3,' in info, info)


def body(root):
    with open(README, encoding='utf-8') as f:
        text = f.read()
    lines = text.count('\n')
    check('README.md: at most %d lines (reference material lives in docs/)' % MAX_LINES, lines <= MAX_LINES, lines)
    for path in [README] + sorted(glob.glob(os.path.join(harness.SOURCE_ROOT, 'docs', '*.md'))):
        with open(path, encoding='utf-8') as f:
            fences = [line for line in f.read().split('\n') if line.startswith('```')]
        check('%s: every code block is closed' % os.path.relpath(path, harness.SOURCE_ROOT),
              len(fences) % 2 == 0 and all(f == '```' for f in fences[1::2]), fences)
    for link in sorted(set(re.findall(r'\]\((docs/[^)#]+)', text))):
        check('README.md links %s, which exists' % link, os.path.exists(os.path.join(harness.SOURCE_ROOT, link)), link)
    steps = sessions(text)
    check('README.md shows a tour of at least 10 commands', len(steps) >= 10, [c for c, _ in steps])
    work, results = run_session(steps, root)
    for (cmd, want), (rc, got) in zip(steps, results):
        name = cmd.split('\n')[0]
        check('$ %s: exit 0' % name, rc == 0, (rc, got))
        check('$ %s: prints what README.md shows' % name, got == want,
              harness.first_line_difference(got, want, ('offloadtool', 'README.md')))
    reference_checks(steps, work)


if __name__ == '__main__':
    sys.exit(harness.run_suite('readme', body, needs=['/usr/bin/bash', LLVM19_BUNDLER, LLVM22_BUNDLER]))
