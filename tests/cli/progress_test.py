#!/usr/bin/env python3
"""Progress on long work (issue 25): one line on standard error, redrawn in
place ("\\r" ... "ESC[K") and cleared at the end, only where standard error is
a terminal (a pseudo-terminal here) or with --progress; never on a pipe or a
file (scripts and CI logs stay clean), never with --no-progress, and only for
work that takes longer than two seconds (OFFLOADTOOL_PROGRESS_DELAY_MS=0 lets
the test see it at once). An error after a drawn line starts on a clean line.
Applets: list, size, unbundle --extract-dir, compat (no: it walks through
collect), prune and compress."""
import io
import os
import pty
import subprocess
import sys
import tarfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import OT, check  # noqa: E402

DATA = os.environ.get('OT_TEST_DATA', os.path.join(os.path.dirname(__file__), '..', 'data'))


def run_pty(argv, cwd, env):
    """(exit code, stdout, what the terminal got on standard error)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    got = b''
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other end is closed
            break
        if not chunk:
            break
        got += chunk
    out = p.stdout.read()
    p.wait()
    os.close(master)
    return p.returncode, out, got


def tar_with(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w', format=tarfile.GNU_FORMAT) as t:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def body(root):
    obj = harness.read(os.path.join(DATA, 'nvidia', 'k-nvcc13.o'))
    bad = bytearray(harness.read(os.path.join(DATA, 'nvidia', 'lz4.fatbin')))
    bad[0x14:0x18] = (32).to_bytes(4, 'little')  # the first entry's header size: less than 64
    ccob_input = harness.read(os.path.join(DATA, 'nvidia', 'arch-specific.fatbin'))
    d = harness.Folder(root, files={
        'pkg.tar': tar_with([('./usr/share/blob', bytes(40 << 20)), ('./usr/lib/k.o', obj)]),
        'bad.tar': tar_with([('./usr/share/blob', bytes(40 << 20)), ('./usr/lib/k.fatbin', bytes(bad))]),
        'k.o': obj,
    })
    env = dict(os.environ, OFFLOADTOOL_PROGRESS_DELAY_MS='0')
    slow_env = dict(os.environ)
    slow_env.pop('OFFLOADTOOL_PROGRESS_DELAY_MS', None)
    for name, argv in (('list', ['list', 'pkg.tar']), ('size', ['size', 'pkg.tar']),
                       ('unbundle', ['unbundle', 'pkg.tar', '--extract-dir', 'x'])):
        rc, out, err = run_pty([OT] + argv, d.dir, env)
        line = b'\roffloadtool %s pkg.tar: ' % name.encode()
        check('%s on a terminal: a progress line, redrawn in place' % name,
              rc == 0 and line in err and b' of ' in err and b'%' in err and b'\x1b[K' in err, (rc, err[-300:]))
        check('%s on a terminal: the line is cleared at the end' % name, err.endswith(b'\r\x1b[K'), err[-100:])
        rc, out, err = run_pty([OT, argv[0], '--no-progress'] + argv[1:], d.dir, env)
        check('%s --no-progress on a terminal: nothing on standard error' % name, rc == 0 and err == b'', err[-200:])
        r = harness.run([OT] + argv, cwd=d.dir, env=env)
        check('%s on a pipe: nothing on standard error' % name, r.returncode == 0 and r.stderr == b'', r.stderr[-200:])
        r = harness.run([OT, argv[0], '--progress'] + argv[1:], cwd=d.dir, env=env)
        check('%s --progress on a pipe: the line' % name, r.returncode == 0 and line in r.stderr, r.stderr[-200:])
        rc, out, err = run_pty([OT] + argv, d.dir, slow_env)
        check('%s on a terminal, work of less than two seconds: no line' % name, rc == 0 and err == b'', err[-200:])
    # An error after the line: on a line of its own.
    rc, out, err = run_pty([OT, 'size', 'bad.tar'], d.dir, env)
    check('an error after a progress line starts on a clean line',
          rc == 1 and b'\r\x1b[Koffloadtool size: error: bad.tar(./usr/lib/k.fatbin): entry header size' in err and
          err.count(b'offloadtool size: error') == 1, err[-300:])
    # prune (bytes written, no total) and compress (the input read).
    rc, out, err = run_pty([OT, 'prune', '--keep', 'sm_80', 'k.o', '-o', 'slim.o'], d.dir, env)
    check('prune on a terminal: a progress line, cleared', rc == 0 and b'\roffloadtool prune k.o: ' in err and
          err.endswith(b'\r\x1b[K'), err[-200:])
    harness.write(d.path('plain.bundle'), harness.binary_bundle([('host-x86_64-unknown-linux-gnu-', b''),
                                                                 ('hipv4-amdgcn-amd-amdhsa--gfx90a', ccob_input * 64)]))
    rc, out, err = run_pty([OT, 'compress', 'plain.bundle', '-o', 'c.ccob'], d.dir, env)
    check('compress on a terminal: a progress line, cleared', rc == 0 and b'\roffloadtool compress plain.bundle: ' in err
          and err.endswith(b'\r\x1b[K'), err[-200:])


if __name__ == '__main__':
    sys.exit(harness.run_suite('progress', body))
