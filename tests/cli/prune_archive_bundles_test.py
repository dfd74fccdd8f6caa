"""`prune` of an ar archive whose members are bundles or CCOBs (issue 25,
item 6): `prune --help` says every member holding device code is pruned; an
archive of a binary bundle, a CCOB and a plain object used to be refused ("no
member of the archive is an object holding device code"). Each container
member is pruned as the same file on its own is, the object is copied, and the
symbol table still points at the object; LLVM 19's bundler reads the pruned
members."""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import LLVM_BUNDLER, OT, check, llvm, run  # noqa: E402

HOST = 'host-x86_64-unknown-linux-gnu'
HIP = 'hipv4-amdgcn-amd-amdhsa--'
GPUS = ['gfx906', 'gfx90a', 'gfx1030']
IMAGES = {g: random.Random(i).randbytes(3000) for i, g in enumerate(GPUS)}


def llvm_bundle(d, name, extra=()):
    inputs = [d.put(name + '.host', b'')] + [d.put('%s.in%d' % (name, i), IMAGES[g]) for i, g in enumerate(GPUS)]
    run([LLVM_BUNDLER, '-type=o', '-targets=' + ','.join([HOST] + [HIP + g for g in GPUS])] +
        ['-input=' + p for p in inputs] + ['-output=' + d.path(name)] + list(extra), cwd=d.dir, check=True)
    for p in inputs:
        os.unlink(p)
    return d.read(name)


def cases(root):
    d = harness.Folder(root)
    llvm_bundle(d, 'k.bundle')
    llvm_bundle(d, 'k.ccob', ['-compress'])
    d.put('host.c', b'int host_symbol(void) { return 42; }\n')
    run(['cc', '-c', 'host.c', '-o', 'host.o'], cwd=d.dir, check=True)
    run([llvm('llvm-ar'), 'rcs', '--format=gnu', 'lib.a', 'k.bundle', 'k.ccob', 'host.o'], cwd=d.dir, check=True)
    # The pruned bundle member must be what prune makes of the bundle alone.
    run([OT, 'prune', '--keep', 'gfx90a', 'k.bundle', '-o', 'alone.bundle'], cwd=d.dir, check=True)

    r = run([OT, 'prune', '--keep', 'gfx90a', 'lib.a', '-o', 'out.a'], cwd=d.dir)
    check('an archive of a bundle, a CCOB and an object is pruned', r.returncode == 0 and r.stderr == b'',
          'rc=%s\n%s' % (r.returncode, r.stderr.decode('utf-8', 'replace')))
    x = harness.Folder(root)
    r = run([llvm('llvm-ar'), 'x', os.path.join(d.dir, 'out.a')], cwd=x.dir)
    check('llvm-ar extracts every member', r.returncode == 0 and x.names() == ['host.o', 'k.bundle', 'k.ccob'],
          r.stderr.decode('utf-8', 'replace') + str(x.names()))
    if x.names() != ['host.o', 'k.bundle', 'k.ccob']:
        return
    check('the object member is copied as it was', x.read('host.o') == d.read('host.o'))
    check('the bundle member is what prune makes of the bundle alone', x.read('k.bundle') == d.read('alone.bundle'))
    for m in ('k.bundle', 'k.ccob'):
        r = run([OT, 'list', m], cwd=x.dir, text=True)
        check('list: %s keeps the host entry and gfx90a only' % m,
              r.returncode == 0 and HOST in r.stdout and HIP + 'gfx90a' in r.stdout and
              'gfx906' not in r.stdout and 'gfx1030' not in r.stdout, r.stdout + r.stderr)
        r = run([LLVM_BUNDLER, '-list', '-type=o', '-input=' + m], cwd=x.dir, text=True)
        check("LLVM 19's bundler lists %s: host and gfx90a" % m,
              r.returncode == 0 and sorted(r.stdout.split()) == sorted([HOST + '-', HIP + 'gfx90a']), r.stdout + r.stderr)
        r = run([LLVM_BUNDLER, '-unbundle', '-type=o', '-targets=' + HIP + 'gfx90a', '-input=' + m,
                 '-output=' + m + '.gfx90a'], cwd=x.dir)
        check("LLVM 19's bundler unbundles gfx90a's image from %s" % m,
              r.returncode == 0 and x.read(m + '.gfx90a') == IMAGES['gfx90a'], r.stderr.decode('utf-8', 'replace'))
    r = run([llvm('llvm-nm'), '--print-armap', 'out.a'], cwd=d.dir, text=True)
    check('the symbol table still names the object for its symbol',
          r.returncode == 0 and 'host_symbol in host.o' in r.stdout, r.stdout + r.stderr)
    r = run(['nm', '-s', 'out.a'], cwd=d.dir, text=True)
    check("GNU nm reads the archive map: the object's symbol in the object",
          r.returncode == 0 and 'host_symbol in host.o' in r.stdout, r.stdout + r.stderr)
    r = run(['cc', '-o', 'prog', '-x', 'c', '-', '-x', 'none', 'out.a'], cwd=d.dir,
            stdin=b'int host_symbol(void);\nint main(void) { return host_symbol() - 42; }\n')
    check('the linker finds the object through the pruned archive\'s symbol table',
          r.returncode == 0 and run([d.path('prog')]).returncode == 0, r.stderr.decode('utf-8', 'replace'))


if __name__ == '__main__':
    sys.exit(harness.run_suite('prune-archive-bundles', cases, needs=[LLVM_BUNDLER, llvm('llvm-ar')]))
