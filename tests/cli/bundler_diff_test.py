#!/usr/bin/env python3
"""Differential test: offloadtool's clang-offload-bundler personality against
LLVM 19's /usr/lib/llvm-19/bin/clang-offload-bundler.

Each case runs a sequence of command lines once with each tool, in two
directories populated with identical inputs. Both tools are invoked through a
symlink named clang-offload-bundler with the same argv[0]
("../bin/clang-offload-bundler", relative to the case directory), so their
messages compare equal as they are. Compared: exit code, stdout, stderr (after
masking what is inherently variable: timings, temp-file names, LLVM's timer
report) and every file left in the case directory, byte for byte.

Where offloadtool is deliberately different from LLVM 19 the case asserts
offloadtool's behaviour instead and says why next to it.

Environment: OFFLOADTOOL = the offloadtool binary (required).
Arguments:   [substring]  run only the cases whose name contains it.
             BUNDLER_DIFF_VERBOSE=1 prints every case and, at the end, what
             LLVM 19 does where offloadtool deliberately differs.
             BUNDLER_DIFF_KEEP=1 keeps the work folder; BUNDLER_DIFF_JOBS=N
             runs N cases at a time.
Prints "N passed, M failed"; exits 1 if anything failed.

bundler_archive_diff_test.py imports this harness (start, diff_case,
ours_case, clean_error, run_all, llvm_bundle, compile_object).
"""

import hashlib
import os
import random
import re
import shutil
import struct
import sys
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import LLVM_BIN, LLVM_BUNDLER  # noqa: E402

PROG = '../bin/clang-offload-bundler'      # argv[0] on both sides
PROG2 = '../bin2/clang-offload-bundler'    # a directory that also holds llvm-objcopy
harness.VERBOSE = harness.VERBOSE or bool(os.environ.get('BUNDLER_DIFF_VERBOSE'))
FILTER = sys.argv[1] if len(sys.argv) > 1 else None
KEEP = bool(os.environ.get('BUNDLER_DIFF_KEEP'))
NEEDS = [LLVM_BUNDLER] + [LLVM_BIN + '/' + t for t in ('clang', 'llvm-objcopy', 'llvm-objdump', 'llvm-readelf',
                                                       'llvm-readobj')]

HOST = 'host-x86_64-unknown-linux-gnu'

# ---------------------------------------------------------------------------
# Running one side


def run_step(work, step):
    """One step on a side's harness.Workdir: {'argv': [...]} and optionally
    'prog' (argv[0], default PROG), 'tool': 'llvm' (run LLVM's bundler under
    that name on either side), 'env' and 'stdin'. (exit code, stdout, stderr)."""
    return work.run(step['argv'], step.get('prog', PROG), exe=LLVM_BUNDLER if step.get('tool') == 'llvm' else None,
                    env=step.get('env'), stdin=step.get('stdin', b''))


def side_links(exe):
    """bin/ holds the tool; bin2/ holds it and llvm-objcopy, which LLVM then
    prefers to PATH's (-### shows it)."""
    return {'bin/clang-offload-bundler': exe, 'bin2/clang-offload-bundler': exe,
            'bin2/llvm-objcopy': LLVM_BIN + '/llvm-objcopy'}


def normalise(text, side):
    """A side's output with its folder as <ROOT> and what is inherently variable masked."""
    return harness.mask_variable(harness.replace_all(text, {side.root: '<ROOT>'}))


# ---------------------------------------------------------------------------
# Object files are compared by their contents, not their bytes


# String and symbol tables are laid out differently by llvm-objcopy and by
# offloadtool (section names merged or not): their bytes and sizes are not
# compared; their meaning is, through the section and symbol listings.
LAYOUT_SECTIONS = ('.strtab', '.shstrtab', '.symtab')


def object_summary(data, workdir):
    """A layout-independent description of an object: sections (name, type,
    flags, size, alignment, contents), symbols and relocations. Warnings from
    llvm-readelf / llvm-objdump make it differ."""
    path = os.path.join(workdir, 'summary.o')
    harness.write(path, data)
    lines = []
    rc, out, err = harness.reference_outcome([LLVM_BIN + '/llvm-objdump', '-h', '-t', '-r', '-s', path], [path])
    if rc or err:
        lines.append('objdump rc=%d stderr=%s' % (rc, err.strip().replace(path, '<obj>')))
    sections, contents = [], {}
    current = None
    for line in out.splitlines():
        if path in line:
            continue
        m = re.match(r'\s*\d+ (\S+)\s+([0-9a-f]+) ([0-9a-f]+)\s*(.*)$', line)
        if m and current is None and not line.startswith('Contents'):
            name, size, _vma, kind = m.groups()
            sections.append('section %s size=%s %s' % (name, '*' if name in LAYOUT_SECTIONS else size, kind))
            continue
        if line.startswith('Contents of section '):
            current = line[len('Contents of section '):].rstrip(':')
            contents[current] = []
            continue
        if current is not None and line.startswith(' '):
            # " <address> <up to 4 hex groups>  <ascii>": keep the bytes only
            m = re.match(r'\s*[0-9a-f]+ (.*?)  ', line + '  ')
            contents[current].append(m.group(1).replace(' ', '') if m else line)
            continue
        current = None
        if line.strip():
            lines.append(line)
    lines += sorted(sections)
    for k in sorted(contents):
        if k not in LAYOUT_SECTIONS:
            lines.append('contents %s %s' % (k, hashlib.sha1(''.join(contents[k]).encode()).hexdigest()))
    if data[:4] == b'\x7fELF':
        rc, out, err = harness.reference_outcome([LLVM_BIN + '/llvm-readelf', '-S', '-W', path], [path])
        if rc or err:
            lines.append('readelf rc=%d stderr=%s' % (rc, err.strip().replace(path, '<obj>')))
        for line in out.splitlines():
            m = re.match(r'\s*\[\s*\d+\]\s+(.*)$', line)
            if not m or m.group(1).startswith('Name'):
                continue
            f = m.group(1).split()
            # name type address off size es [flg] lk inf al: drop off, lk and inf (positions)
            flags = f[6] if len(f) == 10 else ''
            size = '*' if f[0] in LAYOUT_SECTIONS else f[4]
            lines.append('shdr %s %s %s size=%s es=%s flags=%s align=%s' % (f[0], f[1], f[2], size, f[5], flags, f[-1]))
        rc, out, err = harness.reference_outcome([LLVM_BIN + '/llvm-readelf', '-h', '-W', path], [path])
        for line in out.splitlines():
            if any(k in line for k in ('Class', 'Data', 'Machine', 'Type:', 'Flags', 'OS/ABI')):
                lines.append(line.strip())
    else:
        rc, out, err = harness.reference_outcome([LLVM_BIN + '/llvm-readobj', '--sections', path], [path])
        if rc or err:
            lines.append('readobj rc=%d stderr=%s' % (rc, err.strip().replace(path, '<obj>')))
        name = None
        for line in out.splitlines():
            m = re.match(r'\s*Name: (\S+)', line)
            if m:
                name = m.group(1)
            m = re.match(r'\s*Characteristics \[ \((0x[0-9A-F]+)\)', line)
            if m:
                lines.append('coff section %s characteristics %s' % (name, m.group(1)))
    os.unlink(path)
    return sorted(lines)


def is_object(data):
    return data[:4] == b'\x7fELF' or data[:2] in (b'\x64\x86', b'\x4c\x01', b'\x64\xaa')


def archive_members(data):
    """(name, data) of a GNU archive's members, the symbol table as its list of
    (symbol, member index) under the name '/' (offsets depend on member sizes)."""
    pos, longs, members, symtab = 8, b'', [], None
    while pos + 60 <= len(data):
        name, size = data[pos:pos + 16].rstrip(b' '), int(data[pos + 48:pos + 58])
        body = data[pos + 60:pos + 60 + size]
        if name == b'//':
            longs = body
        elif name in (b'/', b'/SYM64/'):
            w = 4 if name == b'/' else 8
            n = int.from_bytes(body[:w], 'big')
            offs = [int.from_bytes(body[w + i * w:w + i * w + w], 'big') for i in range(n)]
            symtab = (offs, body[w + n * w:].split(b'\0')[:n])
        else:
            if name.startswith(b'/'):
                at = int(name[1:])
                name = longs[at:longs.index(b'/\n', at)]
            else:
                name = name[:-1]
            members.append((name, body, pos))
        pos += 60 + size + size % 2
    out = [(n, b) for n, b, _ in members]
    if symtab:
        index = {p: i for i, (_, _, p) in enumerate(members)}
        out.insert(0, (b'/', [(sym, index.get(off)) for off, sym in zip(*symtab)]))
    return out


def archive_difference(ldata, odata, sumdir):
    """Device archives whose host objects were stripped by llvm-objcopy on one
    side and natively on the other: same members in the same order, same symbol
    table entries, equal bytes except object members, which are compared by
    object_summary. Returns a problem or None."""
    la, oa = archive_members(ldata), archive_members(odata)
    if [n for n, _ in la] != [n for n, _ in oa]:
        return 'archive members differ: llvm %s, ours %s' % ([n for n, _ in la], [n for n, _ in oa])
    for (name, l), (_, o) in zip(la, oa):
        if l == o:
            continue
        if name != b'/' and is_object(l) and is_object(o):
            ls, os_ = object_summary(l, sumdir), object_summary(o, sumdir)
            if ls == os_:
                continue
            return 'archive member %s differs\n--- llvm only\n%s\n--- ours only\n%s' % (
                name, '\n'.join(x for x in ls if x not in os_), '\n'.join(x for x in os_ if x not in ls))
        return 'archive member %s differs' % name
    return None


# ---------------------------------------------------------------------------
# Cases

CASES = []  # (name, function(index) -> (problem or None, note or None))


def selected(name):
    return FILTER is None or FILTER in name


def as_step(s):
    return s if isinstance(s, dict) else {'argv': s}


def show(b):
    t = b.decode(errors='replace')
    return t if len(t) < 3000 else t[:3000] + '...<%d bytes>' % len(t)


def step_outputs(step):
    """The -output / -outputs values of a step (files it may write)."""
    argv, outs = step['argv'], []
    for i, a in enumerate(argv):
        for opt in ('-output', '--output', '-outputs', '--outputs'):
            if a == opt and i + 1 < len(argv):
                outs += argv[i + 1].split(',') if 'outputs' in opt else [argv[i + 1]]
            elif a.startswith(opt + '='):
                v = a[len(opt) + 1:]
                outs += v.split(',') if 'outputs' in opt else [v]
    return outs


def run_steps(work, steps, files):
    work.prepare(files)
    outs, before = [], None
    for st in steps:
        before = work.files()
        outs.append(run_step(work, st))
        if work.side is OURS and work.tmp_files():
            outs[-1] = outs[-1] + (work.tmp_files(),)
    return outs, before, work.files(), work.tmp_files()


def diff_case(name, steps, files, list_sorted=False, objects=(), ours_extra_check=None):
    """Run `steps` on both sides and compare everything.
    list_sorted: -list steps print binary-bundle IDs; offloadtool prints them in
      file order, LLVM in its StringMap (hash) order: compare as sorted lists.
    objects: output names that are object files written by the tools themselves
      (-type=o with an object host): compared by object_summary, not bytes;
      device archives holding such objects are compared member by member.
    When the last step fails after LLVM has written some of its outputs, LLVM
    leaves them; offloadtool deliberately leaves none (its outputs are committed
    together): then offloadtool's directory must be exactly as before the step."""
    if not selected(name):
        return
    steps = [as_step(s) for s in steps]

    index = len(CASES)

    def run():
        lw, ow = LLVM.workdir(index), OURS.workdir(index)
        lo, _, lf, _ = run_steps(lw, steps, files)
        oo, obefore, of, otmp = run_steps(ow, steps, files)
        problems = []
        if ours_extra_check:
            p = ours_extra_check(ow)
            if p:
                problems.append(p)
        for i, (st, l, o) in enumerate(zip(steps, lo, oo)):
            if isinstance(l[0], int) and (l[0] < 0 or l[0] > 128):
                problems.append('step %d: LLVM crashed (rc %s): the case is wrong' % (i, l[0]))
            if len(o) > 3:
                problems.append('step %d: offloadtool left temp files %s' % (i, o[3]))
            lout, oout = normalise(l[1], LLVM), normalise(o[1], OURS)
            lerr, oerr = normalise(l[2], LLVM), normalise(o[2], OURS)
            if list_sorted and ('-list' in st['argv'] or st.get('list')):
                lout = b'\n'.join(sorted(lout.split(b'\n')))
                oout = b'\n'.join(sorted(oout.split(b'\n')))
            what = ' '.join(st['argv'])
            if l[0] != o[0]:
                problems.append('step %d (%s): exit code llvm=%s ours=%s' % (i, what, l[0], o[0]))
            if lout != oout:
                problems.append('step %d (%s): stdout differs\n--- llvm\n%s\n--- ours\n%s' %
                                (i, what, show(lout), show(oout)))
            if lerr != oerr:
                problems.append('step %d (%s): stderr differs\n--- llvm\n%s\n--- ours\n%s' %
                                (i, what, show(lerr), show(oerr)))
        if oo[-1][0] != 0 and of != obefore:
            problems.append('offloadtool changed files in a failing step: %s' %
                            sorted(k for k in set(of) | set(obefore) if of.get(k) != obefore.get(k)))
        tolerated = set(step_outputs(steps[-1])) if lo[-1][0] != 0 else set()
        if sorted(set(lf) - tolerated) != sorted(set(of) - tolerated):
            problems.append('file sets differ: llvm=%s ours=%s' % (sorted(lf), sorted(of)))
        sumdir = os.path.join(SCRATCH, 'sum%d' % index)
        os.makedirs(sumdir, exist_ok=True)
        for f in sorted(set(lf) & set(of)):
            if lf[f] == of[f]:
                continue
            if (objects == '*' or f in objects) and lf[f][:8] == of[f][:8] == b'!<arch>\n':
                p = archive_difference(lf[f], of[f], sumdir)
                if p:
                    problems.append('%s: %s' % (f, p))
                continue
            if (objects == '*' or f in objects) and is_object(lf[f]) and is_object(of[f]):
                ls, os_ = object_summary(lf[f], sumdir), object_summary(of[f], sumdir)
                if ls != os_:
                    only_l = [x for x in ls if x not in os_]
                    only_o = [x for x in os_ if x not in ls]
                    problems.append('object %s differs\n--- llvm only\n%s\n--- ours only\n%s' %
                                    (f, '\n'.join(only_l), '\n'.join(only_o)))
                continue
            n = harness.first_difference(lf[f], of[f])
            problems.append('file %s differs (llvm %d bytes, ours %d bytes, first difference at %#x)'
                            % (f, len(lf[f]), len(of[f]), n))
        if otmp:
            problems.append('offloadtool left temp files: %s' % otmp)
        shutil.rmtree(sumdir, ignore_errors=True)
        lw.cleanup()
        ow.cleanup()
        return ('\n'.join(problems) or None), None

    CASES.append((name, run))


def ours_case(name, steps, files, check, llvm_note=True):
    """Cases where offloadtool deliberately differs: run LLVM for the record
    (shown with BUNDLER_DIFF_VERBOSE) and assert offloadtool's behaviour with
    `check(results, workdir)` returning a problem string or None."""
    if not selected(name):
        return
    steps = [as_step(s) for s in steps]

    index = len(CASES)

    def run():
        note = None
        if llvm_note:
            lw = LLVM.workdir(index)
            lres, _, _, _ = run_steps(lw, steps, files)
            note = '; '.join('rc=%s %s' % (r[0], (normalise(r[2], LLVM).decode(errors='replace').strip()
                                                  .splitlines() or [''])[0]) for r in lres)
            lw.cleanup()
        ow = OURS.workdir(index)
        results, _, _, _ = run_steps(ow, steps, files)
        problem = check(results, ow)
        if not problem and ow.tmp_files():
            problem = 'offloadtool left temp files: %s' % ow.tmp_files()
        ours_note = '; '.join('rc=%s %s' % (r[0], r[2].decode(errors='replace').strip()) for r in results)
        if problem:
            problem += ''.join('\n  step %d: rc=%s\n  stdout=%s\n  stderr=%s' % (i, r[0], show(r[1]), show(r[2]))
                               for i, r in enumerate(results))
        ow.cleanup()
        return problem, ('llvm: %s\n       ours: %s' % (note, ours_note) if note is not None else 'ours: ' + ours_note)

    CASES.append((name, run))


def clean_error(files, mention=None, step=-1):
    """The check for bad input: exit 1, one line `<prog>: error: ...` naming
    the file, nothing but the inputs left in the directory."""
    def check(results, work):
        rc, out, err = results[step][:3]
        if rc != 1:
            return 'expected exit code 1, got %s' % rc
        if out:
            return 'expected no stdout'
        lines = err.decode(errors='replace').splitlines()
        if len(lines) != 1 or not lines[0].startswith(PROG + ': error: '):
            return 'expected one line "%s: error: ..."' % PROG
        if mention and mention not in lines[0]:
            return 'the error does not name %r' % mention
        left = sorted(work.files())
        want = sorted(k + ('/' if isinstance(v, str) else '') for k, v in files.items())
        if left != want:
            return 'files left: %s (inputs: %s)' % (left, want)
        return None
    return check


def run_all():
    """Runs the registered cases (BUNDLER_DIFF_JOBS at a time, default two per
    processor), one check each; verbose, prints LLVM's side of the cases where
    offloadtool deliberately differs."""
    jobs = int(os.environ.get('BUNDLER_DIFF_JOBS', '0')) or (os.cpu_count() or 2) * 2
    notes = harness.run_cases(CASES, jobs)
    if harness.VERBOSE and notes:
        print('\nCases where offloadtool deliberately differs (LLVM 19 for the record):')
        for name, note in notes:
            print('  %s\n       %s' % (name, note))


# ---------------------------------------------------------------------------
# Inputs

H_I = b'int x;\n'
DEV1 = b'Content of device file 1\n'
DEV2 = b'device file 2 without a trailing newline'
EMPTY = b''
BINARY = bytes(range(256)) * 3 + b'\n\n\x00\x00\n'
NL_ONLY = b'\n'
DOUBLE_NL = b'line\n\n'
CONTENTS = [H_I, DEV1, DEV2, EMPTY, BINARY, NL_ONLY, DOUBLE_NL]

TEXT_TYPES = ['i', 'ii', 'cui', 'hipi', 'd', 'll', 's']
BINARY_TYPES = ['bc', 'gch', 'ast']

# The suite runs against LLVM 19 and LLVM 22 (harness.RELEASE). 22 standardises
# IDs by other rules (five '-' pieces, normalised triples): a 3-field target such
# as openmp-nvptx64-nvidia-cuda-sm_70 loses its processor there, and offloadtool's
# 22 personality refuses it (lossy_cases), so the sets use the spellings each
# release keeps, and 22's own quirks (normalised vendors and OS order).
R22 = harness.FIVE_PIECES  # 22 and 23
R23 = harness.RELEASE == '23'
NVPTX = 'openmp-nvptx64-nvidia-cuda--sm_70' if R22 else 'openmp-nvptx64-nvidia-cuda-sm_70'
TARGET_SETS = {
    'omp': [HOST, 'openmp-x86_64-pc-linux-gnu', 'openmp-powerpc64le-ibm-linux-gnu', NVPTX],
    'hiphost': [HOST, 'hip-amdgcn-amd-amdhsa--gfx906', 'hip-amdgcn-amd-amdhsa--gfx90a:xnack+'],
    'hiponly': ['hip-amdgcn-amd-amdhsa--gfx906', 'hipv4-amdgcn-amd-amdhsa--gfx908:sramecc-:xnack+',
                'hip-amdgcn-amd-amdhsa--gfx1030'],
    'hostmid': ['openmp-x86_64-pc-linux-gnu', HOST, 'openmp-amdgcn-amd-amdhsa--gfx906'],
    'quirks': ['host-x86_64-unknown-linux-gnu-', 'hip-amdgcn-amd-amdhsa-gnu-gfx900',
               'hip-amdgcn-amd-amdhsa--gfx9-generic', 'openmp-nvptx64--cuda--sm_70',
               'hip-amdgcn-amd-amdhsa-unknown-gfx906', 'hipv4-amdgcn-amd-amdhsa-', 'openmp-x86_64-linux-pc-gnu',
               'hip-amdgcn--amdhsa--gfx90a:xnack+']
    if R22 else ['host-x86_64-unknown-linux-gnu-', 'hip-amdgcn-amd-amdhsa-gfx900',
                 'hip-amdgcn-amd-amdhsa--gfx9-generic', 'openmp-nvptx64-nvidia-cuda',
                 'hip-amdgcn-amd-amdhsa-unknown-gfx906', 'hipv4-amdgcn-amd-amdhsa-'],
    'many': ['hip-amdgcn-amd-amdhsa--' + a for a in
             ['gfx700', 'gfx701', 'gfx801', 'gfx803', 'gfx900', 'gfx902', 'gfx904', 'gfx906', 'gfx908', 'gfx909',
              'gfx90a', 'gfx90c', 'gfx950' if R22 else 'gfx940', 'gfx942', 'gfx1010', 'gfx1030', 'gfx1100', 'gfx1101',
              'gfx1200', 'gfx1201']],  # (22 no longer knows gfx940, 19 not yet gfx950)
}


OMP_STANDARD = [b'host-x86_64-unknown-linux-gnu-', b'openmp-x86_64-pc-linux-gnu-', b'openmp-powerpc64le-ibm-linux-gnu-',
                b'openmp-nvptx64-nvidia-cuda-unknown-sm_70' if R22 else b'openmp-nvptx64-nvidia-cuda--sm_70']


def target_args(targets, style):
    """The -targets list spelled in one of LLVM's accepted ways."""
    if style == 0:
        return ['-targets=' + ','.join(targets)]
    if style == 1:
        return [a for t in targets for a in ('--targets', t)]
    if style == 2:
        return ['--targets=' + ','.join(targets[:1])] + (['-targets=' + ','.join(targets[1:])] if targets[1:] else [])
    return ['-targets', ','.join(targets)]


def file_args(opt, names, style):
    if style == 0:
        return ['-%s=%s' % (opt, n) for n in names]
    if style == 1:
        return [a for n in names for a in ('--' + opt, n)]
    if style == 2:
        return ['--%s=%s' % (opt, n) for n in names]
    return [a for n in names for a in ('-' + opt, n)]


def type_args(t, style):
    return [['-type=' + t], ['--type', t], ['--type=' + t], ['-type', t]][style % 4]


# ---------------------------------------------------------------------------
# Fixtures made by the real LLVM tools

SCRATCH = None
FIXTURES = {}


def llvm_bundle(argv, inputs):
    """Run LLVM's bundler in a scratch directory; returns the output bytes."""
    return harness.llvm_bundle(argv, inputs, SCRATCH)


def compile_object(target, source=b'int f(void) { return 42; }\nint g = 7;\nstatic int h[3] = {1,2,3};\nint *k = h;\n'):
    d = harness.Folder(SCRATCH, files={'h.c': source})
    d.run([LLVM_BIN + '/clang', '--target=' + target, '-O1', '-c', 'h.c', '-o', 'h.o'], check=True)
    return d.read('h.o')


def md5_low(data):
    return hashlib.md5(data).digest()[:8]


def ccob(version, method, payload_compressed, uncompressed, total=None, usize=None, hash_=None):
    """A CCOB container around already compressed bytes (reference 2.13)."""
    h = md5_low(uncompressed) if hash_ is None else hash_
    usize = len(uncompressed) if usize is None else usize
    if version < 2:
        head = b'CCOB' + struct.pack('<HHI', version, method, usize) + h
    elif version == 2:
        total = 24 + len(payload_compressed) if total is None else total
        head = b'CCOB' + struct.pack('<HHII', version, method, total, usize) + h
    else:
        total = 32 + len(payload_compressed) if total is None else total
        head = b'CCOB' + struct.pack('<HHQQ', version, method, total, usize) + h
    return head + payload_compressed


def make_fixtures():
    f = FIXTURES
    omp = TARGET_SETS['omp']
    f['omp.bc'] = llvm_bundle(['-type=bc', '-targets=' + ','.join(omp), '-input=a', '-input=b', '-input=c',
                               '-input=d'], {'a': H_I, 'b': DEV1, 'c': DEV2, 'd': BINARY})
    f['omp.i'] = llvm_bundle(['-type=i', '-targets=' + ','.join(omp), '-input=a', '-input=b', '-input=c',
                              '-input=d'], {'a': H_I, 'b': DEV1, 'c': DEV2, 'd': BINARY})
    compat = [HOST, 'hip-amdgcn-amd-amdhsa--gfx906', 'hip-amdgcn-amd-amdhsa--gfx90a:xnack+',
              'hipv4-amdgcn-amd-amdhsa--gfx908', 'openmp-amdgcn-amd-amdhsa--gfx1030',
              'hip-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-', 'openmp-nvptx64-nvidia-cuda--sm_70',
              'openmp-x86_64-pc-linux-gnu']
    ins = {'f%d' % i: b'payload %d\n' % i for i in range(len(compat))}
    for t in ('bc', 'i'):
        f['compat.' + t] = llvm_bundle(['-type=' + t, '-targets=' + ','.join(compat)] +
                                       ['-input=f%d' % i for i in range(len(compat))], ins)
    f['compat.o'] = llvm_bundle(['-type=o', '-bundle-align=4096', '-targets=' + ','.join(compat), '-input=/dev/null'] +
                                ['-input=f%d' % i for i in range(1, len(compat))], ins)
    f['hip.hipfb'] = llvm_bundle(['-type=o', '-bundle-align=4096', '-targets=' + ','.join(TARGET_SETS['hiphost']),
                                  '-input=/dev/null', '-input=a', '-input=b'], {'a': BINARY * 50, 'b': DEV1})
    f['hip.ccob'] = llvm_bundle(['-type=o', '-bundle-align=4096', '-compress', '-targets=' +
                                 ','.join(TARGET_SETS['hiphost']), '-input=/dev/null', '-input=a', '-input=b'],
                                {'a': BINARY * 50, 'b': DEV1})
    f['omp.ccob'] = llvm_bundle(['-type=bc', '-compress', '-compression-level=19', '-targets=' + ','.join(omp),
                                 '-input=a', '-input=b', '-input=c', '-input=d'],
                                {'a': H_I, 'b': DEV1, 'c': DEV2, 'd': BINARY})
    f['omp.i.ccob'] = llvm_bundle(['-type=i', '-compress', '-targets=' + ','.join(omp), '-input=a', '-input=b',
                                   '-input=c', '-input=d'], {'a': H_I, 'b': DEV1, 'c': DEV2, 'd': BINARY})
    for arch in ('x86_64-linux-gnu', 'i386-linux-gnu', 'powerpc64-linux-gnu', 'powerpc-linux-gnu',
                 'aarch64-linux-gnu', 'x86_64-pc-windows-msvc'):
        f['host-%s.o' % arch] = compile_object(arch)


# ---------------------------------------------------------------------------
# The matrix


# Types whose bundles LLVM makes by the same code as another type's (the same
# comment string, or the binary format): one round trip each shows the type
# is accepted; the full matrix runs for the type they share it with.
SAME_AS = {'ii': 'i', 'cui': 'i', 'hipi': 'i', 'd': 's', 'gch': 'bc', 'ast': 'bc'}


def bundle_round_trips():
    """Every type x target set x alignment: bundle, -list, unbundle all, unbundle a reordered subset
    (for the types in SAME_AS, one target set at alignment 1)."""
    n = 0
    for typ in TEXT_TYPES + BINARY_TYPES + ['o-devnull', 'o-text-host']:
        for set_name, targets in TARGET_SETS.items():
            if typ in SAME_AS and set_name != 'hiphost':
                continue
            aligns = [1, 16, 4096] if typ not in TEXT_TYPES else ([1, 16] if set_name == 'omp' else [1])
            if typ in SAME_AS:
                aligns = [1]
            for align in aligns:
                n += 1
                style = n % 4
                t = 'o' if typ.startswith('o-') else typ
                files, inputs = {}, []
                for i, _ in enumerate(targets):
                    name = 'in%d.%s' % (i, t)
                    files[name] = CONTENTS[(i + n) % len(CONTENTS)]
                    inputs.append(name)
                host = next((i for i, x in enumerate(targets) if x.startswith('host-')), None)
                if typ == 'o-devnull' and host is not None:
                    inputs[host] = '/dev/null'
                    del files['in%d.o' % host]
                out = 'bundle.' + t
                bundle = type_args(t, style) + target_args(targets, style) + file_args('input', inputs, style) + \
                    file_args('output', [out], style)
                if align != 1:
                    bundle += [['-bundle-align=%d' % align], ['--bundle-align', str(align)],
                               ['-bundle-align', str(align)]][n % 3]
                steps = [bundle, type_args(t, style + 1) + ['-list', '-input=' + out]]
                unb_out = ['out%d' % i for i in range(len(targets))]
                steps.append(type_args(t, style) + ['-unbundle'] + target_args(targets, style + 1) +
                             file_args('input', [out], style) + file_args('output', unb_out, style + 2))
                sub = list(reversed(targets))[:2]
                steps.append(['-type=' + t, '-unbundle', '-targets=' + ','.join(sub), '-input=' + out,
                              '-output=sub0', '-output=sub1'])
                diff_case('roundtrip %s %s align=%d' % (typ, set_name, align), steps, files,
                          list_sorted=t not in TEXT_TYPES)


def text_edge_cases():
    """Text bundles: contents with and without trailing newlines, empty, only newlines,
    a fake marker inside, CRLF; a marker at byte 0 without a preceding newline."""
    contents = {
        'nonl': b'abc', 'nl': b'abc\n', 'empty': b'', 'nl2': b'\n\n', 'crlf': b'a\r\nb\r\n',
        'fake-start': b'x\n// __CLANG_OFFLOAD_BUNDLE____START__ fake\ny\n',
        'fake-end': b'x\n// __CLANG_OFFLOAD_BUNDLE____END__ ' + HOST.encode() + b'-\ny\n',
        'hash-comment': b'# __CLANG_OFFLOAD_BUNDLE____END__ x\n',
    }
    for typ in TEXT_TYPES:
        for cname, c in contents.items():
            # a type that reads as another (SAME_AS: the same comment marker) shows it with two
            if typ in SAME_AS and cname not in ('nonl', 'fake-end'):
                continue
            for other in (b'', b'dev\n'):
                files = {'h': c, 'd': other}
                diff_case('text %s %s dev=%r' % (typ, cname, other),
                          [['-type=' + typ, '-targets=%s,openmp-x86_64-pc-linux-gnu' % HOST, '-input=h', '-input=d',
                            '-output=b'],
                           ['-type=' + typ, '-list', '-input=b'],
                           ['-type=' + typ, '-unbundle', '-targets=openmp-x86_64-pc-linux-gnu,' + HOST,
                            '-input=b', '-output=o1', '-output=o2']], files)
    # Hand-written text bundles read by both
    start, end = b'\n// __CLANG_OFFLOAD_BUNDLE____START__ ', b'\n// __CLANG_OFFLOAD_BUNDLE____END__ '
    h = HOST.encode() + b'-'
    hand = {
        'marker-at-0': start[1:] + h + b'\nabc' + end + h + b'\n',
        'no-newline-after-id': start + h,
        'trailing-garbage': start + h + b'\nabc' + end + h + b'\nrest of file',
        'end-without-newline': start + h + b'\nabc' + end + h,
        'two-same-id': start + h + b'\none' + end + h + b'\n' + start + h + b'\ntwo' + end + h + b'\n',
        'crlf-id': start + h + b'\r\nabc' + end + h + b'\r\n',
        'plain-text': b'int main() { return 0; }\n',
        'empty-file': b'',
    }
    # No end marker: LLVM 19 reads past the end of its buffer (outputs of random
    # size and content); offloadtool reports the truncated bundle.
    files = {'b': start + h + b'\nabc\n'}
    for argv in (['-type=i', '-list', '-input=b'],
                 ['-type=i', '-unbundle', '-targets=' + HOST, '-input=b', '-output=o1']):
        ours_case('text hand-made no-end-marker %s' % argv[1], [argv], files, clean_error(files, 'b'))
    for hname, data in hand.items():
        diff_case('text hand-made %s' % hname,
                  [['-type=i', '-list', '-input=b'],
                   ['-type=i', '-unbundle', '-targets=' + HOST, '-input=b', '-output=o1'],
                   ['-type=i', '-unbundle', '-targets=' + HOST, '-input=b', '-output=o2', '-allow-missing-bundles']],
                  {'b': data})


def binary_edge_cases():
    for typ in BINARY_TYPES + ['o']:
        for align in (1, 2, 3, 8, 16, 4096, 65536, '0x10', '010'):
            diff_case('binary %s align=%s empty inputs' % (typ, align),
                      [['-type=' + typ, '-bundle-align=%s' % align, '-targets=%s,hip-amdgcn-amd-amdhsa--gfx906' % HOST,
                        '-input=a', '-input=b', '-output=b.out'],
                       ['-type=' + typ, '-list', '-input=b.out'],
                       ['-type=' + typ, '-unbundle', '-targets=hip-amdgcn-amd-amdhsa--gfx906,' + HOST,
                        '-input=b.out', '-output=o1', '-output=o2']], {'a': b'', 'b': b''}, list_sorted=True)
    # StringMap order decides which requested target gets a bundle when several
    # are compatible; also duplicate-looking IDs
    diff_case('binary one bundle, two compatible requests',
              [['-type=bc', '-targets=hip-amdgcn-amd-amdhsa--gfx906', '-input=a', '-output=b.bc'],
               ['-type=bc', '-unbundle', '-allow-missing-bundles',
                '-targets=hip-amdgcn-amd-amdhsa--gfx906:xnack+,hip-amdgcn-amd-amdhsa--gfx906:xnack-',
                '-input=b.bc', '-output=o1', '-output=o2']], {'a': DEV1})
    # a bitcode file (not an object) as the host of -type=o
    bc = b'BC\xc0\xde' + bytes(60)
    diff_case('binary o with bitcode host',
              [['-type=o', '-targets=%s,openmp-x86_64-pc-linux-gnu' % HOST, '-input=h.bc', '-input=d', '-output=b.o'],
               ['-type=o', '-list', '-input=b.o'],
               ['-type=o', '-unbundle', '-targets=%s,openmp-x86_64-pc-linux-gnu' % HOST, '-input=b.o', '-output=o1',
                '-output=o2']], {'h.bc': bc, 'd': DEV1}, list_sorted=True)
    # the same input path twice, and an output that is also an input
    diff_case('binary same input twice',
              [['-type=bc', '-targets=%s,openmp-x86_64-pc-linux-gnu' % HOST, '-input=a', '-input=a', '-output=b']],
              {'a': DEV1})
    diff_case('binary output is the input',
              [['-type=bc', '-targets=%s,openmp-x86_64-pc-linux-gnu' % HOST, '-input=a', '-input=b', '-output=a'],
               ['-type=bc', '-list', '-input=a']], {'a': DEV1, 'b': DEV2}, list_sorted=True)
    diff_case('text output is the input',
              [['-type=i', '-targets=%s,openmp-x86_64-pc-linux-gnu' % HOST, '-input=a', '-input=b', '-output=a']],
              {'a': DEV1, 'b': DEV2})
    diff_case('stdin input',
              [{'argv': ['-type=i', '-targets=%s,openmp-x86_64-pc-linux-gnu' % HOST, '-input=-', '-input=b',
                         '-output=o'], 'stdin': b'from stdin\n'}], {'b': DEV2})
    diff_case('stdout output',
              [['-type=i', '-targets=%s,openmp-x86_64-pc-linux-gnu' % HOST, '-input=a', '-input=b', '-output=-']],
              {'a': DEV1, 'b': DEV2})
    diff_case('comma kept in -input',
              [['-type=bc', '-targets=' + HOST, '-input=a,b', '-output=o']], {'a,b': DEV1})
    diff_case('input path with spaces and unicode',
              [['-type=bc', '-targets=' + HOST, '-input=dir x/ä b', '-output=dir x/out'],
               ['-type=bc', '-list', '-input=dir x/out']], {'dir x/ä b': DEV1})
    # large-ish payload with alignment
    big = os.urandom(3 << 20)
    diff_case('binary 3 MiB payloads align 4096',
              [['-type=o', '-bundle-align=4096', '-targets=%s,hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa--gfx90a'
                % HOST, '-input=/dev/null', '-input=a', '-input=b', '-output=fat'],
               ['-type=o', '-unbundle', '-targets=hip-amdgcn-amd-amdhsa--gfx90a,hip-amdgcn-amd-amdhsa--gfx906,' + HOST,
                '-input=fat', '-output=o1', '-output=o2', '-output=o3']], {'a': big, 'b': big[:12345]})


def compatibility_cases():
    """Unbundling with targets that are compatible but spelled differently (2.14)."""
    requests = [
        ['hipv4-amdgcn-amd-amdhsa--gfx906'],
        ['hip-amdgcn-amd-amdhsa--gfx906:xnack+'],
        ['hip-amdgcn-amd-amdhsa--gfx906:xnack-'],
        ['hip-amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-'],
        ['hip-amdgcn-amd-amdhsa--gfx90a'],
        ['hip-amdgcn-amd-amdhsa--gfx90a:xnack-'],
        ['hip-amdgcn-amd-amdhsa--gfx90a:xnack+'],
        ['hip-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+'],
        ['hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+'],
        ['hip-amdgcn-amd-amdhsa--gfx908'],
        ['hip-amdgcn-amd-amdhsa--gfx908:xnack+'],
        ['openmp-amdgcn-amd-amdhsa--gfx906'],
        ['hip-amdgcn-amd-amdhsa--gfx1030'],
        ['hipv4-amdgcn-amd-amdhsa--gfx1030'],
        ['hip-amdgcn-amd-amdhsa-unknown-gfx906'],
        ['hip-amdgcn-amd-amdhsa--GFX906'],
        ['hip-amdgcn-amd-amdhsa--gfx942'],
        ['hip-amdgcn-amd-amdhsa--gfx942:xnack-'],
        ['hip-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-'],
        ['hip-amdgcn-amd-amdhsa--gfx942:xnack-:sramecc+'],
        ['hip-amdgcn-amd-amdhsa--gfx942:sramecc-:xnack-'],
        ['openmp-nvptx64-nvidia-cuda--sm_70'],
        ['openmp-nvptx64-nvidia-cuda--sm_80'],
        ['openmp-nvptx64-nvidia-cuda'],
        ['openmp-x86_64-unknown-linux-gnu'],
        ['openmp-x86_64-pc-linux-gnu'],
        ['host-x86_64-unknown-linux-gnu'],
        ['host-x86_64-unknown-linux'],
        ['host-x86_64-pc-linux-gnu'],
        ['hip-amdgcn-amd-amdhsa--gfx906', 'hipv4-amdgcn-amd-amdhsa--gfx906:xnack+'],
        ['hip-amdgcn-amd-amdhsa--gfx906:xnack+', 'hip-amdgcn-amd-amdhsa--gfx906:xnack-'],
        ['hip-amdgcn-amd-amdhsa--gfx1030', 'openmp-amdgcn-amd-amdhsa--gfx1030'],
        ['openmp-amdgcn-amd-amdhsa--gfx906', 'openmp-amdgcn-amd-amdhsa--gfx908', 'hip-amdgcn-amd-amdhsa--gfx1030'],
        [HOST, 'hip-amdgcn-amd-amdhsa--gfx1100', 'hip-amdgcn-amd-amdhsa--gfx1101', 'hip-amdgcn-amd-amdhsa--gfx1102'],
        ['hip-amdgcn-amd-amdhsa--gfx906:xnack+:xnack-'],
        ['hip-amdgcn-amd-amdhsa--gfx906:foo+'],
        ['hip-amdgcn-amd-amdhsa--gfx906:xnack'],
    ]
    # Which entries a request selects does not depend on the file type: every
    # request with every flag set on one type; the other types read their own
    # layouts, which every request without and with both flags shows.
    every_flag_set = ([], ['-hip-openmp-compatible'], ['-allow-missing-bundles'],
                      ['-allow-missing-bundles', '-hip-openmp-compatible'])
    for typ, fixture in (('bc', 'compat.bc'), ('i', 'compat.i'), ('o', 'compat.o')):
        for req in requests:
            for flags in (every_flag_set if typ == 'bc' else every_flag_set[::3]):
                outs = ['o%d' % i for i in range(len(req))]
                diff_case('compat %s %s %s' % (typ, ','.join(req), ' '.join(flags)),
                          [['-type=' + typ, '-unbundle', '-targets=' + ','.join(req), '-input=b'] +
                           ['-output=' + o for o in outs] + flags],
                          {'b': FIXTURES[fixture]})


def missing_bundles_cases():
    plain = b'this is not a bundle at all, just some bytes\n' * 3
    for typ in ('i', 'bc', 'o', 's'):
        for data_name, data in (('plain', plain), ('empty', b''), ('short', b'ab')):
            for targets in ([HOST], [HOST, 'openmp-x86_64-pc-linux-gnu'], ['openmp-x86_64-pc-linux-gnu'],
                            ['hip-amdgcn-amd-amdhsa--gfx906', 'hip-amdgcn-amd-amdhsa--gfx90a', 'openmp-x86_64-pc-linux-gnu']):
                outs = ['o%d' % i for i in range(len(targets))]
                for flags in ([], ['-allow-missing-bundles']):
                    diff_case('missing %s %s %s %s' % (typ, data_name, ','.join(targets), ' '.join(flags)),
                              [['-type=' + typ, '-unbundle', '-targets=' + ','.join(targets), '-input=x'] +
                               ['-output=' + o for o in outs] + flags,
                               ['-type=' + typ, '-list', '-input=x']], {'x': data})
    # some found, some not
    for fixture, typ in (('omp.bc', 'bc'), ('omp.i', 'i'), ('omp.ccob', 'bc'), ('hip.hipfb', 'o')):
        for targets in ([HOST, 'openmp-x86_64-pc-linux-gnu', 'hip-amdgcn-amd-amdhsa--gfx1100'],
                        ['openmp-powerpc64le-ibm-linux-gnu', 'hip-amdgcn-amd-amdhsa--gfx1100',
                         'hip-amdgcn-amd-amdhsa--gfx1101', 'openmp-x86_64-unknown-linux-gnu'],
                        ['hip-amdgcn-amd-amdhsa--gfx906', 'hip-amdgcn-amd-amdhsa--gfx90a', HOST]):
            outs = ['o%d' % i for i in range(len(targets))]
            for flags in ([], ['-allow-missing-bundles']):
                # Without -allow-missing-bundles LLVM writes the outputs it found and then fails;
                # offloadtool leaves no outputs after an error (see diff_case).
                diff_case('some found %s %s %s' % (fixture, ','.join(targets), ' '.join(flags)),
                          [['-type=' + typ, '-unbundle', '-targets=' + ','.join(targets), '-input=b'] +
                           ['-output=' + o for o in outs] + flags], {'b': FIXTURES[fixture]})


def compression_cases():
    omp = TARGET_SETS['omp']
    hh = TARGET_SETS['hiphost']
    payload = {'a': H_I, 'b': DEV1 * 100, 'c': BINARY * 20, 'd': EMPTY}
    for typ in ('i', 's', 'bc', 'gch', 'o-devnull'):
        t = 'o' if typ == 'o-devnull' else typ
        targets = hh if t == 'o' else omp
        inputs = ['/dev/null', 'b', 'c'] if t == 'o' else ['a', 'b', 'c', 'd']
        for level in (None, 1, 9, 19, -5, 0):
            for verbose in ([], ['-verbose']):
                lv = [] if level is None else ['-compression-level=%d' % level]
                steps = [['-type=' + t, '-compress', '-targets=' + ','.join(targets), '-output=c'] +
                         ['-input=' + i for i in inputs] + lv + verbose + (['-bundle-align=4096'] if t == 'o' else []),
                         ['-type=' + t, '-list', '-input=c'] + verbose,
                         ['-type=' + t, '-unbundle', '-targets=' + ','.join(targets), '-input=c'] +
                         ['-output=u%d' % i for i in range(len(targets))] + verbose]
                diff_case('compress %s level=%s %s' % (typ, level, ' '.join(verbose)), steps, payload,
                          list_sorted=t != 'i' and t != 's')
    # the level alone does not turn compression on; -compress=false / =0 / =true spellings
    for spelling in (['-compression-level=9'], ['-compress=false'], ['-compress=0'], ['-compress=true'],
                     ['-compress=1'], ['--compress'], ['-compress=TRUE'], ['-compress=False'],
                     ['-compress', '-compress=false']):
        diff_case('compress spelling %s' % ' '.join(spelling),
                  [['-type=bc', '-targets=' + ','.join(omp), '-output=c', '-input=a', '-input=b', '-input=c',
                    '-input=d'] + spelling], payload)
    # environment
    envs = [
        {'OFFLOAD_BUNDLER_COMPRESS': '1'},
        {'OFFLOAD_BUNDLER_COMPRESS': 'yes'},
        {'OFFLOAD_BUNDLER_COMPRESS': '0'},
        {'OFFLOAD_BUNDLER_COMPRESS': ''},
        {'OFFLOAD_BUNDLER_COMPRESS': '1', 'OFFLOAD_BUNDLER_COMPRESSION_LEVEL': '9'},
        {'OFFLOAD_BUNDLER_COMPRESS': '1', 'OFFLOAD_BUNDLER_COMPRESSION_LEVEL': 'abc'},
        {'OFFLOAD_BUNDLER_COMPRESS': '1', 'OFFLOAD_BUNDLER_COMPRESSION_LEVEL': '9x'},
        {'OFFLOAD_BUNDLER_COMPRESS': '1', 'OFFLOAD_BUNDLER_COMPRESSION_LEVEL': ''},
        {'OFFLOAD_BUNDLER_COMPRESS': '1', 'OFFLOAD_BUNDLER_COMPRESSION_LEVEL': '-3'},
        {'OFFLOAD_BUNDLER_COMPRESS': '1', 'OFFLOAD_BUNDLER_COMPRESSION_LEVEL': ' 7'},
        {'OFFLOAD_BUNDLER_COMPRESS': '1', 'OFFLOAD_BUNDLER_COMPRESSION_LEVEL': '+7'},
        {'OFFLOAD_BUNDLER_COMPRESS': '1', 'OFFLOAD_BUNDLER_COMPRESSION_LEVEL': '99999999999'},
        {'OFFLOAD_BUNDLER_COMPRESS': '1', 'OFFLOAD_BUNDLER_VERBOSE': '1'},
        {'OFFLOAD_BUNDLER_COMPRESS': '1', 'OFFLOAD_BUNDLER_VERBOSE': 'true'},
        {'OFFLOAD_BUNDLER_VERBOSE': '1'},
        {'OFFLOAD_BUNDLER_COMPRESS': '1', 'OFFLOAD_BUNDLER_IGNORE_ENV_VAR': '1'},
        {'OFFLOAD_BUNDLER_COMPRESS': '1', 'OFFLOAD_BUNDLER_IGNORE_ENV_VAR': '0'},
        {'OFFLOAD_BUNDLER_COMPRESS': '1', 'OFFLOAD_BUNDLER_IGNORE_ENV_VAR': 'yes'},
        {'OFFLOAD_BUNDLER_VERBOSE': '1', 'OFFLOAD_BUNDLER_COMPRESSION_LEVEL': 'abc', 'OFFLOAD_BUNDLER_IGNORE_ENV_VAR': '1'},
    ]
    for env in envs:
        for flags in ([], ['-compress=false'], ['-compress', '-compression-level=1'], ['-verbose=0'], ['-verbose']):
            name = 'env %s %s' % (' '.join('%s=%s' % kv for kv in sorted(env.items())), ' '.join(flags))
            diff_case(name,
                      [{'argv': ['-type=bc', '-targets=' + ','.join(omp), '-output=c', '-input=a', '-input=b',
                                 '-input=c', '-input=d'] + flags, 'env': env},
                       {'argv': ['-type=bc', '-list', '-input=c'] + flags, 'env': env},
                       {'argv': ['-type=bc', '-unbundle', '-targets=' + HOST, '-input=c', '-output=u'] + flags,
                        'env': env}], payload, list_sorted=True)
    # LLVM prints hashes with format_hex(h, 16): "0x" and at least 14 digits, so a
    # hash below 2^60 has no leading zero; find a payload whose bundle hashes so.
    n = 0
    while True:
        content = b'payload %d\n' % n
        ident = HOST.encode() + b'-'
        bundle = b'__CLANG_OFFLOAD_BUNDLE__' + struct.pack('<QQQQ', 1, 56 + len(ident), len(content),
                                                         len(ident)) + ident + content
        if md5_low(bundle)[7] < 0x10:
            break
        n += 1
    diff_case('compress hash below 2^60 printed',
              [['-type=bc', '-compress', '-verbose', '-targets=' + HOST, '-input=a', '-output=c'],
               ['-type=bc', '-list', '-verbose', '-input=c'],
               ['-type=bc', '-unbundle', '-verbose', '-targets=' + HOST, '-input=c', '-output=u']], {'a': content})
    # COMPRESSED_BUNDLE_FORMAT_VERSION (LLVM 20+; LLVM 19 ignores it): offloadtool
    # follows LLVM 20 as the issue asks - version 3 on request, LLVM 20's warnings.
    for value in ('2', '3', '4', 'x', ''):
        files = dict(payload)
        argv = ['-type=bc', '-compress', '-targets=' + ','.join(omp), '-output=c', '-input=a', '-input=b', '-input=c',
                '-input=d']
        if value == '2' or R22:  # LLVM 22 reads the variable itself: compared as it is
            diff_case('env COMPRESSED_BUNDLE_FORMAT_VERSION=%s' % value,
                      [{'argv': argv, 'env': {'COMPRESSED_BUNDLE_FORMAT_VERSION': value}}], files)
            continue

        def check(results, work, value=value):
            rc, out, err = results[0]
            if rc != 0 or out:
                return 'bundling failed'
            want_err = {'3': b'',
                        '4': b'Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: 4. Valid values are 2 or 3. '
                             b'Using default version 2.\n',
                        'x': b'Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: x. Using default version 2.\n',
                        '': b'Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: . Using default version 2.\n'}
            if err != want_err[value]:
                return 'unexpected stderr'
            data = work.files()['c']
            version = 3 if value == '3' else 2
            if data[:6] != b'CCOB' + struct.pack('<H', version):
                return 'expected a version %d CCOB header, got %r' % (version, data[:8])
            if version == 3 and struct.unpack('<Q', data[8:16])[0] != len(data):
                return 'v3 total size field is not the file size'
            if results[1][0] != 0 or sorted(results[1][1].split()) != sorted(OMP_STANDARD):
                return '-list of the result failed: %r' % (results[1],)
            if results[2][0] != 0 or b'Compressed bundle format version: %d\n' % version not in results[2][2]:
                return 'verbose unbundling does not report version %d' % version
            if work.files()['u'] != H_I:
                return 'unbundled host differs'
            return None
        ours_case('env COMPRESSED_BUNDLE_FORMAT_VERSION=%s' % value,
                  [{'argv': argv, 'env': {'COMPRESSED_BUNDLE_FORMAT_VERSION': value}},
                   ['-type=bc', '-list', '-input=c'],
                   ['-type=bc', '-unbundle', '-verbose', '-targets=' + HOST, '-input=c', '-output=u']], files, check)
    # -verbose on uncompressed inputs: "Uncompressed bundle." only for inputs of 20 bytes or more
    for size in (0, 19, 20, 100):
        diff_case('verbose uncompressed input of %d bytes' % size,
                  [['-type=bc', '-unbundle', '-verbose', '-allow-missing-bundles', '-targets=' + HOST, '-input=x',
                    '-output=u'],
                   ['-type=bc', '-list', '-verbose', '-input=x']], {'x': b'z' * size})


def large_compression_case(name, sizes_mib, align=4096):
    """A compressed bundle over offloadtool's in-memory limit (64 MiB), which it
    lays out in a scratch file (inputs starting on a page mapped into it, the
    others copied) and compresses from its mapping: LLVM compresses the whole
    bundle in one call; the bytes must still be the same. Files stay on disk
    (hard links, no copies in memory). `sizes_mib`: the images' sizes in MiB
    (floats); `align`: -bundle-align."""
    if not selected(name):
        return
    count = len(sizes_mib)

    index = len(CASES)

    def run():
        src = os.path.join(SCRATCH, 'large%d' % index)
        os.makedirs(src)
        half, quarter = 1 << 19, 1 << 18
        rng = random.Random(1)  # seed 1 made offloadtool 0.1.0's output differ
        for i, size in enumerate(sizes_mib):
            prev = rng.randbytes(quarter)
            with open(os.path.join(src, 'img%d' % i), 'wb') as f:
                for _ in range(int(size)):
                    fresh = rng.randbytes(half)
                    f.write(fresh + bytes(quarter) + prev)
                    prev = fresh[:quarter]
                f.write(rng.randbytes(int((size - int(size)) * (1 << 20))))
        targets = '-targets=' + ','.join([HOST] + ['hip-amdgcn-amd-amdhsa--gfx%s' % a for a in ('906', '908', '90a', '1030')][:count])
        argv = ['-type=o', '-bundle-align=%d' % align, '-compress', targets, '-input=/dev/null'] + \
            ['-input=img%d' % i for i in range(count)] + ['-output=fat']
        works, results = [], []
        for side in (LLVM, OURS):
            w = side.workdir(index)
            w.prepare({})
            for i in range(count):
                os.link(os.path.join(src, 'img%d' % i), os.path.join(w.case, 'img%d' % i))
            results.append(run_step(w, {'argv': argv}))
            works.append(w)
        problem = None
        if [r[0] for r in results] != [0, 0]:
            problem = 'bundling failed: %r' % ([r[2] for r in results],)
        else:
            a, b = (os.path.join(w.case, 'fat') for w in works)
            if not harness.same_file(a, b):
                with open(a, 'rb') as fa, open(b, 'rb') as fb:
                    ha, hb = fa.read(24), fb.read(24)
                problem = 'compressed bundles differ: LLVM %d bytes (header %s), offloadtool %d bytes (header %s)' % (
                    os.path.getsize(a), ha.hex(), os.path.getsize(b), hb.hex())
        if problem is None:
            # Unbundling it: over offloadtool's in-memory limit (64 MiB), so it decompresses
            # through a scratch file; the images must equal LLVM's and nothing may be left.
            unbundle = ['-type=o', '-unbundle', targets, '-input=fat'] + ['-output=u%d' % i for i in range(count + 1)]
            res = [run_step(w, {'argv': unbundle}) for w in works]
            if [r[0] for r in res] != [0, 0]:
                problem = 'unbundling failed: %r' % ([r[2] for r in res],)
            else:
                for i in range(count + 1):
                    a, b = (os.path.join(w.case, 'u%d' % i) for w in works)
                    if not harness.same_file(a, b):
                        problem = 'unbundled u%d differs' % i
                leftovers = [f for f in os.listdir(works[1].case) if 'scratch' in f or f.startswith('.')]
                if leftovers:
                    problem = 'offloadtool left %s' % leftovers
        for w in works:
            w.cleanup()
        shutil.rmtree(src, ignore_errors=True)
        return problem, None

    CASES.append((name, run))


def decompression_cases():
    """CCOB files LLVM 19 reads: its own v2 zstd, and hand-made v1/v2 with zlib and zstd."""
    for fixture, typ in (('hip.ccob', 'o'), ('omp.ccob', 'bc'), ('omp.i.ccob', 'i')):
        for verbose in ([], ['-verbose']):
            targets = TARGET_SETS['hiphost'] if typ == 'o' else TARGET_SETS['omp']
            diff_case('decompress %s %s' % (fixture, ' '.join(verbose)),
                      [['-type=' + typ, '-list', '-input=c'] + verbose,
                       ['-type=' + typ, '-unbundle', '-targets=' + ','.join(targets), '-input=c'] +
                       ['-output=u%d' % i for i in range(len(targets))] + verbose],
                      {'c': FIXTURES[fixture]}, list_sorted=typ != 'i')
    plain = FIXTURES['omp.bc']
    zl = zlib.compress(plain, 6)
    zstd_frame = FIXTURES['omp.ccob'][24:]
    plain_zstd = plain  # omp.ccob wraps exactly omp.bc's bytes
    crafted = {
        'v1 zlib': ccob(1, 0, zl, plain),
        'v2 zlib': ccob(2, 0, zl, plain),
        'v2 zlib level 9': ccob(2, 0, zlib.compress(plain, 9), plain),
        'v1 zstd': ccob(1, 1, zstd_frame, plain_zstd),
        'v2 hash mismatch': ccob(2, 1, zstd_frame, plain_zstd, hash_=b'\x01' * 8),
        'v2 zlib hash mismatch': ccob(2, 0, zl, plain, hash_=b'\x00' * 8),
        'v2 of a non-bundle': ccob(2, 0, zlib.compress(b'garbage'), b'garbage'),
        'v2 of an empty file': ccob(2, 0, zlib.compress(b''), b''),
        # errors LLVM 19 reports itself: offloadtool prints the same text
        'corrupted zstd data': ccob(2, 1, zstd_frame[:20] + bytes(30) + zstd_frame[50:], plain),
        'corrupted zstd frame header': ccob(2, 1, b'\x28\xb5\x2f\xfd\xff' + zstd_frame[5:], plain),
        'corrupted zlib data': ccob(2, 0, zl[:10] + b'\xff' * 20 + zl[30:], plain),
        'truncated zstd data': ccob(2, 1, zstd_frame[:-10], plain, total=24 + len(zstd_frame) - 10),
        'truncated zlib data': ccob(2, 0, zl[:-10], plain, total=24 + len(zl) - 10),
        'uncompressed size too small': ccob(2, 1, zstd_frame, plain, usize=len(plain) - 1),
        'zlib uncompressed size too small': ccob(2, 0, zl, plain, usize=len(plain) - 1),
        'header too short for v2': b'CCOB\x02\x00\x01\x00' + bytes(14),
        'unknown method': ccob(2, 7, zstd_frame, plain),
    }
    for name, data in crafted.items():
        for verbose in ([], ['-verbose']):
            diff_case('decompress crafted %s %s' % (name, ' '.join(verbose)),
                      [['-type=bc', '-list', '-input=c'] + verbose,
                       ['-type=bc', '-unbundle', '-targets=' + ','.join(TARGET_SETS['omp']), '-input=c'] +
                       ['-output=u%d' % i for i in range(4)] + verbose], {'c': data}, list_sorted=True)
    # Two concatenated CCOBs: LLVM 19 feeds everything after the first header to zstd
    # and fails ("Src size is incorrect"); offloadtool stops at the first header's
    # total size, so it reads (at least) the first bundle -- as LLVM 20+ does.
    data = FIXTURES['omp.ccob'] + FIXTURES['omp.ccob']

    def reads_first(results, work):
        rc, out = results[0][:2]
        if rc != 0:
            return 'expected exit 0, got %s' % rc
        if len(out.decode().split()) != len(TARGET_SETS['omp']):
            return 'expected the first bundle\'s IDs, got %r' % out
        return None
    if R23:  # 23 reads them both (several bundles in one input)
        diff_case('decompress crafted two concatenated ccobs', [['-type=bc', '-list', '-input=c']], {'c': data},
                  list_sorted=True)
    else:
        ours_case('decompress crafted two concatenated ccobs', [['-type=bc', '-list', '-input=c']], {'c': data},
                  reads_first)
    # Uncompressed bundles one after another (a linked .hip_fatbin section): the
    # personality reads the first, exactly as LLVM 19 (the native applets read all).
    two = FIXTURES['omp.bc'] + b'\0' * 13 + FIXTURES['omp.bc']
    diff_case('two concatenated uncompressed bundles',
              [['-type=bc', '-list', '-input=c'],
               ['-type=bc', '-unbundle', '-targets=' + ','.join(TARGET_SETS['omp']), '-input=c'] +
               ['-output=u%d' % i for i in range(4)]], {'c': two}, list_sorted=True)
    # a CCOB shorter than 20 bytes is not considered compressed by LLVM 19
    for n in (4, 8, 19):
        diff_case('ccob magic in %d-byte file' % n,
                  [['-type=bc', '-list', '-input=c'],
                   ['-type=bc', '-unbundle', '-targets=' + HOST, '-input=c', '-output=u', '-allow-missing-bundles']],
                  {'c': (b'CCOB\x02\x00\x01\x00' + bytes(16))[:n]})


def malformed_cases():
    """Bad input offloadtool reports as an error naming the file (and offset)
    where LLVM 19 silently lists nothing, keeps what it read so far, misreads or
    crashes. LLVM's behaviour is recorded (BUNDLER_DIFF_VERBOSE=1), not compared."""
    good = FIXTURES['omp.bc']
    magic = b'__CLANG_OFFLOAD_BUNDLE__'

    def entry(off, size, ident):
        return struct.pack('<QQQ', off, size, len(ident)) + ident

    def header(*entries):
        return magic + struct.pack('<Q', len(entries)) + b''.join(entries)

    h = HOST.encode() + b'-'
    base_len = len(header(entry(0, 0, h)))
    bad = {
        'truncated magic+count': magic + b'\x01\x00\x00',
        'truncated entry table': good[:40],
        'truncated id': good[:60],
        'count too large': magic + struct.pack('<Q', 1 << 60) + entry(base_len, 1, h),
        'id length past end': magic + struct.pack('<QQQQ', 1, base_len, 1, 1 << 40) + h,
        'payload past end': header(entry(base_len, 1000, h)) + b'x',
        'payload offset past end': header(entry(1 << 40, 1, h)),
        'offset+size overflows': header(entry(base_len, (1 << 64) - 1, h)) + b'x',
        'offset zero': header(entry(0, 1, h)) + b'x',
        'payload overlaps header': header(entry(8, 4, h)) + b'x',
        'duplicate ids': header(entry(base_len * 2, 1, h), entry(base_len * 2 + 1, 1, h)) + b'xy',
        'truncated good bundle': good[:-3],
    }
    for name, data in bad.items():
        for op in ('list', 'unbundle'):
            argv = ['-type=bc', '-list', '-input=bad.bc'] if op == 'list' else \
                ['-type=bc', '-unbundle', '-targets=' + HOST, '-input=bad.bc', '-output=u', '-allow-missing-bundles']
            files = {'bad.bc': data}
            ours_case('malformed binary %s %s' % (name, op), [argv], files, clean_error(files, 'bad.bc'))
    zstd_frame = FIXTURES['omp.ccob'][24:]
    plain = FIXTURES['omp.bc']
    zl = zlib.compress(plain, 6)
    bad_ccob = {
        # LLVM 19 reads any version below 2 as v1 and anything else as v2; LLVM 20+ and
        # offloadtool know versions 1-3 only
        'version 0': ccob(0, 1, zstd_frame, plain),
        'unknown version 9': ccob(9, 1, zstd_frame, plain),
        # lying sizes LLVM 19 ignores or trusts
        'total size past end': ccob(2, 1, zstd_frame, plain, total=24 + len(zstd_frame) + 100),
        'total size too small': ccob(2, 1, zstd_frame, plain, total=30),
        'total size inside header': ccob(2, 1, zstd_frame, plain, total=10),
        'zlib total size past end': ccob(2, 0, zl, plain, total=len(zl) + 24 + 7),
        'v3 total size past end': ccob(3, 1, zstd_frame, plain, total=32 + len(zstd_frame) + 1),
        'uncompressed size too large': ccob(2, 1, zstd_frame, plain, usize=len(plain) + 1),
        'uncompressed size huge': ccob(2, 1, zstd_frame, plain, usize=0xffffffff),
        'v3 uncompressed size 2^60': ccob(3, 1, zstd_frame, plain, usize=1 << 60),
        'v1 uncompressed size huge': ccob(1, 1, zstd_frame, plain, usize=0xffffffff),
        'empty zstd payload': ccob(2, 1, b'', plain),
    }
    for name, data in bad_ccob.items():
        for op in ('list', 'unbundle'):
            argv = ['-type=bc', '-list', '-input=bad.ccob'] if op == 'list' else \
                ['-type=bc', '-unbundle', '-targets=' + HOST, '-input=bad.ccob', '-output=u', '-allow-missing-bundles']
            files = {'bad.ccob': data}
            # header errors name the file and offset; a declared size the data does not
            # match is reported inside LLVM's own "Failed to decompress input: ..." wording
            mention = None if 'uncompressed size' in name or 'payload' in name else 'bad.ccob'
            ours_case('malformed ccob %s %s' % (name, op), [argv], files, clean_error(files, mention))
    # hash mismatch: LLVM 19 only reports it under -verbose ("Hashes match: No") and goes on
    # (compared in decompression_cases).


def object_cases():
    """-type=o with a real host object. offloadtool writes the fat object itself
    (no llvm-objcopy), so its bytes differ from LLVM's: objects are compared by
    object_summary, device outputs byte for byte, and LLVM's bundler must read
    offloadtool's fat object exactly as it reads its own."""
    devs = {'d1': DEV1, 'd2': BINARY * 7, 'd3': EMPTY, 'd4': b'\x00'}
    for arch in ('x86_64-linux-gnu', 'i386-linux-gnu', 'powerpc64-linux-gnu', 'powerpc-linux-gnu',
                 'aarch64-linux-gnu', 'x86_64-pc-windows-msvc'):
        host = FIXTURES['host-%s.o' % arch]
        files = dict(devs, **{'h.o': host})
        for tset in (['hip-amdgcn-amd-amdhsa--gfx906', 'openmp-powerpc64le-ibm-linux-gnu'],
                     ['openmp-x86_64-pc-linux-gnu', 'openmp-nvptx64-nvidia-cuda--sm_70', 'hip-amdgcn-amd-amdhsa--gfx90a:xnack+',
                      'openmp-amdgcn-amd-amdhsa--gfx1030']):
            for host_pos in (0, len(tset)):
                targets = tset[:host_pos] + [HOST] + tset[host_pos:]
                inputs = ['d%d' % (i + 1) for i in range(len(tset))]
                inputs = inputs[:host_pos] + ['h.o'] + inputs[host_pos:]
                outs = ['u%d' % i for i in range(len(targets))]
                louts = ['l%d' % i for i in range(len(targets))]
                bundle = ['-type=o', '-targets=' + ','.join(targets), '-output=fat.o'] + ['-input=' + i for i in inputs]
                ours_list = ['-type=o', '-list', '-input=fat.o']
                ours_unbundle = ['-type=o', '-unbundle', '-targets=' + ','.join(targets), '-input=fat.o'] + \
                    ['-output=' + o for o in outs]
                # LLVM's own bundler reads each side's fat object (on our side: offloadtool's)
                llvm_list = {'argv': ['-type=o', '-list', '-input=fat.o'], 'tool': 'llvm'}
                llvm_unbundle = {'argv': ['-type=o', '-unbundle', '-targets=' + ','.join(reversed(targets)),
                                          '-input=fat.o'] + ['-output=' + o for o in louts], 'tool': 'llvm'}
                steps = [bundle, ours_list, ours_unbundle, llvm_list, llvm_unbundle,
                         ['-type=o', '-unbundle', '-targets=' + tset[-1], '-input=fat.o', '-output=single'],
                         ['-type=o', '-unbundle', '-targets=hip-amdgcn-amd-amdhsa--gfx1100,' + HOST,
                          '-input=fat.o', '-output=m1', '-output=m2', '-allow-missing-bundles']]
                name = 'object %s host@%d %d targets' % (arch, host_pos, len(targets))
                if arch.endswith('windows-msvc') and len(tset) > 2:
                    # LLVM 19's llvm-objcopy cannot read back a COFF object it gave an empty section
                    # ("The end of the file was unexpectedly encountered"), so LLVM cannot unbundle the
                    # host from its own fat object here; compare without the empty input.
                    diff_case(name + ' (no empty input)', steps, dict(files, d3=b'not empty\n'), objects='*')
                else:
                    diff_case(name, steps, files, objects='*')
                # offloadtool's fat object read by both: the same IDs in the same order, the
                # same device payloads, and host objects with the host input's contents.
                ours_case(name + ': read back', [bundle, ours_list, llvm_list, ours_unbundle, llvm_unbundle], files,
                          lambda r, work, t=targets, hp=host_pos, a=arch: read_back(r, work, t, hp, a), llvm_note=False)
        # -### prints the llvm-objcopy commands LLVM would run and runs nothing; the
        # output is left empty. offloadtool prints a fixed temp name (masked here).
        for prog in (PROG, PROG2):
            diff_case('object %s -### via %s' % (arch, prog),
                      [{'argv': ['-type=o', '-###', '-targets=%s,hip-amdgcn-amd-amdhsa--gfx906,openmp-x86_64-pc-linux-gnu'
                                 % HOST, '-input=h.o', '-input=d1', '-input=d2', '-output=fat.o'], 'prog': prog},
                       ['-type=o', '-targets=%s,hip-amdgcn-amd-amdhsa--gfx906' % HOST, '-input=h.o', '-input=d1',
                        '-output=fat2.o'],
                       {'argv': ['-type=o', '-###', '-unbundle', '-targets=hip-amdgcn-amd-amdhsa--gfx906,' + HOST,
                                 '-input=fat2.o', '-output=u1', '-output=u2'], 'prog': prog}],
                      files, objects='*')
        # compression of -type=o object bundles has no effect (LLVM compresses an empty buffer that objcopy overwrites)
        diff_case('object %s -compress' % arch,
                  [['-type=o', '-compress', '-verbose', '-targets=%s,hip-amdgcn-amd-amdhsa--gfx906' % HOST,
                    '-input=h.o', '-input=d1', '-output=fat.o'],
                   ['-type=o', '-list', '-input=fat.o']], files, objects='*')
        # a fat object made by LLVM (objcopy), unbundled by both
        diff_case('object %s LLVM-made fat object' % arch,
                  [{'argv': ['-type=o', '-targets=%s,hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa--gfx90a'
                             % HOST, '-input=h.o', '-input=d1', '-input=d2', '-output=fat.o'], 'tool': 'llvm'},
                   ['-type=o', '-list', '-input=fat.o'],
                   ['-type=o', '-unbundle', '-targets=hip-amdgcn-amd-amdhsa--gfx90a,hip-amdgcn-amd-amdhsa--gfx906,' +
                    HOST, '-input=fat.o', '-output=u1', '-output=u2', '-output=u3']], files, objects='*')
        # an object without bundles
        for flags in ([], ['-allow-missing-bundles']):
            diff_case('object %s no bundles %s' % (arch, ' '.join(flags)),
                      [['-type=o', '-list', '-input=h.o'],
                       ['-type=o', '-unbundle', '-targets=%s,hip-amdgcn-amd-amdhsa--gfx906' % HOST, '-input=h.o',
                        '-output=u1', '-output=u2'] + flags], files)
        # HIP-only -type=o with an object as input 0: LLVM 19 segfaults; offloadtool refuses cleanly.
        ours_case('object %s HIP-only with object input' % arch,
                  [['-type=o', '-targets=hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa--gfx90a',
                    '-input=h.o', '-input=d1', '-output=fat.o']], files, clean_error(files))


def read_back(results, work, targets, host_pos, arch):
    """Steps: ours bundle, ours -list, LLVM -list, ours unbundle (u*), LLVM unbundle
    in reverse target order (l*), all on offloadtool's fat object."""
    for i, r in enumerate(results[:4]):
        if r[0] != 0:
            return 'step %d failed' % i
    if results[1][1] != results[2][1]:
        return '-list differs: ours %r, LLVM %r' % (results[1][1], results[2][1])
    files = work.files()
    n = len(targets)
    sumdir = harness.Folder(SCRATCH).dir
    try:
        want = object_summary(files['h.o'], sumdir)
        got = object_summary(files['u%d' % host_pos], sumdir)
        if got != want:
            return 'our host output differs from h.o: %s' % (
                [x for x in got if x not in want] + ['--'] + [x for x in want if x not in got])
        if results[4][0] != 0:
            # LLVM 19's llvm-objcopy cannot read back COFF objects with an empty section
            if not (arch.endswith('windows-msvc') and b"'llvm-objcopy' tool failed" in results[4][2]):
                return 'LLVM cannot unbundle our fat object: %s' % results[4][2].decode(errors='replace')
        else:
            lhost = files['l%d' % (n - 1 - host_pos)]
            got = object_summary(lhost, sumdir)
            if got != want:
                return "LLVM's host output from our fat object differs from h.o: %s" % (
                    [x for x in got if x not in want] + ['--'] + [x for x in want if x not in got])
            for i in range(n):
                u, l = files['u%d' % i], files['l%d' % (n - 1 - i)]
                if i == host_pos or u == l:
                    continue
                # a device payload of exactly one zero byte is the host marker to both tools
                if is_object(u) and is_object(l) and object_summary(u, sumdir) == object_summary(l, sumdir):
                    continue
                return 'device output for %s differs between offloadtool and LLVM' % targets[i]
        return None
    finally:
        shutil.rmtree(sumdir, ignore_errors=True)


def cli_cases():
    """Option parsing and the validation of reference 2.2, in LLVM's order."""
    base = {'h.i': H_I, 'd.i': DEV1, 'o.i': FIXTURES['omp.i'], 'b.bc': FIXTURES['omp.bc'], 'dir': 'dir'}
    omp2 = '-targets=%s,openmp-x86_64-pc-linux-gnu' % HOST
    cmds = {
        'no args': [],
        'type only': ['-type=i'],
        'no type': ['-targets=' + HOST, '-input=h.i', '-output=x'],
        'no targets': ['-type=i', '-input=h.i', '-output=x'],
        'no input': ['-type=i', '-targets=' + HOST, '-output=x'],
        'no output': ['-type=i', '-targets=' + HOST, '-input=h.i'],
        'empty targets': ['-type=i', '-targets=', '-input=h.i', '-output=x'],
        'empty target in list': ['-type=i', '-targets=%s,' % HOST, '-input=h.i', '-input=d.i', '-output=x'],
        'inputs != targets': ['-type=i', '-targets=' + HOST, '-input=h.i', '-input=d.i', '-output=x'],
        'two outputs bundling': ['-type=i', omp2, '-input=h.i', '-input=d.i', '-output=x', '-output=y'],
        'invalid type': ['-type=zz', '-targets=' + HOST, '-input=h.i', '-output=x'],
        'invalid type after target errors': ['-type=zz', '-targets=bad-target', '-input=h.i', '-output=x'],
        'invalid type unbundle': ['-type=zz', '-unbundle', '-targets=' + HOST, '-input=h.i', '-output=x'],
        'invalid type list': ['-type=zz', '-list', '-input=h.i'],
        'type a bundling': ['-type=a', '-targets=' + HOST, '-input=h.i', '-output=x'],
        'invalid kind and triple': ['-type=i', '-targets=hxst-powerpcxxle-ibm-linux-gnu', '-input=h.i', '-output=x'],
        'invalid kind': ['-type=i', '-targets=cuda-nvptx64-nvidia-cuda-sm_70', '-input=h.i', '-output=x'],
        'invalid triple': ['-type=i', '-targets=host-foo-bar-linux', '-input=h.i', '-output=x'],
        'invalid target no dash': ['-type=i', '-targets=host', '-input=h.i', '-output=x'],
        'invalid second target': ['-type=i', '-targets=%s,openmp-bogus' % HOST, '-input=h.i', '-input=d.i',
                                  '-output=x'],
        'kind case': ['-type=i', '-targets=HOST-x86_64-unknown-linux-gnu', '-input=h.i', '-output=x'],
        'no host': ['-type=i', '-targets=openmp-x86_64-pc-linux-gnu', '-input=h.i', '-output=x'],
        'two hosts': ['-type=i', '-targets=host-x86_64-pc-linux-gnu,' + HOST, '-input=h.i', '-input=d.i',
                      '-output=x'],
        'two hosts unbundling': ['-type=i', '-unbundle', '-targets=host-x86_64-pc-linux-gnu,' + HOST,
                                 '-input=o.i', '-output=x', '-output=y'],
        'no host unbundling': ['-type=i', '-unbundle', '-targets=openmp-x86_64-pc-linux-gnu', '-input=o.i',
                               '-output=x'],
        'hip and openmp without host': ['-type=i', '-targets=hip-amdgcn-amd-amdhsa--gfx906,openmp-x86_64-pc-linux-gnu',
                                        '-input=h.i', '-input=d.i', '-output=x'],
        'hip only text': ['-type=i', '-targets=hip-amdgcn-amd-amdhsa--gfx906,hipv4-amdgcn-amd-amdhsa--gfx90a',
                          '-input=h.i', '-input=d.i', '-output=x'],
        'duplicate targets': ['-type=i', '-targets=%s,%s' % (HOST, HOST), '-input=h.i', '-input=h.i', '-output=x'],
        'duplicate after standardisation': ['-type=i', '-targets=%s,%s-' % (HOST, HOST), '-input=h.i', '-input=d.i',
                                            '-output=x'],
        'duplicate before invalid': ['-type=i', '-targets=bad-x,bad-x', '-input=h.i', '-input=h.i', '-output=x'],
        'conflicting target ids': ['-type=bc', '-targets=hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa--gfx906:xnack+',
                                   '-input=h.i', '-input=d.i', '-output=x'],
        'conflicting target ids sramecc/xnack': ['-type=bc', '-targets=hip-amdgcn-amd-amdhsa--gfx906:sramecc+,'
                                                 'hip-amdgcn-amd-amdhsa--gfx906:xnack+', '-input=h.i', '-input=d.i',
                                                 '-output=x'],
        'non-conflicting xnack+/-': ['-type=bc', '-targets=hip-amdgcn-amd-amdhsa--gfx906:xnack-,'
                                     'hip-amdgcn-amd-amdhsa--gfx906:xnack+', '-input=h.i', '-input=d.i', '-output=x'],
        'asymmetric conflict': ['-type=bc', '-targets=hip-amdgcn-amd-amdhsa--gfx906:sramecc+:xnack+,'
                                'hip-amdgcn-amd-amdhsa--gfx906:xnack-', '-input=h.i', '-input=d.i', '-output=x'],
        'conflict in unbundling': ['-type=bc', '-unbundle', '-targets=hip-amdgcn-amd-amdhsa--gfx906,'
                                   'hip-amdgcn-amd-amdhsa--gfx906:xnack+', '-input=b.bc', '-output=x', '-output=y'],
        'conflict across groups': ['-type=bc', '-targets=hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa--gfx906:xnack+,'
                                   'openmp-amdgcn-amd-amdhsa--gfx908,openmp-amdgcn-amd-amdhsa--gfx908:sramecc-',
                                   '-input=h.i', '-input=d.i', '-input=h.i', '-input=d.i', '-output=x'],
        'conflict with hipv4 is another group': ['-type=bc', '-targets=hip-amdgcn-amd-amdhsa--gfx906,'
                                                 'hipv4-amdgcn-amd-amdhsa--gfx906:xnack+', '-input=h.i', '-input=d.i',
                                                 '-output=x'],
        'unbundle two inputs': ['-type=bc', '-unbundle', omp2, '-input=h.i', '-input=d.i', '-output=x', '-output=y'],
        'unbundle outputs != targets': ['-type=bc', '-unbundle', omp2, '-input=b.bc', '-output=x'],
        'unbundle missing input': ['-type=bc', '-unbundle', '-targets=' + HOST, '-input=nonexist', '-output=x'],
        'missing input': ['-type=i', '-targets=' + HOST, '-input=nonexist', '-output=x'],
        'missing second input': ['-type=i', omp2, '-input=h.i', '-input=nonexist', '-output=x'],
        'input is a directory': ['-type=i', '-targets=' + HOST, '-input=dir', '-output=x'],
        'output is a directory': ['-type=i', '-targets=' + HOST, '-input=h.i', '-output=dir'],
        'output in missing directory': ['-type=i', '-targets=' + HOST, '-input=h.i', '-output=nodir/x'],
        'unbundle output is a directory': ['-type=i', '-unbundle', '-targets=' + HOST, '-input=o.i', '-output=dir'],
        'list two inputs': ['-type=i', '-list', '-input=o.i', '-input=o.i'],
        'list no input': ['-type=i', '-list'],
        'list with output': ['-type=i', '-list', '-input=o.i', '-output=x'],
        'list with targets': ['-type=i', '-list', '-input=o.i', '-targets=' + HOST],
        'list and unbundle': ['-type=i', '-list', '-unbundle', '-input=o.i'],
        'list and unbundle and two inputs': ['-type=i', '-list', '-unbundle', '-input=o.i', '-input=h.i'],
        'list missing file': ['-type=i', '-list', '-input=nonexist'],
        'list directory': ['-type=i', '-list', '-input=dir'],
        'list without type': ['-list', '-input=o.i'],
        'list text': ['-type=i', '-list', '-input=o.i'],
        'list text as s': ['-type=s', '-list', '-input=o.i'],
        'list binary as text': ['-type=i', '-list', '-input=b.bc'],
        'list text as binary': ['-type=bc', '-list', '-input=o.i'],
        'check-input-archive bundling': ['-type=bc', '-check-input-archive', '-targets=' + HOST, '-input=h.i',
                                         '-output=x'],
        'check-input-archive not archive': ['-type=bc', '-check-input-archive', '-unbundle', '-targets=' + HOST,
                                            '-input=h.i', '-output=x'],
        'check-input-archive no output': ['-type=bc', '-check-input-archive', '-targets=' + HOST, '-input=h.i'],
        'check-input-archive with list': ['-type=bc', '-check-input-archive', '-list', '-input=b.bc'],
        'inputs and input': ['-type=i', '-targets=' + HOST, '-input=h.i', '-inputs=d.i', '-output=x'],
        'outputs and output': ['-type=i', '-targets=' + HOST, '-input=h.i', '-outputs=y', '-output=x'],
        'deprecated inputs': ['-type=i', '-targets=' + HOST, '-inputs=h.i', '-output=x.i'],
        'deprecated outputs': ['-type=i', '-targets=' + HOST, '-input=h.i', '-outputs=x.i'],
        'deprecated both': ['-type=i', omp2, '-inputs=h.i,d.i', '-outputs=x.i'],
        'deprecated repeated': ['-type=i', omp2, '-inputs=h.i', '--inputs', 'd.i', '-outputs=x.i'],
        'deprecated empty pieces': ['-type=i', omp2, '-inputs=h.i,,d.i', '-outputs=x.i'],
        'deprecated unbundle': ['-type=i', '-unbundle', omp2, '-inputs=o.i', '-outputs=x,y'],
        'deprecated with error after': ['-type=i', '-targets=' + HOST, '-inputs=h.i', '-outputs=x.i', '-output=y'],
        'deprecated list': ['-type=i', '-list', '-inputs=o.i'],
        'deprecated list with outputs': ['-type=i', '-list', '-inputs=o.i', '-outputs=x'],
        'unknown option': ['-type=i', '-targets=' + HOST, '-input=h.i', '-output=o.i', '-unknown'],
        'unknown option near': ['-type=i', '-target=' + HOST, '-input=h.i', '-output=o.i'],
        # A tie: 19 suggests --help-list, 22 (another option map) --help.
        'unknown option far': ['-type=i', '-zzzzzzzzzzzzz', '-input=h.i'],
        'positional argument': ['foo', '-type=i'],
        'two positional arguments': ['foo', 'bar'],
        'bool with bad value': ['-type=i', '-targets=' + HOST, '-input=h.i', '-output=o.i', '-compress=maybe'],
        'unbundle=false': ['-type=i', '-targets=' + HOST, '-input=h.i', '-output=o.i', '-unbundle=false'],
        'list=1': ['-type=i', '-list=1', '-input=o.i'],
        'list=0 then bundle': ['-type=i', '-list=0', '-targets=' + HOST, '-input=h.i', '-output=y'],
        'uint bad': ['-type=i', '-targets=' + HOST, '-input=h.i', '-output=o.i', '-bundle-align=abc'],
        'uint negative': ['-type=i', '-targets=' + HOST, '-input=h.i', '-output=o.i', '-bundle-align=-1'],
        'uint overflow': ['-type=i', '-targets=' + HOST, '-input=h.i', '-output=o.i',
                          '-bundle-align=99999999999999999999'],
        'uint empty': ['-type=i', '-targets=' + HOST, '-input=h.i', '-output=o.i', '-bundle-align='],
        'uint missing value': ['-type=i', '-targets=' + HOST, '-input=h.i', '-output=o.i', '-bundle-align'],
        'int bad': ['-type=i', '-targets=' + HOST, '-input=h.i', '-output=o.i', '-compression-level=abc'],
        'int big': ['-type=i', '-targets=' + HOST, '-input=h.i', '-output=o.i', '-compression-level=99999999999'],
        'type twice': ['-type=i', '-type=bc', '-targets=' + HOST, '-input=h.i', '-output=o.bc'],
        'type empty': ['-type=', '-targets=' + HOST, '-input=h.i', '-output=x'],
        'type missing value': ['-targets=' + HOST, '-input=h.i', '-output=x', '-type'],
        'single dash bool twice': ['-type=i', '-targets=' + HOST, '-input=h.i', '-output=o.i', '-compress', '-compress'],
        'double dash everything': ['--type=i', '--targets=' + HOST, '--input=h.i', '--output=o.i', '--verbose'],
        'separate values': ['--type', 'i', '--targets', HOST, '--input', 'h.i', '--output', 'o.i'],
        'value equals sign inside': ['-type=i', '-targets=' + HOST, '-input=h.i', '-output=a=b'],
        'help': ['--help'],
        'help single dash': ['-help'],
        'h': ['-h'],
        'help with other args': ['-type=i', '--help', '-bogus'],
        'help-hidden': ['--help-hidden'],
        'help-list': ['--help-list'],
        'version': ['--version'],
        'version single dash': ['-version'],
        'version with errors': ['--version', '-bogus'],
        'print-options': ['-type=i', '-list', '-input=o.i', '--print-options'],
        'double dash separator': ['-type=i', '-list', '-input=o.i', '--'],
        'triple dash': ['---type=i', '-list', '-input=o.i'],
        '### text': ['-###', '-type=i', omp2, '-input=h.i', '-input=d.i', '-output=x'],
        '### binary': ['-###', '-type=bc', omp2, '-input=h.i', '-input=d.i', '-output=x'],
        '### unbundle binary': ['-###', '-type=bc', '-unbundle', omp2, '-input=b.bc', '-output=x', '-output=y'],
        'allow-missing with bundling': ['-allow-missing-bundles', '-type=i', '-targets=' + HOST, '-input=h.i',
                                        '-output=x'],
        'hip-openmp-compatible bundling': ['-hip-openmp-compatible', '-type=i', '-targets=' + HOST, '-input=h.i',
                                           '-output=x'],
    }
    # LLVM checks the <kind>-<triple> groups for conflicting target IDs in byte order of
    # the group names (hip < hipv4 < host < openmp), whatever the -targets order.
    groups = {'hip': 'hip-amdgcn-amd-amdhsa--gfx906', 'hipv4': 'hipv4-amdgcn-amd-amdhsa--gfx906',
              'host': 'host-amdgcn-amd-amdhsa--gfx906', 'openmp': 'openmp-amdgcn-amd-amdhsa--gfx906',
              'openmp-unknown': 'openmp-amdgcn-amd-amdhsa-unknown-gfx906',
              'hip-unknown': 'hip-amdgcn-amd-amdhsa-unknown-gfx906', 'openmp-x86': 'openmp-x86_64-pc-linux-gnu-gfx906'}
    names = sorted(groups)
    for a in names:
        for b in names:
            if a != b:
                ts = [groups[a], groups[a] + ':xnack+', groups[b], groups[b] + ':sramecc-']
                cmds['conflict order %s then %s' % (a, b)] = ['-type=bc', '-targets=' + ','.join(ts)] + \
                    ['-input=h.i'] * 4 + ['-output=x']
    for name, argv in cmds.items():
        diff_case('cli %s' % name, [argv], base, list_sorted='-type=bc' in argv)
    # Two spellings of one target standardise to the same ID: LLVM 19 writes a bundle
    # whose header offsets and payloads disagree; offloadtool refuses the pair.
    files = {'h.i': H_I, 'd.i': DEV1}
    ours_case('cli duplicate standardised hip',
              [['-type=bc', '-targets=hip-amdgcn-amd-amdhsa-gfx906,hip-amdgcn-amd-amdhsa--gfx906',
                '-input=h.i', '-input=d.i', '-output=x']], files, clean_error(files, mention='hip-amdgcn-amd-amdhsa--gfx906'))
    # bundle-align=0: LLVM 19 divides by zero (SIGFPE); offloadtool refuses it cleanly.
    for typ in ('bc', 'i', 'o'):
        files = {'h.i': H_I, 'd.i': DEV1}
        ours_case('cli bundle-align=0 %s' % typ,
                  [['-type=' + typ, '-bundle-align=0', '-targets=%s,openmp-x86_64-pc-linux-gnu' % HOST, '-input=h.i',
                    '-input=d.i', '-output=x']], files, clean_error(files))
    # Without llvm-objcopy beside the tool or on PATH, LLVM 19 refuses every command
    # ("unable to find 'llvm-objcopy' in path"); offloadtool never runs it and works.
    files = {'h.i': H_I, 'd.i': DEV1}
    noobj = {'PATH': '/nonexistent'}

    def works_without_objcopy(results, work):
        if [r[0] for r in results] != [0, 0]:
            return 'expected success'
        f = work.files()
        if f.get('x.i') != f.get('y.i') or not f.get('x.i', b'').startswith(b'\n// __CLANG_OFFLOAD_BUNDLE____START__ '):
            return 'the bundle made without PATH differs from the one made with it'
        return None
    ours_case('cli no llvm-objcopy anywhere',
              [{'argv': ['-type=i', '-targets=%s,openmp-x86_64-pc-linux-gnu' % HOST, '-input=h.i', '-input=d.i',
                         '-output=x.i'], 'env': noobj},
               ['-type=i', '-targets=%s,openmp-x86_64-pc-linux-gnu' % HOST, '-input=h.i', '-input=d.i', '-output=y.i']],
              files, works_without_objcopy)
    # an existing output is untouched when the command fails
    diff_case('cli failing command leaves existing output',
              [['-type=i', '-targets=%s,openmp-bogus' % HOST, '-input=h.i', '-input=d.i', '-output=x'],
               ['-type=i', '-targets=%s,openmp-x86_64-pc-linux-gnu' % HOST, '-input=h.i', '-input=nonexist',
                '-output=x']], dict(base, x=b'precious\n'))


def amdgpu_triple_cases():
    """22 and 23: bundle IDs whose triple arch is spelled "amdgpu..." (LLVM 23,
    PR #206480: any arch text starting with amdgpu is the AMDGPU arch, kept as
    written; 22: "unknown target triple"), bundled, listed and unbundled."""
    for t in ['hip-amdgpu-amd-amdhsa--gfx906', 'hip-amdgpu-amd-amdhsa-unknown-gfx906',
              'hip-amdgpu9.06-amd-amdhsa--gfx906', 'hip-amdgpu9.06-amd-amdhsa-unknown-gfx906',
              'hip-amdgpu9.06-amd-amdhsa--gfx90a', 'hip-amdgpu9.0a-amd-amdhsa--gfx90a:xnack+',
              'hip-amdgpu9.4-amd-amdhsa--gfx9-4-generic', 'hip-amdgpu10.30-amd-amdhsa--gfx1030',
              'hip-amdgpu9.99-amd-amdhsa--gfx906', 'hip-amdgpuX-amd-amdhsa--gfx906',
              'hip-amdgpu9.42-amd-amdpal--gfx942', 'openmp-amdgpu9.0a-amd-amdhsa-unknown-gfx90a',
              'hipv4-amdgpu9.06-amd-amdhsa--gfx906', 'hip-Amdgpu9.06-amd-amdhsa--gfx906']:
        diff_case('amdgpu triple %s' % t,
                  [['-type=bc', '-targets=%s,%s' % (HOST, t), '-input=h', '-input=d', '-output=b'],
                   ['-type=bc', '-list', '-input=b'],
                   ['-type=bc', '-unbundle', '-targets=%s' % t, '-input=b', '-output=o']],
                  {'h': H_I, 'd': DEV1}, list_sorted=True)
    # sm_110 and sm_110a: kept by 22 and 23 (offloadtool's 22 table lacked them).
    diff_case('sm_110 arch names',
              [['-type=bc', '-targets=%s,openmp-nvptx64-nvidia-cuda--sm_110,openmp-nvptx64-nvidia-cuda--sm_110a' % HOST,
                '-input=h', '-input=d', '-input=h', '-output=b'], ['-type=bc', '-list', '-input=b'],
               ['-type=bc', '-unbundle', '-targets=openmp-nvptx64-nvidia-cuda--sm_110a', '-input=b', '-output=o']],
              {'h': H_I, 'd': DEV1}, list_sorted=True)
    # Conflicts and duplicates compare the raw kind-triple text (23: accepted).
    for pair in (['hip-amdgcn-amd-amdhsa--gfx906', 'hip-amdgpu-amd-amdhsa--gfx906'],
                 ['hip-amdgcn-amd-amdhsa--gfx906', 'hip-amdgpu9.06-amd-amdhsa--gfx906:xnack+'],
                 ['hip-amdgpu9.06-amd-amdhsa--gfx906', 'hip-amdgpu9.06-amd-amdhsa--gfx906:xnack+']):
        diff_case('amdgpu triple pair %s' % ' '.join(pair),
                  [['-type=bc', '-targets=%s,%s' % (HOST, ','.join(pair)), '-input=h', '-input=d', '-input=d',
                    '-output=b'], ['-type=bc', '-list', '-input=b']], {'h': H_I, 'd': DEV1}, list_sorted=True)


def llvm23_cases():
    """LLVM 23 only (docs/llvm23.md): its offload arch names, amdgpu subarch
    matching, several bundles in one input, its CCOB messages. Each fails
    against 22's behaviour (offloadtool as 22 refuses these names, finds
    nothing for an amdgpu request, reads only the first bundle, capitalises)."""
    # Names 23 keeps in bundle IDs and 22 drops (an ID ending in '--').
    amd = ['gfx1154', 'gfx1170', 'gfx1171', 'gfx1172', 'gfx11-7-generic', 'gfx12-5-generic', 'gfx13-generic',
           'gfx1310']
    nv = ['sm_100f', 'sm_101f', 'sm_103f', 'sm_110f', 'sm_120f', 'sm_121f']
    targets = ['hip-amdgcn-amd-amdhsa--' + a for a in amd] + ['openmp-nvptx64-nvidia-cuda--' + a for a in nv]
    files = {'h': H_I}
    files.update({'d%d' % i: b'device %d\n' % i for i in range(len(targets))})
    diff_case('23 arch names',
              [['-type=bc', '-targets=' + ','.join([HOST] + targets), '-input=h']
               + ['-input=d%d' % i for i in range(len(targets))] + ['-output=b'],
               ['-type=bc', '-list', '-input=b']]
              + [['-type=bc', '-unbundle', '-allow-missing-bundles', '-targets=' + t, '-input=b', '-output=o%d' % i]
                 for i, t in enumerate(targets)], files, list_sorted=True)
    # Which amdgpu[<subarch>] entry serves which request (the same target ID gfx906).
    archs = ['amdgcn', 'amdgpu', 'amdgpu9', 'amdgpu9.00', 'amdgpu9.06', 'amdgpu9.0a', 'amdgpu9.4', 'amdgpu9.42',
             'amdgpu9.5', 'amdgpu9.50', 'amdgpu10', 'amdgpu10.1', 'amdgpu10.3', 'amdgpu10.30', 'amdgpu8.10',
             'amdgpu11.54', 'amdgpu11', 'amdgpuX']
    for row in archs:
        diff_case('23 amdgpu entry %s' % row,
                  [['-type=bc', '-targets=%s,hip-%s-amd-amdhsa--gfx906' % (HOST, row), '-input=h', '-input=d',
                    '-output=b']]
                  + [['-type=bc', '-unbundle', '-allow-missing-bundles',
                      '-targets=hip-%s-amd-amdhsa--gfx906' % col, '-input=b', '-output=o-%s' % col]
                     for col in archs], {'h': H_I, 'd': DEV1})
    # Several bundles in one input: q1 = host H1 + gfx906 A, q2 = host H2 + gfx90a B, c1/c2 compressed.
    q1 = llvm_bundle(['-type=bc', '-targets=%s,hip-amdgcn-amd-amdhsa--gfx906' % HOST, '-input=h', '-input=a'],
                     {'h': b'H1', 'a': b'A'})
    q2 = llvm_bundle(['-type=bc', '-targets=%s,hip-amdgcn-amd-amdhsa--gfx90a' % HOST, '-input=h', '-input=b'],
                     {'h': b'H2', 'b': b'B'})
    q3 = llvm_bundle(['-type=bc', '-targets=hip-amdgcn-amd-amdhsa--gfx908', '-input=c'], {'c': b'C908'})
    c1 = llvm_bundle(['-type=bc', '-compress', '-targets=%s,hip-amdgcn-amd-amdhsa--gfx906' % HOST, '-input=h',
                      '-input=a'], {'h': b'H1', 'a': b'A'})
    c2 = llvm_bundle(['-type=bc', '-compress', '-targets=%s,hip-amdgcn-amd-amdhsa--gfx90a' % HOST, '-input=h',
                      '-input=b'], {'h': b'H2', 'b': b'B'})
    nested = llvm_bundle(['-type=bc', '-targets=%s,hip-amdgcn-amd-amdhsa--gfx90a' % HOST, '-input=h', '-input=b'],
                         {'h': q1, 'b': b'OUTER-B'})
    inputs = {
        'q1 q2': q1 + q2, 'q1 junk q2': q1 + b'JUNK' * 3 + q2, 'junk q1': b'J' * 40 + q1,
        'short junk q1': b'JJJ' + q1, 'q1 q2 q3': q1 + q2 + q3, 'nested': nested, 'c1 c2': c1 + c2,
        'q1 q1': q1 + q1, 'q1, q1 cut short': q1 + q1[:len(q1) - 3 - 40],
        'c1 pad c2': c1 + bytes(4096 - len(c1) % 4096) + c2, 'c1 q2': c1 + q2, 'q1 c2': q1 + c2,
    }
    requests = ['host-x86_64-unknown-linux-gnu', 'hip-amdgcn-amd-amdhsa--gfx906', 'hip-amdgcn-amd-amdhsa--gfx90a',
                'hip-amdgcn-amd-amdhsa--gfx908']
    for name, data in inputs.items():
        diff_case('23 several bundles %s' % name,
                  [['-type=bc', '-list', '-input=in'], ['-type=bc', '-list', '-verbose', '-input=in']]
                  + [['-type=bc', '-unbundle', '-allow-missing-bundles', '-targets=' + r, '-input=in',
                      '-output=o%d' % i] for i, r in enumerate(requests)]
                  + [['-type=bc', '-unbundle', '-targets=' + ','.join(requests[:3]), '-input=in',
                      '-output=a0', '-output=a1', '-output=a2']],
                  {'in': data}, list_sorted=True)
    # 23's CCOB reader messages (lower case) and -verbose's "Uncompressed bundle".
    corrupt = bytearray(c1)
    corrupt[-5] ^= 0xff
    for name, data in {'method 7': c1[:6] + struct.pack('<H', 7) + c1[8:], 'header of 12 bytes': c1[:12],
                       'corrupt zstd data': bytes(corrupt), 'plain, verbose': q1}.items():
        diff_case('23 ccob messages %s' % name,
                  [['-type=bc', '-list', '-input=in'], ['-type=bc', '-list', '-verbose', '-input=in']], {'in': data},
                  list_sorted=True)


def lossy_cases():
    """LLVM 22 and 23: where 22 writes a bundle ID that loses or misplaces what
    -targets gave (a processor taken as the environment, an arch name it does
    not know), offloadtool refuses the target, names the spelling that keeps
    it, and writes nothing. LLVM 22's side is recorded, not compared; it is
    checked here to really lose the processor, so the refusal stays justified."""
    shapes = {  # target: (what 22 writes, the spelling offloadtool asks for, or None)
        'hip-amdgcn-amd-amdhsa-gfx906': ('hip-amdgcn-amd-amdhsa--', 'hip-amdgcn-amd-amdhsa--gfx906'),
        'hip-amdgcn-amd-amdhsa-gfx906:xnack+': ('hip-amdgcn-amd-amdhsa--', 'hip-amdgcn-amd-amdhsa--gfx906:xnack+'),
        'hipv4-amdgcn-amd-amdhsa-gfx90a:xnack+:sramecc-':
            ('hipv4-amdgcn-amd-amdhsa--', 'hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+:sramecc-'),
        'hip-amdgcn-amd-amdhsa-gfx9-generic': ('hip-amdgcn-amd-amdhsa--generic', 'hip-amdgcn-amd-amdhsa--gfx9-generic'),
        'openmp-nvptx64-nvidia-cuda-sm_80': ('openmp-nvptx64-nvidia-cuda-sm_80-',
                                             'openmp-nvptx64-nvidia-cuda-unknown-sm_80'),
        'hip-spirv64-amd-amdhsa-amdgcnspirv': ('hip-spirv64-amd-amdhsa--', 'hip-spirv64-amd-amdhsa--amdgcnspirv'),
        'hip-amdgcn-amd-amdhsa--gfx999': ('hip-amdgcn-amd-amdhsa--', None),
        'hip-amdgcn-amd-amdhsa--GFX906': ('hip-amdgcn-amd-amdhsa--', None),
        'openmp-x86_64-pc-linux-gnu-:xnack+': ('openmp-x86_64-pc-linux-gnu-', None),
    }
    for i, (target, (written, instead)) in enumerate(sorted(shapes.items())):
        files = {'h.i': H_I, 'd.i': DEV1}
        argv = ['-type=i', '-targets=%s,%s' % (HOST, target), '-input=h.i', '-input=d.i', '-output=x']

        def check(results, work, target=target, written=written, instead=instead, base=clean_error(files)):
            problem = base(results, work)
            if problem:
                return problem
            err = results[0][2].decode(errors='replace')
            want = "target '%s': LLVM %s would write it as '%s', losing " % (target, harness.RELEASE, written)
            if want not in err:
                return 'expected %r in %r' % (want, err)
            if instead and ("write '%s'" % instead) not in err:
                return 'the error does not give the spelling %r: %r' % (instead, err)
            return None
        ours_case('lossy %s %s' % (harness.RELEASE, target), [argv], files, check)
        # LLVM 22 itself: exit 0 and the lossy ID in the text marker.
        d = os.path.join(SCRATCH, 'lossy-%d' % i)
        os.makedirs(d)
        harness.populate(d, files)
        r = harness.run([LLVM_BUNDLER] + argv, cwd=d, env=harness.neutral_env())
        data = harness.read(os.path.join(d, 'x')) if r.returncode == 0 else b''
        harness.check('LLVM 22 writes %s as %s' % (target, written),
                      b'__CLANG_OFFLOAD_BUNDLE____START__ %s\n' % written.encode() in data, r.stderr)
    # And the spellings offloadtool asks for are kept by LLVM 22 (bytes compared).
    for target, (written, instead) in sorted(shapes.items()):
        if instead:
            diff_case('lossy 22 spelling %s' % instead, [['-type=i', '-targets=%s,%s' % (HOST, instead), '-input=h.i',
                                                          '-input=d.i', '-output=x']], {'h.i': H_I, 'd.i': DEV1})


def response_file_cases():
    files = {'h.i': H_I, 'd.i': DEV1,
             'r1': ('-type=i -targets=%s,openmp-x86_64-pc-linux-gnu\n-input=h.i -input=d.i' % HOST).encode(),
             'r2': b'-output="out file.i"',
             'r3': b'@r2 -verbose',
             'quoted': ("-type=i '-targets=%s' \"-input=h.i\" -output=with\\ space" % HOST).encode(),
             'crlf': ('-type=i\r\n-targets=%s\r\n-input=h.i\r\n-output=crlf.i\r\n' % HOST).encode(),
             'empty': b'',
             'comment': ('# not a comment in GNU syntax\n-type=i -targets=%s -input=h.i -output=c.i' % HOST).encode(),
             'self': b'@self -type=i',
             'list': b'-type=bc -list -input=b.bc',
             'b.bc': FIXTURES['omp.bc']}
    for name, argv in {
        'two files': ['@r1', '@r2'],
        'nested': ['@r1', '@r3'],
        'quoted': ['@quoted'],
        'crlf': ['@crlf'],
        'empty': ['@empty', '-type=i', '-targets=' + HOST, '-input=h.i', '-output=e.i'],
        'missing file': ['@nonexist', '-type=i', '-targets=' + HOST, '-input=h.i', '-output=m.i'],
        'comment line': ['@comment'],
        'recursive': ['@self'],
        'list': ['@list'],
        'at alone': ['@', '-type=i'],
    }.items():
        diff_case('response %s' % name, [{'argv': argv, 'list': True}], files, list_sorted=True)


def start(root):
    """The two sides (LLVM's bundler and ours) in the suite's work folder."""
    global SCRATCH, LLVM, OURS
    SCRATCH = root
    LLVM = harness.Side(root, 'llvm', side_links(LLVM_BUNDLER))
    OURS = harness.Side(root, 'ours', side_links(harness.OT))


def cases(root):
    start(root)
    make_fixtures()
    cli_cases()
    response_file_cases()
    bundle_round_trips()
    text_edge_cases()
    binary_edge_cases()
    compatibility_cases()
    missing_bundles_cases()
    compression_cases()
    decompression_cases()
    large_compression_case('compress 4 x 40 MiB, larger than the LDM window', [40] * 4)
    # header page + image = exactly 80 MiB: the input ends on a zstd block border
    large_compression_case('compress 80 MiB, a whole number of zstd blocks', [80 - 4096 / (1 << 20)])
    # images ending inside a page (zero padding after them) and, unaligned, copied
    large_compression_case('compress 3 images of odd sizes, on pages', [30.3, 20.7, 17.1])
    large_compression_case('compress 3 images of odd sizes, unaligned', [30.3, 20.7, 17.1], align=1)
    object_cases()
    malformed_cases()
    if R22:
        lossy_cases()
        amdgpu_triple_cases()
    if R23:
        llvm23_cases()
    run_all()


def main():
    return harness.run_suite('bundler-diff', cases, needs=NEEDS, keep=KEEP)


if __name__ == '__main__':
    sys.exit(main())
