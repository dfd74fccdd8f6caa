#!/usr/bin/env python3
"""Man pages and shell completions (`offloadtool --generate-docs`, scripts/gen-docs):

(a) every option of every applet, subcommand and personality, as the binary's
    own --help lists it (an independent rendering of the same definitions), is
    in that command's man page (in its section, for a subcommand) and in the
    bash, zsh and fish completion of that command; so is every subcommand;
(b) `man -l` renders every page without a warning, and groff -ww is silent;
(c) the completions load: bash (`complete -p`, and `_offloadtool` on scripted
    COMP_WORDS offers the applets, subcommands and enumerated values), zsh
    (syntax, compinit registers all five names, the function loads), fish
    (`complete -C` offers the applets, subcommands, options and values);
(d) generating twice gives the same bytes, and scripts/gen-docs the same files;
(e) offloadtool-json(7), the --json schemas (src/support/json_schemas.cpp):
    renders without a warning; every schema it documents is named
    offloadtool-<output>/<major>, is the one the --help of an applet's --json
    names, is in that applet's page (JSON OUTPUT) and in docs/json-schemas.md; and
    `compat canonical --json` prints the schema its --help names;
(f) offloadtool(1)'s ENVIRONMENT names every variable the sources read
    (getenv); offloadtool(1) and each LLVM name's page say how the release is
    chosen (LLVM RELEASE), naming the releases and the default --version gives.

Environment: OFFLOADTOOL = the offloadtool binary, OT_SOURCE_ROOT = the source tree;
OT_DOCS_TREE = an installed tree (an unpacked SDK tarball) whose share/ is checked
instead of a freshly generated one, and must equal what the binary generates.
Needs man-db, groff, bash-completion, zsh and fish (scripts/install-deps): a
missing one is a failure, not a skip. Prints "N passed, M failed"; exits 1 on failure.
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import OT, check  # noqa: E402

SRC = os.environ.get('OT_SOURCE_ROOT', os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
BASH_COMPLETION = '/usr/share/bash-completion/bash_completion'
INSTALLED = os.environ.get('OT_DOCS_TREE')
TOOLS = ['/usr/bin/man', '/usr/bin/groff', '/usr/bin/bash', '/usr/bin/zsh', '/usr/bin/fish']


def run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    return r.returncode, r.stdout, r.stderr


# --- what --help says ------------------------------------------------------

class Command:
    def __init__(self, path, key, llvm):
        self.path = path      # as typed: ['offloadtool', 'package', 'create'], ['clang-offload-bundler']
        self.key = key        # the completion scripts' key: 'offloadtool package create', 'clang-offload-bundler'
        self.llvm = llvm
        self.options = []     # option names as --help prints them
        self.subcommands = []

    def page(self):
        return (self.path[0] if self.llvm else 'offloadtool-' + self.path[1]) + '.1'


def top_level():
    rc, out, _ = run([OT, '--help'])
    check('offloadtool --help', rc == 0, out)
    applets, personalities = [], []
    lines = out.splitlines()
    i = lines.index('applets:') + 1
    while i < len(lines) and lines[i].startswith('  '):
        applets.append(lines[i].split()[0])
        i += 1
    for j, line in enumerate(lines):
        if line.startswith('Installed (symlinked)'):
            personalities = lines[j + 1].split()
    check('offloadtool --help lists applets and personalities', applets and personalities, out)
    return applets, personalities


def cli11_help(cmd):
    """Options and subcommands from CLI11's help: "  -t,--target TEXT ..." and "Subcommands:"."""
    rc, out, err = run([OT] + cmd.path[1:] + ['--help'])
    check('%s --help' % ' '.join(cmd.path), rc == 0, err)
    section = None
    for line in out.splitlines():
        if line and not line.startswith(' '):
            section = line
            continue
        m = re.match(r'  (\S+)', line)
        if not m:
            continue
        if section == 'Options:' and m.group(1).startswith('-'):
            cmd.options += [re.sub(r'\{.*\}$', '', n) for n in m.group(1).split(',')]
        elif section == 'Subcommands:':
            cmd.subcommands.append(m.group(1))


def llvm_help(cmd, flag):
    """Options from LLVM cl's help: "  --type=<string> - ...", "  -o <file> - ..."."""
    rc, out, err = run([OT, cmd.path[0], flag])
    check('%s %s' % (cmd.path[0], flag), rc == 0, err)
    names = []
    for line in out.splitlines():
        m = re.match(r'  (--?[^\s=<]+)', line)
        if m:
            names.append(m.group(1))
    return names


def commands():
    applets, personalities = top_level()
    out = []
    for a in applets:
        cmd = Command(['offloadtool', a], 'offloadtool ' + a, False)
        cli11_help(cmd)
        out.append(cmd)
        for s in cmd.subcommands:
            sub = Command(['offloadtool', a, s], 'offloadtool %s %s' % (a, s), False)
            cli11_help(sub)
            out.append(sub)
    for p in personalities:
        cmd = Command([p], p, True)
        cmd.options = llvm_help(cmd, '--help')
        cmd.hidden = [n for n in llvm_help(cmd, '--help-hidden') if n not in cmd.options]
        out.append(cmd)
    return applets, personalities, out


# --- the generated files ---------------------------------------------------

def files_of(root):
    """The files under root/share (an installed tree has bin/ and more beside it)."""
    out = {}
    for dirpath, _, names in os.walk(os.path.join(root, 'share')):
        for n in names:
            p = os.path.join(dirpath, n)
            with open(p, 'rb') as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


def rendered(page):
    """The page as man shows it, one line per paragraph (wide), with plain hyphens."""
    env = dict(os.environ, MANWIDTH='250', MANROFFSEQ='', MAN_KEEP_FORMATTING='')
    rc, out, err = run(['man', '-E', 'UTF-8', '-l', page], env=env)
    check('man -l %s renders' % os.path.basename(page), rc == 0 and out, err)
    return out.replace('\u2010', '-').replace('\u2212', '-')


def has_word(text, name):
    return re.search(r'(?<![\w-])' + re.escape(name) + r'(?![\w-])', text) is not None


def man_section(text, title):
    """The lines of subsection `title` ("   offloadtool package create") up to the next heading."""
    lines = text.splitlines()
    try:
        i = lines.index('   ' + title)
    except ValueError:
        return ''
    end = i + 1
    while end < len(lines) and not re.match(r'(\S|   \S)', lines[end]):
        end += 1
    return '\n'.join(lines[i + 1:end])


def bash_block(script, key):
    m = re.search(r"\n    %s\)\n      _ot_subs='([^']*)'\n      _ot_opts='([^']*)'" % re.escape("'%s'" % key), script)
    return (m.group(1).split(), m.group(2).split()) if m else (None, None)


def zsh_function(script, key):
    name = '_offloadtool_cmd_' + re.sub(r'[ -]', '_', key)
    m = re.search(r'\n%s\(\) \{\n(.*?)\n\}\n' % re.escape(name), script, re.S)
    return m.group(1) if m else ''


def zsh_has_option(body, name):
    return re.search(r"'\*?%s(=-?|\+)?\[" % re.escape(name), body) is not None


def fish_lines(script, key):
    cond = "-n '__offloadtool_at \\'%s\\''" % key
    return [line for line in script.splitlines() if cond in line]


def fish_has_option(lines, name, llvm):
    if re.fullmatch(r'-[^-]', name):
        spec = "-s '%s'" % name[1:]
    else:
        spec = ("-o '%s'" if llvm and not name.startswith('--') else "-l '%s'") % name.lstrip('-')
    return any(spec in line for line in lines)


# --- the checks --------------------------------------------------------------

SCHEMA_NAME = r'offloadtool-[a-z](?:[a-z-]*[a-z])?/[1-9][0-9]*'


def checked_render(a_dir, name):
    """The page `name` below `a_dir`, checked to render without warnings by man
    and groff, as rendered text."""
    path = os.path.join(a_dir, name)
    env = dict(os.environ, MANROFFSEQ='', MANWIDTH='80')
    rc, _, err = run(['man', '--warnings', '-E', 'UTF-8', '-l', path], env=env)
    check('man --warnings -l %s: no warnings' % name, rc == 0 and err == '', err)
    rc, _, err = run(['groff', '-ww', '-man', '-z', path])
    check('groff -ww -man %s: no warnings' % name, rc == 0 and err == '', err)
    return rendered(path)


def json_checks(a_dir, applets, pages):
    """(e): the schema reference against --help, the applets' pages, docs/json-schemas.md and an output."""
    name = 'share/man/man7/offloadtool-json.7'
    text = checked_render(a_dir, name)
    for section in ('NAME', 'SYNOPSIS', 'DESCRIPTION', 'SCHEMAS', 'SEE ALSO'):
        check('%s has %s' % (name, section), re.search(r'^%s$' % section, text, re.M), text[:400])
    # the subsections of SCHEMAS are the schemas: "   offloadtool-list/2"
    documented = re.findall(r'^   (offloadtool-\S+)$', text, re.M)
    check('offloadtool-json(7) documents schemas', len(documented) >= 6, documented)
    check('offloadtool-json(7): one subsection per schema', len(set(documented)) == len(documented), documented)
    for s in documented:
        check('%s: named offloadtool-<output>/<major>' % s, re.fullmatch(SCHEMA_NAME, s), s)
        check('%s: its members and history' % s, 'History:' in man_section(text, s), man_section(text, s)[-300:])
    # which applet's --help names which schema (the --json option's description)
    named = {}
    for a in applets:
        rc, out, _ = run([OT, a, '--help'])
        subs = []
        section = None
        for line in out.splitlines():
            if line and not line.startswith(' '):
                section = line
            elif section == 'Subcommands:' and re.match(r'  (\S+)', line):
                subs.append(line.split()[0])
        for sub in [[]] + [[s] for s in subs]:
            rc, h, _ = run([OT, a] + sub + ['--help'])
            for s in re.findall(SCHEMA_NAME, ' '.join(h.split())):
                named.setdefault(s, set()).add(a)
    check('every schema a --help names is documented, and every documented one is named',
          set(named) == set(documented), (sorted(named), documented))
    with open(os.path.join(SRC, 'docs', 'json-schemas.md')) as f:
        schemas_doc = f.read()
    for s in documented:
        for a in sorted(named.get(s, ())):
            page = pages.get('offloadtool-%s.1' % a, '')
            json_section = page[page.find('\nJSON OUTPUT\n'):] if '\nJSON OUTPUT\n' in page else ''
            check('offloadtool-%s.1: JSON OUTPUT names %s' % (a, s), s in json_section, json_section[:300])
        check('docs/json-schemas.md names %s' % s, s in schemas_doc, '')
    compat = [s for s in documented if s.startswith('offloadtool-compat/')]
    rc, out, err = run([OT, 'compat', 'canonical', '--json', 'gfx90a'])
    check('compat canonical --json prints the schema documented', rc == 0 and compat and
          '"schema": "%s"' % compat[0] in out, (out, err))


def source_environment():
    """The environment variables the sources read: getenv("X") calls and the
    names given to the kpack lookup's readers (flag("X"), split_path_list("X"))."""
    names = set()
    for folder, _, files in os.walk(os.path.join(SRC, 'src')):
        for f in files:
            if f.endswith(('.cpp', '.c', '.h')):
                with open(os.path.join(folder, f), encoding='utf-8') as fh:
                    text = fh.read()
                names |= set(re.findall(r'\b(?:getenv|flag|split_path_list)\("([A-Z][A-Z0-9_]+)"\)', text))
    return names - {'PATH'}  # PATH: where programs are found, as everywhere


def environment_checks(pages, personalities):
    """(f) offloadtool(1) documents every variable the sources read; each page of
    an LLVM name says how its release is chosen, naming the releases --version
    says are supported and the build's default."""
    top = pages.get('offloadtool.1', '')
    env = man_text_section(top, 'ENVIRONMENT')
    read = source_environment()
    check('the sources read environment variables (getenv found)', len(read) >= 10, sorted(read))
    missing = sorted(n for n in read if not has_word(env, n))
    check('offloadtool.1 ENVIRONMENT names every variable the sources read', not missing, missing)
    rc, out, _ = run([OT, '--version'], env=dict(os.environ, OFFLOADTOOL_LLVM=''))
    m = re.search(r'supported: ([0-9, ]+)\)', out)
    check('offloadtool --version names the supported releases', rc == 0 and m, out)
    supported = m.group(1).split(', ') if m else []
    default = re.search(r'llvm: (\d+) \(', out)
    for name in ['offloadtool.1'] + [p + '.1' for p in personalities]:
        section = man_text_section(pages.get(name, ''), 'LLVM RELEASE')
        check('%s: LLVM RELEASE names the releases supported (%s)' % (name, ', '.join(supported)),
              supported and all(has_word(section, r) for r in supported), section[:300])
        check('%s: LLVM RELEASE names OFFLOADTOOL_LLVM and the build\'s default' % name,
              'OFFLOADTOOL_LLVM' in section and default and
              re.search(r"default: %s\b" % default.group(1), section), section[:600])


def man_text_section(text, title):
    """The lines of top-level section `title` of a rendered page, up to the next one."""
    m = re.search(r'^%s\n(.*?)(?=^\S)' % re.escape(title), text, re.M | re.S)
    return m.group(1) if m else ''


def body(root):
    a_dir, b_dir, s_dir = (os.path.join(root, d) for d in ('a', 'b', 'script'))
    for d in (a_dir, b_dir):
        rc, _, err = run([OT, '--generate-docs', d])
        check('--generate-docs %s' % os.path.basename(d), rc == 0 and err == '', err)
    if INSTALLED:  # the installed tree is what the rest checks: the same bytes as generated here
        a_dir = INSTALLED
    rc, _, err = run([os.path.join(SRC, 'scripts', 'gen-docs'), OT, s_dir])
    check('scripts/gen-docs', rc == 0, err)
    a = files_of(a_dir)
    check('generating twice gives the same bytes', a and a == files_of(b_dir),
          sorted(k for k in set(a) | set(files_of(b_dir)) if a.get(k) != files_of(b_dir).get(k)))
    check('scripts/gen-docs writes the same files', a == files_of(s_dir), sorted(set(a) ^ set(files_of(s_dir))))
    check('--generate-docs without a folder is a usage error', run([OT, '--generate-docs'])[0] == 1)

    applets, personalities, cmds = commands()
    man1 = 'share/man/man1/'
    expected = {man1 + 'offloadtool.1', 'share/bash-completion/completions/offloadtool',
                'share/zsh/site-functions/_offloadtool', 'share/fish/vendor_completions.d/offloadtool.fish'}
    expected |= {man1 + 'offloadtool-%s.1' % n for n in applets}
    expected.add('share/man/man7/offloadtool-json.7')
    for p in personalities:
        expected |= {man1 + p + '.1', 'share/bash-completion/completions/' + p,
                     'share/fish/vendor_completions.d/%s.fish' % p}
    check('the files: a page per applet and personality, completions for offloadtool and the LLVM names',
          set(a) == expected, sorted(set(a) ^ expected))

    # (b) every page renders without warnings and has the sections
    pages = {}
    for name in sorted(k for k in a if k.startswith(man1)):
        pages[os.path.basename(name)] = text = checked_render(a_dir, name)
        for section in ('NAME', 'SYNOPSIS', 'DESCRIPTION', 'OPTIONS', 'EXIT STATUS', 'SEE ALSO'):
            check('%s has %s' % (name, section), re.search(r'^%s$' % section, text, re.M), text[:400])
    top = pages.get('offloadtool.1', '')
    for n in applets + personalities + ['--help', '--version', 'offloadtool-json']:
        check('offloadtool.1 names %s' % n, has_word(top, n), top[:400])
    json_checks(a_dir, applets, pages)
    environment_checks(pages, personalities)

    # (a) every option and subcommand of every command in its page and each completion
    bash = a['share/bash-completion/completions/offloadtool'].decode()
    zsh = a['share/zsh/site-functions/_offloadtool'].decode()
    fish = a['share/fish/vendor_completions.d/offloadtool.fish'].decode()
    subs_of_top = bash_block(bash, 'offloadtool')[0] or []
    check('bash: offloadtool offers every applet and personality', subs_of_top == applets + personalities,
          subs_of_top)
    for cmd in cmds:
        label = ' '.join(cmd.path)
        check('%s: --help lists options' % label, cmd.options, '')
        page = pages.get(cmd.page(), '')
        scope = man_section(page, label) if len(cmd.path) == 3 else page
        bash_subs, bash_opts = bash_block(bash, cmd.key)
        zsh_body = zsh_function(zsh, cmd.key)
        fl = fish_lines(fish, cmd.key)
        check('%s: in bash, zsh and fish' % label, bash_opts is not None and zsh_body and fl)
        own_fish = ''
        if cmd.llvm:
            own_fish = a['share/fish/vendor_completions.d/%s.fish' % cmd.key].decode().splitlines()
        for name in cmd.options + getattr(cmd, 'hidden', []):
            check('%s %s: in man page %s' % (label, name, cmd.page()), has_word(scope, name), scope[:300])
            if name in getattr(cmd, 'hidden', []):
                continue
            check('%s %s: in bash completion' % (label, name), name in (bash_opts or []), bash_opts)
            check('%s %s: in zsh completion' % (label, name), zsh_has_option(zsh_body, name), zsh_body[:300])
            check('%s %s: in fish completion' % (label, name), fish_has_option(fl, name, cmd.llvm), fl[:3])
            if cmd.llvm:
                check('%s %s: in %s.fish' % (label, name, cmd.key), fish_has_option(own_fish, name, True))
        for s in cmd.subcommands:
            check('%s %s: in man page' % (label, s), has_word(man_section(page, '%s %s' % (label, s)), 'offloadtool')
                  or ('%s %s' % (label, s)) in page, '')
            check('%s %s: bash subcommand' % (label, s), s in (bash_subs or []), bash_subs)
            check('%s %s: zsh subcommand' % (label, s), re.search(r"'%s:" % re.escape(s), zsh_body), zsh_body[:300])
            check('%s %s: fish subcommand' % (label, s), any("-a '%s'" % s in line for line in fl), fl[:3])

    # (c) the completions load and complete
    comp_dir = os.path.join(a_dir, 'share/bash-completion/completions')
    script = os.path.join(comp_dir, 'offloadtool')

    def bash_complete(words, preload=''):
        prog = preload + 'source %s || exit 9\n' % script
        prog += 'COMP_WORDS=(%s); COMP_CWORD=%d; _offloadtool; printf "%%s\\n" "${COMPREPLY[@]}"\n' % (
            ' '.join("'%s'" % w for w in words), len(words) - 1)
        rc, out, err = run(['bash', '--norc', '--noprofile', '-c', prog])
        return rc, out.split(), err

    names = ['offloadtool'] + personalities
    for preload in ('', 'source %s\n' % BASH_COMPLETION):
        how = 'with bash-completion' if preload else 'alone'
        rc, out, err = run(['bash', '--norc', '--noprofile', '-c',
                            preload + 'source %s && complete -p %s' % (script, ' '.join(names))])
        check('bash (%s): complete -p %s' % (how, ' '.join(names)), rc == 0 and err == '', err + out)
        rc, out, err = bash_complete(['offloadtool', ''], preload)
        check('bash (%s): offloadtool <TAB> offers the applets' % how,
              rc == 0 and out == applets + personalities and err == '', (out, err))
    for cmd in cmds:
        if cmd.subcommands:
            rc, out, err = bash_complete(cmd.path + [''])
            check('bash: %s <TAB> offers %s' % (' '.join(cmd.path), cmd.subcommands), out == cmd.subcommands, out)
    rc, out, err = bash_complete(['offloadtool', 'compress', '--method', ''])
    check('bash: compress --method <TAB> offers zstd zlib', out == ['zstd', 'zlib'], out)
    rc, out, err = bash_complete(['clang-offload-bundler', '-type', '=', 'h'])
    check('bash: clang-offload-bundler -type=h<TAB> offers hipi', out == ['hipi'], out)
    rc, out, err = bash_complete(['offloadtool', 'clang-offload-bundler', '--unb'])
    check('bash: offloadtool clang-offload-bundler --unb<TAB>', out == ['--unbundle'], out)
    for p in personalities:
        rc, out, err = run(['bash', '--norc', '--noprofile', '-c',
                            'source %s && complete -p %s' % (os.path.join(comp_dir, p), p)])
        check('bash: completions/%s loads and registers %s' % (p, p), rc == 0 and err == '', err)

    zsh_dir = os.path.join(a_dir, 'share/zsh/site-functions')
    rc, out, err = run(['zsh', '-n', os.path.join(zsh_dir, '_offloadtool')])
    check('zsh -n _offloadtool', rc == 0 and err == '', err)
    prog = ('fpath=(%s $fpath); autoload -U compinit; compinit -u -d %s/zcompdump; '
            'for n in %s; do print -r -- "$n=$_comps[$n]"; done; autoload -Uz +X _offloadtool && print loaded') % (
        zsh_dir, root, ' '.join(names))
    rc, out, err = run(['zsh', '-f', '-c', prog])
    check('zsh: compinit registers every name and _offloadtool loads',
          rc == 0 and err == '' and out.split() == ['%s=_offloadtool' % n for n in names] + ['loaded'], (out, err))

    fish_dir = os.path.join(a_dir, 'share/fish/vendor_completions.d')

    def fish_complete(script_name, line):
        rc, out, err = run(['fish', '--no-config', '-c', 'source %s; or exit 9; complete -C%s' % (
            os.path.join(fish_dir, script_name), "'%s'" % line)])
        return rc, [x.split('\t')[0] for x in out.splitlines()], err

    rc, out, err = fish_complete('offloadtool.fish', 'offloadtool ')
    check('fish: offloadtool <TAB> offers the applets', rc == 0 and err == ''
          and sorted(out) == sorted(applets + personalities), (out, err))
    for cmd in cmds:
        if cmd.subcommands:
            rc, out, err = fish_complete('offloadtool.fish', ' '.join(cmd.path) + ' ')
            check('fish: %s <TAB> offers its subcommands' % ' '.join(cmd.path),
                  sorted(out) == sorted(cmd.subcommands), out)
    rc, out, err = fish_complete('offloadtool.fish', 'offloadtool compress --method ')
    check('fish: compress --method <TAB> offers zstd zlib', sorted(out) == ['zlib', 'zstd'], out)
    rc, out, err = fish_complete('offloadtool.fish', 'offloadtool bundle --ta')
    check('fish: bundle --ta<TAB>', out == ['--target'], out)
    for p in personalities:
        rc, out, err = fish_complete(p + '.fish', p + ' --')
        check('fish: %s.fish loads and offers --help' % p, rc == 0 and err == '' and '--help' in out, (out, err))


def main():
    missing = [t for t in TOOLS if not os.access(t, os.X_OK)]
    if not os.path.isfile(BASH_COMPLETION):
        missing.append(BASH_COMPLETION)
    if missing:
        print('missing (scripts/install-deps installs them): %s' % ', '.join(missing))
        print('0 passed, 1 failed')
        return 1
    return harness.run_suite('docs', body)


if __name__ == '__main__':
    sys.exit(main())
