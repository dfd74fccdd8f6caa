"""The one helper module of offloadtool's Python test suites (standard library only).

Every suite is a script that meson runs (tests/cli/meson.build) with
    OFFLOADTOOL     the offloadtool binary
    OT_SOURCE_ROOT  the source tree
    OT_TEST_DATA    tests/data (LLVM's observed outputs under reference/, sysfs fixtures)
and whose last line is "N passed, M failed" (exit 1 when anything failed).

The rules every suite keeps, through this module:
  * A tool the suite needs that is not installed is a failure, never a skip:
    name it in run_suite(needs=...). CI installs them all (scripts/install-deps).
  * A step that makes an input and fails is a failing check (or raises), never
    a case quietly left out.
  * One check per behaviour, counted by check(); the suite prints no summary of
    its own (run_suite does).

A new suite is written on this module from the start:

    import os, sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
    import harness  # noqa: E402
    from harness import OT, check  # noqa: E402

    def cases(root):                   # root: a fresh folder, removed afterwards
        c = harness.Case(root, 'list', {'in.bc': harness.golden('19-hip2.bc')})
        harness.expect('list: a bundle', c, ['in.bc'], 0, 'hip-...\n', files=[])
        r = harness.run([harness.LLVM_BUNDLER, '-list', '-type=bc', '-input=in.bc'], cwd=c.dir)
        check('LLVM 19 lists it the same way', r.returncode == 0, r.stderr)

    if __name__ == '__main__':
        sys.exit(harness.run_suite('my-suite', cases, needs=[harness.LLVM_BUNDLER]))

and registered in tests/cli/meson.build with env : test_env.

What is here, by purpose:

Where things are
    OT, SOURCE_ROOT, DATA, REFERENCE (LLVM's observed outputs), GOLDEN (its
    byte-exact reference files), golden(name); LLVM_BIN (LLVM 19, overridable
    with $LLVM_BIN), LLVM14_BIN, llvm(tool), llvm14(tool), and the LLVM tools
    the suites compare with: LLVM_BUNDLER, LLVM_PACKAGER, LLVM14_WRAPPER,
    CLANG, CLANGXX, LLD.

The suite and its count of checks
    run_suite(name, body, needs, keep)  the missing-tool rule, a temporary
                          work folder (kept with keep=True), the summary line
                          and the exit code
    check(name, ok, detail)       one check: counted, FAIL and detail printed
    check_problem(name, problem)  one check given as "what is wrong" or None
    run_cases(cases, jobs)        (name, fn) pairs, fn() -> problem or None
                                  (or (problem, note)), `jobs` at a time
    summary()                     "N passed, M failed" and the exit code
    VERBOSE                       $OT_TEST_VERBOSE: print passing checks too

Running commands
    run(argv, cwd, env, stdin, text, timeout, check)  capture exit code,
                          stdout and stderr; env adds to (None: removes from)
                          the environment; a timeout gives returncode 'timeout';
                          check=True raises with the command's stderr
    outcome(argv, cwd, text)  the same as (exit code, stdout, stderr)
    in_llvm23_chroot(argv, cwd, env, text)  a program clang 23 built (or
                          offloadtool) run inside LLVM 23's chroot
    neutral_env(**extra)  unsets the variables that change what a bundler
                          does (OFFLOAD_BUNDLER_*, COMPRESSED_BUNDLE_FORMAT_VERSION)
    reader_warnings(argv), check_reader_clean(what, argv)   an LLVM reader
                          (llvm-readelf, llvm-objdump ...) must say nothing on
                          stderr about an object we wrote
    gcc_linkers(folder)   GNU ld and LLVM 19's lld, as gcc flags
    elf_readers_say(path, cwd)   what readelf -a, llvm-readelf -a and eu-elflint
                          say of a linked file, its path masked (compare a
                          rewritten file's with its input's)

Folders and files
    read(path), write(path, data), populate(folder, files), tree_files(folder)
    elf64_sections(path)  the section headers of a 64-bit little-endian ELF
                          file (dicts: name, type, flags, addr, offset, size,
                          entsize), read without reading the file whole
    Folder                a fresh folder: path(), put(), read(), names(),
                          files(), run() in it (text=True: decoded output)
    Case, expect          a native applet run in a folder of inputs: exact exit
                          code, stdout, stderr and the files it created (a
                          failing run must leave none)

Differential runs (LLVM's tool and ours on the same inputs)
    reference_run(fn, key, root, folders)   a run of LLVM's deterministic
                          tool, replayed from $OT_REFERENCE_MEMO when the same
                          command already ran there on the same folder contents
                          (scripts/test: the sanitizer build's suites reuse the
                          release suites' LLVM runs); Workdir.run uses it
    reference_outcome(argv, files)   the same for an LLVM reader describing
                          files (llvm-objdump, llvm-readelf), keyed by their bytes
    Side, Workdir         each tool behind a symlink with the same argv[0], one
                          case folder and TMPDIR per case (what is left in the
                          TMPDIR is a leftover temporary file), the files left
    replace_all(text, mapping), mask_variable(text)   normalising messages:
                          paths and program names, LLVM's timer report,
                          speeds, random temporary file names
    first_difference(a, b), first_line_difference(a, b), same_file(a, b)
    (tests/cli/bundler_diff_test.py builds the bundler's steps, object and
    archive comparisons on these; bundler_archive_diff_test.py imports it.)

Inputs made by LLVM 19 (and by hand)
    HIP_PRELUDE           what HIP sources need from the HIP headers to build
                          with clang 19 -nogpulib -nogpuinc (no ROCm installed)
    OMP22_INCLUDE         the folder of clang 22's omp.h (scripts/fetch-libomp22)
    llvm_bundle(argv, inputs, parent), llvm_ar(members, parent, name, flags),
    binary_bundle(entries), tar_gnu(members), cpio_newc(members)

Memory
    peak_resident_kib(argv, cwd), resident_budget_kib(mib)
"""

import concurrent.futures
import filecmp
import hashlib
import io
import json
import os
import pickle
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import traceback

# ---------------------------------------------------------------------------
# Where things are

_HERE = os.path.dirname(os.path.abspath(__file__))
OT = os.environ.get('OFFLOADTOOL')
if OT:
    OT = os.path.abspath(OT) if os.path.exists(OT) else (shutil.which(OT) or OT)
SOURCE_ROOT = os.environ.get('OT_SOURCE_ROOT', os.path.normpath(os.path.join(_HERE, '..', '..')))
DATA = os.environ.get('OT_TEST_DATA', os.path.join(SOURCE_ROOT, 'tests', 'data'))
REFERENCE = os.path.join(DATA, 'reference')
GOLDEN = os.path.join(REFERENCE, 'golden')

# The LLVM release a suite compares with: $OT_LLVM_RELEASE (19, 22 or 23;
# meson registers the differential suites once per release). Every offloadtool
# run impersonates it through OFFLOADTOOL_LLVM, inherited by each command the
# suite starts (a test of how the release is chosen without it unsets it).
RELEASE = os.environ.get('OT_LLVM_RELEASE', '19')
if RELEASE not in ('19', '22', '23'):
    raise SystemExit(f'OT_LLVM_RELEASE={RELEASE}: 19, 22 or 23')
# 22 and 23 standardise bundle IDs by the same five-piece rules.
FIVE_PIECES = RELEASE in ('22', '23')
os.environ['OFFLOADTOOL_LLVM'] = RELEASE
# LLVM 23 is Debian sid's, in the chroot scripts/fetch-llvm23 makes: its tools
# are wrappers (<cache>/llvm-23/bin/<tool>) that run them there, with /tmp and
# the folders in OT_LLVM23_SHARE (the sources and offloadtool's build folder,
# set here) at the same paths, so that both sides read the same files.
LLVM23_CACHE = os.environ.get('OT_LLVM23_CACHE', os.path.expanduser('~/.cache/offloadtool/llvm23'))
if RELEASE == '23':
    os.environ['OT_LLVM23_SHARE'] = ':'.join(
        [SOURCE_ROOT] + ([os.path.dirname(OT)] if OT else []) + [os.environ.get('OT_LLVM23_SHARE', '')])
LLVM_BIN = os.environ.get('LLVM_BIN', os.path.join(LLVM23_CACHE, 'llvm-23', 'bin') if RELEASE == '23'
                          else f'/usr/lib/llvm-{RELEASE}/bin')
LLVM14_BIN = '/usr/lib/llvm-14/bin'
LLVM23_ROOT = os.path.join(LLVM23_CACHE, 'root')  # the chroot itself


# A program that dlopens its argument (RTLD_NOW) and prints "loaded": what the
# dynamic linker (and the constructors of the libraries it loads, the HIP
# runtime's among them) make of a library. dlopen_loader(folder) builds it.
DLOPEN_LOADER = r'''#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
  printf("loaded\n");
  return dlclose(h);
}
'''


def dlopen_loader(folder):
    """The path of DLOPEN_LOADER built with cc in `folder`."""
    with open(os.path.join(folder, 'loader.c'), 'w') as f:
        f.write(DLOPEN_LOADER)
    subprocess.run(['cc', 'loader.c', '-o', 'loader', '-ldl'], cwd=folder, check=True)
    return os.path.join(folder, 'loader')


def llvm(tool):
    """The path of a tool of the suite's LLVM release (`llvm('llvm-ar')`)."""
    return os.path.join(LLVM_BIN, tool)


def llvm14(tool):
    """The path of an LLVM 14 tool."""
    return os.path.join(LLVM14_BIN, tool)


# The declarations a HIP source needs from ROCm's headers, which are not
# installed: clang 19 compiles it with -nogpulib -nogpuinc.
HIP_PRELUDE = b'''#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
struct dim3 { unsigned x, y, z; };
typedef struct ihipStream_t *hipStream_t;
extern "C" int hipLaunchKernel(const void *f, dim3 g, dim3 b, void **args, unsigned long shm, hipStream_t s);
'''

# clang 22's omp.h, which Debian's clang-22 lacks: libomp-22-dev unpacked by
# scripts/fetch-libomp22 (the OpenMP suites of the release-22 registrations
# need it and fail without it). libomp.so itself is libomp5-19's for both.
OMP22_INCLUDE = os.path.join(os.environ.get('OT_LIBOMP22_CACHE', os.path.expanduser('~/.cache/offloadtool/libomp22')),
                             'root/usr/lib/llvm-22/lib/clang/22/include')

LLVM_BUNDLER = llvm('clang-offload-bundler')
LLVM_PACKAGER = llvm('clang-offload-packager')
LLVM14_WRAPPER = llvm14('clang-offload-wrapper')
CLANG = llvm('clang')
CLANGXX = llvm('clang++')
LLD = llvm('ld.lld')  # /usr/bin/ld.lld may be another LLVM's


def golden(name):
    """The bytes of a reference file LLVM 19 wrote (tests/data/reference/golden)."""
    return read(os.path.join(GOLDEN, name))


# ---------------------------------------------------------------------------
# The suite and its count of checks

VERBOSE = bool(os.environ.get('OT_TEST_VERBOSE'))
passed = failed = 0
_lock = threading.Lock()


def check(name, ok, detail=''):
    """Counts one check; a failing one prints FAIL, its name and `detail`
    (indented, cut at 6000 characters). Returns `ok`."""
    global passed, failed
    with _lock:
        if ok:
            passed += 1
            if VERBOSE:
                print('ok  ', name)
        else:
            failed += 1
            print('FAIL', name)
            text = str(detail).rstrip('\n')
            if text:
                if len(text) > 6000:
                    text = text[:6000] + '... (%d characters)' % len(text)
                print('    ' + text.replace('\n', '\n    '))
    return ok


def check_problem(name, problem):
    """One check given as the problem found (None or '' when there is none)."""
    return check(name, not problem, problem or '')


def summary():
    """Prints "N passed, M failed"; the exit code for the test."""
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


def missing_tools(needs):
    """What in `needs` is not there (a program name is looked up on PATH, a
    path must exist), and OFFLOADTOOL when it is unset or not executable."""
    missing = [] if OT and os.access(OT, os.X_OK) else ['OFFLOADTOOL (the offloadtool binary)']
    return missing + [t for t in needs if not (os.path.exists(t) if os.sep in t else shutil.which(t))]


def run_suite(name, body, needs=(), keep=False):
    """Runs `body(root)` in a fresh temporary folder `root` (removed afterwards
    unless `keep`) and returns the test's exit code after printing the summary.
    Fails, never skips, when OFFLOADTOOL is unset or a tool in `needs` is
    missing (CI installs every one of them). An exception out of `body` is
    printed and counted as one more failed check."""
    missing = missing_tools(needs)
    if missing:
        print('missing: %s' % ', '.join(missing))
        print('0 passed, 1 failed')
        return 1
    root = tempfile.mkdtemp(prefix=name + '-')
    try:
        body(root)
    except Exception:
        traceback.print_exc(file=sys.stdout)
        check(name + ': the suite ran to its end', False, 'stopped by the exception above')
    finally:
        if keep:
            print('kept', root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return summary()


def run_cases(cases, jobs=1):
    """Runs `cases`, (name, fn) pairs, `jobs` at a time (threads; each fn runs
    its own processes) and counts one check per case in list order. fn()
    returns the problem found (None when there is none) or (problem, note); an
    exception is a problem. Returns the (name, note) pairs with a note."""
    def result_of(fn):
        try:
            r = fn()
        except Exception as e:  # a bug in the test or its fixture: the case fails
            return '%s: %s' % (type(e).__name__, e), None
        return r if isinstance(r, tuple) else (r, None)

    notes = []
    if jobs <= 1:
        results = (result_of(fn) for _, fn in cases)
    else:
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
        results = pool.map(result_of, [fn for _, fn in cases])
    for (name, _), (problem, note) in zip(cases, results):
        check_problem(name, problem)
        if note:
            notes.append((name, note))
    if jobs > 1:
        pool.shutdown()
    return notes


# ---------------------------------------------------------------------------
# Running commands

BUNDLER_SETTINGS = ('COMPRESSED_BUNDLE_FORMAT_VERSION',)


def neutral_env(**extra):
    """For run(env=...): unsets the variables that change what LLVM's bundler
    and ours do (OFFLOAD_BUNDLER_*, COMPRESSED_BUNDLE_FORMAT_VERSION) and sets
    `extra`."""
    env = {k: None for k in os.environ if k.startswith('OFFLOAD_BUNDLER_') or k in BUNDLER_SETTINGS}
    env.update(extra)
    return env


def run(argv, cwd=None, env=None, stdin=None, text=False, timeout=None, check=False, executable=None):
    """Runs argv with stdout and stderr captured; a subprocess.CompletedProcess.
    env: variables set on top of this process's environment (None as a value
    unsets one). stdin: bytes (str with text=True) or None (/dev/null). text:
    decode the output (undecodable bytes replaced). timeout: seconds, after
    which the process is killed and returncode is 'timeout'. check: raise
    RuntimeError naming the command and its stderr when it exits non-zero (for
    commands that make a suite's inputs). executable: run this file as argv[0]."""
    full = None
    if env:
        full = dict(os.environ)
        for k, v in env.items():
            if v is None:
                full.pop(k, None)
            else:
                full[k] = v
    # The output goes to unnamed files, not pipes: subprocess reads a pipe
    # through a poll() per 32 KiB, which for the readers' listings of large
    # objects (llvm-objdump -s of 65,000 sections) cost more than the tools.
    if isinstance(stdin, str):
        stdin = stdin.encode()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            p = subprocess.run(argv, cwd=cwd, env=full, input=stdin,
                               stdin=subprocess.DEVNULL if stdin is None else None, stdout=out, stderr=err,
                               timeout=timeout, executable=executable)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc = 'timeout'
        out.seek(0)
        err.seek(0)
        outputs = [out.read(), err.read()] if rc != 'timeout' else [b'', b'']
    if text:
        outputs = [o.decode('utf-8', errors='replace').replace('\r\n', '\n').replace('\r', '\n') for o in outputs]
    r = subprocess.CompletedProcess(argv, rc, *outputs)
    if check and r.returncode != 0:
        err = r.stderr if text else r.stderr.decode(errors='replace')
        raise RuntimeError('%s failed (exit %d):\n%s' % (' '.join(argv), r.returncode, err))
    return r


def in_llvm23_chroot(argv, cwd, env=None, text=False, timeout=None):
    """Runs argv inside LLVM 23's chroot (LLVM23_ROOT) as the tool wrappers
    run LLVM's tools (scripts/lib/llvm23-wrapper.c): in a mount namespace of
    its own (unshare; root), with /proc, /dev, /tmp, the cache and the folders
    of $OT_LLVM23_SHARE at the same paths, in the folder `cwd`, with this
    environment plus `env`. For the programs clang 23 builds (linked against
    sid's glibc, libomptarget 23) and for checking that offloadtool runs there
    (the static build does; a shared one misses libraries sid lacks). The
    mounts end with the program. Returns what run() returns."""
    binds = ['/dev', '/tmp', LLVM23_CACHE] + [d for d in os.environ.get('OT_LLVM23_SHARE', '').split(':') if d]
    script = ('r=$1; d=$2; shift 2; mount -t proc proc "$r/proc"\n'
              'for b in ' + ' '.join(shlex.quote(b) for b in binds if os.path.isdir(b)) + '; do\n'
              '  mkdir -p "$r$b"; mount --bind "$b" "$r$b"\n'
              'done\n'
              'exec chroot "$r" /bin/sh -c \'cd "$1" && shift && exec "$@"\' sh "$d" "$@"')
    return run(['unshare', '-m', '--propagation', 'private', 'sh', '-ec', script, 'sh', LLVM23_ROOT,
                os.path.abspath(cwd)] + list(argv), env=env, text=text, timeout=timeout)


def outcome(argv, cwd=None, text=True, **kw):
    """(exit code, stdout, stderr) of run(argv, ...), decoded unless text=False."""
    r = run(argv, cwd=cwd, text=text, **kw)
    return r.returncode, r.stdout, r.stderr


def gcc_linkers(folder, lld=None):
    """The linkers gcc (cross compilers too) can link with: [(name, flags)] for
    GNU ld and for lld (`lld`, by default the suite release's: a suite of release
    23, whose lld runs in the chroot, gives the host's), which it finds as
    <folder>/lld-bin/ld.lld."""
    lld_dir = os.path.join(folder, 'lld-bin')
    os.makedirs(lld_dir)
    os.symlink(lld or LLD, os.path.join(lld_dir, 'ld.lld'))
    return [('ld', []), ('lld', ['-fuse-ld=lld', '-B' + lld_dir])]


def reader_warnings(argv, cwd=None):
    """Runs an LLVM reader (llvm-readelf, llvm-readobj, llvm-objdump ...) on an
    object: (warnings, stdout), warnings '' when it exits 0 with nothing on
    stderr, else the tool, its exit code and what it said."""
    r = run(argv, cwd=cwd, text=True)
    if r.returncode == 0 and not r.stderr.strip():
        return '', r.stdout
    return '%s: rc=%s %s' % (os.path.basename(argv[0]), r.returncode, r.stderr.strip()), r.stdout


def check_reader_clean(what, argv, cwd=None):
    """The check "<what>: <reader> without warnings" (see reader_warnings); the
    reader's stdout."""
    warnings, out = reader_warnings(argv, cwd)
    check('%s: %s without warnings' % (what, os.path.basename(argv[0])), not warnings, warnings[-2000:])
    return out


def elf_readers_say(path, cwd=None):
    """What readelf -a, llvm-readelf -a and eu-elflint --gnu-ld say of the
    linked file `path` beyond their listings (exit code, stderr; eu-elflint's
    findings), with `path` written as F."""
    said = []
    for argv in (['readelf', '-a', '-W', path], [llvm('llvm-readelf'), '-a', path]):
        r = run(argv, cwd=cwd, text=True)
        said.append('%s: exit %d %s' % (os.path.basename(argv[0]), r.returncode, r.stderr.replace(path, 'F').strip()))
    r = run(['eu-elflint', '--gnu-ld', path], cwd=cwd, text=True)
    said.append('eu-elflint: ' + (r.stdout + r.stderr).replace(path, 'F').strip())
    return said


# ---------------------------------------------------------------------------
# Folders and files

def read(path):
    with open(path, 'rb') as f:
        return f.read()


def elf64_sections(path):
    """The section headers of the 64-bit little-endian ELF file `path`, as
    dicts (name, type, flags, addr, offset, size, entsize), or None when it is
    not one. Only the header, the table and the names are read."""
    with open(path, 'rb') as f:
        head = f.read(64)
        if len(head) < 64 or head[:4] != b'\x7fELF' or head[4] != 2 or head[5] != 1:
            return None
        shoff, = struct.unpack_from('<Q', head, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from('<HHH', head, 0x3a)
        f.seek(shoff)
        table = f.read(shentsize * shnum)
        raw = [struct.unpack_from('<IIQQQQIIQQ', table, i * shentsize) for i in range(shnum)]
        f.seek(raw[shstrndx][4])
        names = f.read(raw[shstrndx][5])
    return [{'name': names[r[0]:names.index(b'\0', r[0])].decode('latin-1'), 'type': r[1], 'flags': r[2],
             'addr': r[3], 'offset': r[4], 'size': r[5], 'entsize': r[9]} for r in raw]


def write(path, data):
    """Writes bytes (or str) to path, making its folder."""
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, 'wb') as f:
        f.write(data.encode() if isinstance(data, str) else data)
    return path


def populate(folder, files):
    """Fills `folder` from {relative name: bytes}; a value that is None or a
    str makes an (empty) folder of that name."""
    for name, data in files.items():
        p = os.path.join(folder, name)
        if data is None or isinstance(data, str):
            os.makedirs(p, exist_ok=True)
        else:
            write(p, data)


def tree_files(folder, empty_dirs=False):
    """{relative path: bytes} of every file below `folder`; with empty_dirs, an
    empty folder below it too, as 'name/': b''."""
    out = {}
    for dirpath, dirnames, names in os.walk(folder):
        for n in names:
            p = os.path.join(dirpath, n)
            out[os.path.relpath(p, folder)] = read(p)
        if empty_dirs:
            for d in dirnames:
                p = os.path.join(dirpath, d)
                if not os.listdir(p):
                    out[os.path.relpath(p, folder) + '/'] = b''
    return out


class Folder:
    """A fresh folder below `parent` (or the folder `path` as it is) for a
    suite's inputs and the commands it runs there; `text`: run() decodes the
    output unless told otherwise."""

    def __init__(self, parent=None, path=None, files=None, text=False):
        if path is None:
            path = tempfile.mkdtemp(dir=parent)
        os.makedirs(path, exist_ok=True)
        self.dir = path
        self.text = text
        populate(path, files or {})

    def path(self, name):
        return os.path.join(self.dir, name)

    def put(self, name, data):
        """Writes a file in the folder; its path."""
        return write(self.path(name), data)

    def read(self, name):
        return read(self.path(name))

    def names(self):
        """The sorted names directly in the folder."""
        return sorted(os.listdir(self.dir))

    def files(self):
        """{relative path: bytes} of every file below the folder."""
        return tree_files(self.dir)

    def run(self, argv, **kw):
        """harness.run in this folder (cwd may still be given)."""
        kw.setdefault('cwd', self.dir)
        kw.setdefault('text', self.text)
        return run(argv, **kw)


class Case(Folder):
    """A fresh folder holding `files`, in which `offloadtool <applet> ...` runs."""

    def __init__(self, root, applet, files):
        super().__init__(root, files=files)
        self.applet = applet
        self.before = set(files)

    def run(self, *args, stdin=b''):
        """(exit code, stdout, stderr) of `offloadtool <applet> args...`, decoded."""
        r = run([OT, self.applet] + list(args), cwd=self.dir, stdin=stdin)
        return r.returncode, r.stdout.decode('utf-8', 'replace'), r.stderr.decode('utf-8', 'replace')

    def new_files(self):
        """The files created since the case began (a failing run must leave none)."""
        return sorted(set(self.files()) - self.before)


def expect(name, case, args, rc, out=None, err='', files=None, stdin=b''):
    """Runs the case's applet with `args`; checks the exit code, stdout (unless
    None), stderr and, when given, the names of the files it created.
    Returns (exit code, stdout, stderr)."""
    got = case.run(*args, stdin=stdin)
    ok = got[0] == rc and (out is None or got[1] == out) and got[2] == err
    if files is not None:
        ok = ok and case.new_files() == sorted(files)
    check(name, ok, 'got rc=%d\n--- stdout\n%s--- stderr\n%s--- new files %s' % (got[0], got[1], got[2], case.new_files()))
    return got


# ---------------------------------------------------------------------------
# Differential runs

# A reference run (LLVM's tool) depends only on its command line, environment,
# standard input and the files it reads; LLVM 19's tools are deterministic. The
# differential suites run twice in scripts/test (release build, then sanitizer
# build): the second time, LLVM's side of a case whose command and folder
# contents are the same as before is replayed from the first run's record
# instead of run again. Nothing is replayed without $OT_REFERENCE_MEMO (a
# folder), and a record is only ever made by running the real tool.
_MEMO = os.environ.get('OT_REFERENCE_MEMO')
_MEMO_ROOT = b'\0<memo-root>\0'


def is_reference_tool(executable):
    """True for LLVM's tools (19 and 14): what reference_run may replay."""
    real = os.path.realpath(executable)
    return any(real.startswith(os.path.realpath(b) + os.sep) for b in (LLVM_BIN, LLVM14_BIN))


def _folder_state(folder):
    """{relative path: (kind, mode, content)} of everything under `folder`."""
    state = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in sorted(dirnames) + sorted(filenames):
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, folder)
            st = os.lstat(p)
            if os.path.islink(p):
                state[rel] = ('l', 0, os.readlink(p).encode())
            elif os.path.isdir(p):
                state[rel] = ('d', st.st_mode & 0o7777, b'')
            else:
                with open(p, 'rb') as f:
                    state[rel] = ('f', st.st_mode & 0o7777, f.read())
    return state


def _masked(value, root):
    """`value` (nested lists/dicts of str/bytes/numbers) with `root` masked, as JSON-able text."""
    if isinstance(value, bytes):
        return 'b:' + value.replace(root.encode(), _MEMO_ROOT).hex()
    if isinstance(value, str):
        return 's:' + value.replace(root, _MEMO_ROOT.decode())
    if isinstance(value, dict):
        return {k: _masked(v, root) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_masked(v, root) for v in value]
    return value


def reference_run(fn, key, root, folders):
    """fn() -> (exit code, stdout bytes, stderr bytes) runs a reference tool
    whose result depends only on `key` (command line, environment, stdin ...)
    and the contents of `folders` (under `root`, the run's own work folder,
    masked wherever it appears). With $OT_REFERENCE_MEMO set, a run with the
    same key and folder contents as a recorded one is replayed: the folders
    get the recorded contents and the recorded output is returned (with
    `root` in place). Timeouts are never recorded."""
    if not _MEMO:
        return fn()
    before = {os.path.relpath(f, root): _folder_state(f) for f in folders}
    digest = hashlib.sha256(json.dumps(_masked(key, root)).encode())
    for rel, state in sorted(before.items()):
        digest.update(json.dumps([rel, sorted((k, kind, mode, hashlib.sha256(c.replace(root.encode(), _MEMO_ROOT))
                                                .hexdigest()) for k, (kind, mode, c) in state.items())]).encode())
    record = os.path.join(_MEMO, digest.hexdigest())
    unmask = {_MEMO_ROOT.decode(): root}
    if os.path.exists(record):  # the recorded changes to the folders, then the output
        with open(record, 'rb') as f:
            rc, out, err, changes = pickle.load(f)
        for rel, (changed, removed) in changes.items():
            folder = os.path.join(root, rel)
            for k in removed:
                p = os.path.join(folder, k)
                if os.path.isdir(p) and not os.path.islink(p):
                    shutil.rmtree(p)
                elif os.path.lexists(p):
                    os.unlink(p)
            for k, (kind, mode, c) in sorted(changed.items()):
                p = os.path.join(folder, k)
                if os.path.lexists(p) and (kind != 'd' or not os.path.isdir(p)):
                    os.unlink(p)
                if kind == 'd':
                    os.makedirs(p, exist_ok=True)
                elif kind == 'l':
                    os.symlink(c.decode(), p)
                else:
                    write(p, replace_all(c, unmask))
                if kind != 'l':
                    os.chmod(p, mode)
        return rc, replace_all(out, unmask), replace_all(err, unmask)
    rc, out, err = fn()
    if rc == 'timeout':
        return rc, out, err
    mask = {root: _MEMO_ROOT.decode()}
    changes = {}
    for rel, old in before.items():
        new = _folder_state(os.path.join(root, rel))
        changes[rel] = ({k: (kind, mode, replace_all(c, mask)) for k, (kind, mode, c) in new.items() if old.get(k) != (kind, mode, c)},
                        sorted((k for k in old if k not in new), reverse=True))
    os.makedirs(_MEMO, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=_MEMO, prefix='.record-')
    with os.fdopen(fd, 'wb') as f:
        pickle.dump((rc, replace_all(out, mask), replace_all(err, mask), changes), f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, record)
    return rc, out, err


def reference_outcome(argv, files, cwd=None):
    """outcome(argv, cwd) (decoded) of a tool that reads only `files` (paths
    named in argv, all in one folder) and writes nothing, such as
    llvm-objdump or llvm-readelf describing an output: an LLVM tool's run is
    replayed as reference_run replays, keyed by argv and the files' bytes (the
    folder masked)."""
    if not is_reference_tool(argv[0]):
        return outcome(argv, cwd=cwd)
    key = ['outcome', os.path.realpath(argv[0]), list(argv), cwd] + [hashlib.sha256(read(f)).hexdigest() for f in files]
    return reference_run(lambda: outcome(argv, cwd=cwd), key, os.path.dirname(os.path.abspath(files[0])), [])


class Side:
    """One tool of a differential test, at <root>/<name>: `links` (relative
    path -> target) are the symlinks made there, e.g.
    {'bin/clang-offload-bundler': exe}, so that both tools run as
    '../bin/clang-offload-bundler' from their case folders and print the same
    argv[0] in their messages."""

    def __init__(self, root, name, links):
        self.name = name
        self.root = os.path.join(root, name)
        for rel, target in links.items():
            p = os.path.join(self.root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            os.symlink(target, p)

    def workdir(self, index):
        return Workdir(self, index)


class Workdir:
    """Case `index` on one Side: <side>/c<index>, the working folder (so that
    argv[0] '../bin/<tool>' reaches the side's symlink), and <side>/t<index>,
    its TMPDIR (what a tool leaves there is a leftover temporary file)."""

    def __init__(self, side, index):
        self.side = side
        self.root = side.root
        self.case = os.path.join(side.root, 'c%d' % index)
        self.tmp = os.path.join(side.root, 't%d' % index)

    def prepare(self, files):
        """Empty case and temporary folders; the case folder filled from
        `files` (see populate)."""
        for d in (self.case, self.tmp):
            if os.path.lexists(d):
                shutil.rmtree(d)
            os.makedirs(d)
        populate(self.case, files)

    def run(self, argv, prog, exe=None, env=None, stdin=b'', timeout=120):
        """(exit code or 'timeout', stdout, stderr) of `prog argv...` in the
        case folder, with TMPDIR its temporary folder and the bundler settings
        unset (neutral_env); `exe` runs another program under the name `prog`."""
        executable = exe or os.path.join(self.case, prog)

        def go():
            r = run([prog] + list(argv), cwd=self.case, env=neutral_env(TMPDIR=self.tmp, **(env or {})),
                    stdin=stdin, timeout=timeout, executable=executable)
            return r.returncode, r.stdout, r.stderr
        if not is_reference_tool(executable):
            return go()
        return reference_run(go, [os.path.realpath(executable), prog, list(argv), env or {}, stdin, timeout],
                             self.root, [self.case, self.tmp])

    def files(self):
        """{path: bytes} of the case folder, empty folders as 'name/': b''."""
        return tree_files(self.case, empty_dirs=True)

    def tmp_files(self):
        """What is left in the case's TMPDIR."""
        return sorted(os.listdir(self.tmp))

    def cleanup(self):
        for d in (self.case, self.tmp):
            shutil.rmtree(d, ignore_errors=True)


def replace_all(text, mapping):
    """`text` (bytes or str) with each key of `mapping` replaced by its value
    (a tool's path by its name, a work folder by a placeholder), given as str."""
    for old, new in mapping.items():
        if isinstance(text, bytes):
            old, new = old.encode(), new.encode()
        text = text.replace(old, new)
    return text


def without_own_version_line(text):
    """`text` (bytes) without the line an LLVM personality's --version adds
    after LLVM's text, when that line names the suite's release: "offloadtool
    0.1.0 as LLVM 22 (OFFLOADTOOL_LLVM=22)". A line naming another release stays
    (and so differs from LLVM's output)."""
    return re.sub(rb'^offloadtool [0-9.]+ as LLVM ' + RELEASE.encode() + rb' \([^\n]*\)\n', b'', text, flags=re.M)


def mask_variable(text):
    """Bytes of a bundler's output with what is inherently variable masked:
    LLVM's timer-group report (-verbose; offloadtool deliberately prints none),
    compression speeds, temporary file names (LLVM's are random,
    offloadtool's -### prints a fixed one), and the line offloadtool's --version
    adds after LLVM's (without_own_version_line)."""
    text = without_own_version_line(_TIMER_RE.sub(b'', text))
    text = re.sub(rb'speed: [0-9.]+ MB/s', b'speed: <T> MB/s', text)
    return re.sub(rb'clang-offload-bundler-[0-9a-f]{6}\.tmp', b'clang-offload-bundler-XXXXXX.tmp', text)


_TIMER_RE = re.compile(rb'===-+===\n[^\n]*\n===-+===\n(?:.*\n)*?[^\n]*  Total\n\n?')


def first_difference(a, b):
    """The offset of the first byte where a and b differ (the shorter length
    when one is a prefix of the other)."""
    return next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))


def first_line_difference(a, b, names=('ours', 'llvm')):
    """Where two texts first differ, line by line, for a failure's detail
    ('' when they are equal: callers pass it to check() whatever the result)."""
    if a == b:
        return ''
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines())):
        if x != y:
            return f"line {i + 1}:\n  {names[0]}: {x}\n  {names[1]}: {y}"
    return f"lengths differ ({len(a.splitlines())} vs {len(b.splitlines())} lines)"


def same_file(a, b):
    """Two files hold the same bytes (compared in blocks: large files stay on disk)."""
    return os.path.getsize(a) == os.path.getsize(b) and filecmp.cmp(a, b, shallow=False)


# ---------------------------------------------------------------------------
# Inputs made by LLVM 19 (and by hand)

def llvm_bundle(argv, inputs, parent):
    """LLVM 19's clang-offload-bundler run with `argv` + ['-output=out'] in a
    fresh folder below `parent` holding `inputs` ({name: bytes}); the output's
    bytes. Raises RuntimeError when LLVM fails."""
    d = Folder(parent, files=inputs)
    run([LLVM_BUNDLER] + list(argv) + ['-output=out'], cwd=d.dir, check=True)
    return d.read('out')


def llvm_ar(members, parent, name='lib.a', flags='rc'):
    """An archive llvm-ar 19 makes (`flags`, e.g. 'rcs') from files of these
    names, in a fresh folder below `parent`; its bytes. `members`: {name: bytes}
    or (name, bytes) pairs, in archive order."""
    items = list(members.items()) if isinstance(members, dict) else list(members)
    d = Folder(parent)
    for n, data in items:
        d.put(n, data)
    run([llvm('llvm-ar'), flags, name] + [n for n, _ in items], cwd=d.dir, check=True)
    return d.read(name)


def binary_bundle(entries):
    """An uncompressed binary offload bundle (__CLANG_OFFLOAD_BUNDLE__) of
    (id, payload) pairs in the given order, no alignment or padding."""
    head = b'__CLANG_OFFLOAD_BUNDLE__' + struct.pack('<Q', len(entries))
    off = len(head) + sum(24 + len(i) for i, _ in entries)
    meta, data = b'', b''
    for ident, payload in entries:
        ident = ident.encode() if isinstance(ident, str) else ident
        meta += struct.pack('<QQQ', off + len(data), len(payload), len(ident)) + ident
        data += payload
    return head + meta + data


def hip_fatbin_bundles(blob):
    """The bundles of a linked .hip_fatbin (or a PE image's .hip_fat): one at
    each 4 KiB boundary holding the bundle magic, up to the next."""
    starts = [p for p in range(0, len(blob), 4096) if blob[p:p + 24] == b'__CLANG_OFFLOAD_BUNDLE__']
    return [blob[a:b] for a, b in zip(starts, starts[1:] + [len(blob)])]


def unbundle_hip_fatbin(blob, folder, bundler=None):
    """[{id: code object}] per bundle of hip_fatbin_bundles(blob), as
    `bundler` (LLVM_BUNDLER by default) lists and unbundles each; host entries
    b'' (the bundler unbundles nothing for them). Files go to `folder`."""
    bundler = bundler or LLVM_BUNDLER
    out = []
    for i, b in enumerate(hip_fatbin_bundles(blob)):
        path = os.path.join(folder, 'bundle%d' % i)
        write(path, b)
        objs = {}
        for t in run([bundler, '--list', '--type=o', '--input=' + path], text=True, check=True).stdout.split():
            if t.startswith('host-'):
                objs[t] = b''
                continue
            run([bundler, '--unbundle', '--type=o', '--input=' + path, '--targets=' + t, '--output=' + path + '.co'],
                check=True)
            objs[t] = read(path + '.co')
        out.append(objs)
    return out


def tar_gnu(members):
    """A GNU-format tar archive (long names in ././@LongLink records) of
    (name, bytes) pairs, regular files, in order."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w', format=tarfile.GNU_FORMAT) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def cpio_newc(members):
    """A cpio archive in the "newc" format (what rpm payloads and initramfs
    use) of (name, bytes) pairs, regular files, then the trailer."""
    out = b''
    for ino, (name, data) in enumerate(list(members) + [('TRAILER!!!', b'')], 1):
        n = name.encode() + b'\0'
        mode = 0o100644 if name != 'TRAILER!!!' else 0
        out += b'070701' + b''.join(b'%08X' % v for v in (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(n), 0))
        out += n + b'\0' * (-(110 + len(n)) % 4) + data + b'\0' * (-len(data) % 4)
    return out


# ---------------------------------------------------------------------------
# Sizes

def human_size(n):
    """n bytes as offloadtool's human-readable outputs show them
    (src/support/human_size.h), from GNU numfmt, the rule's reference: '512 B'
    below 1024, else numfmt --to=iec-i --round=nearest --format=%.1f with a
    space before the unit ('1.7 MiB')."""
    if n < 1024:
        return '%d B' % n
    out = run(['numfmt', '--to=iec-i', '--round=nearest', '--format=%.1f', str(n)], text=True, check=True).stdout.strip()
    return out[:-2] + ' ' + out[-2:] + 'B'


# ---------------------------------------------------------------------------
# Memory

def peak_resident_kib(argv, cwd=None):
    """Run argv (in `cwd`); its exit code and its peak resident set (KiB) as GNU
    time sees it (from this process a child's ru_maxrss would include this
    process's own memory, which a fork copies)."""
    # AddressSanitizer keeps up to 256 MiB of freed memory in quarantine by
    # default: a program that frees large buffers one after another (a codec's,
    # bundle by bundle) then looks as large as that. The measured runs keep
    # 16 MiB of it (ignored by programs without ASan); resident_budget_kib
    # allows for the shadow memory.
    env = dict(os.environ)
    env['ASAN_OPTIONS'] = ':'.join(filter(None, [env.get('ASAN_OPTIONS'), 'quarantine_size_mb=16']))
    with tempfile.NamedTemporaryFile() as t:
        p = subprocess.run(['/usr/bin/time', '-f', '%M', '-o', t.name] + argv, cwd=cwd, capture_output=True, env=env)
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


if __name__ == '__main__':
    sys.exit('tests/lib/harness.py is imported by the test suites, not run')
