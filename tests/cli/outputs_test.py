"""Output paths as people type them, failed prunes that leave nothing, and
decompression bombs in packages.

  * A folder output given with a trailing slash (`prune DIR -o out/`,
    `unbundle --extract-dir out/`) is that folder; a file output with one is
    refused as LLVM 19's clang-offload-bundler refuses it ("'out/': Is a
    directory", observed: the personality's text is compared with LLVM's own
    stderr), by every applet that writes a file.
  * A tree or package prune that fails (no device code anywhere; a hostile file
    in the middle) leaves no OUT, no hidden `.OUT.*` staging folder, no temp,
    and the input as it was; a signal during a tree prune removes the staging
    folder too.
  * A package member inflating past 1 GiB at more than 1000:1 is refused with
    one line naming it and the figures, nothing written: before inflating where
    its declared size is more than 1000 times the whole package (tar.gz, tar.xz,
    a .deb's data.tar.xz), else at 1 GiB (a tar.zst followed by bytes that do not
    compress); --max-inflate-ratio raises the bound; list and size read the
    package as before. The bombs are built from concatenated gzip / xz /
    zstd streams of 16 MiB of zeros (each format reads them as one stream), so
    that making 1 GiB of zeros costs one 16 MiB compression.

The device code is binary bundles laid out here (harness.binary_bundle), their
entries read back with LLVM's clang-offload-bundler -list; the sizes and ratios
in the bomb's message are checked against the bytes this suite compressed.
"""
import lzma
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import LLVM_BUNDLER, OT, check, run  # noqa: E402

HOST = 'host-x86_64-unknown-linux-gnu'
HIP = 'hipv4-amdgcn-amd-amdhsa--'
ZSTD = shutil.which('zstd') or 'zstd'
BUNDLE = harness.binary_bundle([(HOST, b''), (HIP + 'gfx906', b'\x01' * 3000), (HIP + 'gfx90a', b'\x02' * 3000)])
CHUNK = 16 << 20     # zeros compressed once, repeated
CHUNKS = 68          # 1088 MiB: past the 1 GiB floor
GIB = 1 << 30


def e(applet):
    return 'offloadtool %s: error: ' % applet


def snapshot(top):
    """{relative path: (mode, bytes or link text)} below `top`, folders included."""
    out = {}
    for dirpath, dirnames, names in os.walk(top):
        for n in dirnames + names:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            body = os.readlink(p) if os.path.islink(p) else harness.read(p) if os.path.isfile(p) else None
            out[os.path.relpath(p, top)] = (st.st_mode, body)
    return out


def llvm_ids(path, cwd):
    r = run([LLVM_BUNDLER, '-list', '-type=o', '-input=' + path], cwd=cwd, text=True)
    return r.stdout.split() if r.returncode == 0 else ['llvm: ' + r.stderr]


def leftovers(folder, name):
    """What a failed run may not leave in `folder`: `name` itself, `.name.*`."""
    return [n for n in os.listdir(folder) if n == name or n.startswith('.' + name + '.')]


# ---------------------------------------------------------------------------
# Trailing slashes

def tree(root, files):
    top = os.path.join(root, 'inst')
    harness.populate(top, files)
    return top


def slash_cases(root):
    d = harness.Folder(root)
    tree(d.dir, {'lib/k.bundle': BUNDLE, 'share/README': b'text\n'})
    before = snapshot(d.path('inst'))
    for out in ('out/', 'out2//'):
        r = d.run([OT, 'prune', '--keep', 'gfx90a', 'inst', '-o', out], text=True)
        name = out.rstrip('/')
        check('prune DIR -o %s: the folder %s' % (out, name),
              r.returncode == 0 and r.stderr == '' and os.path.isdir(d.path(name)) and
              llvm_ids(os.path.join(name, 'lib/k.bundle'), d.dir) == [HIP + 'gfx90a', HOST] and
              harness.read(d.path(name + '/share/README')) == b'text\n' and leftovers(d.dir, name) == [name],
              (r.returncode, r.stderr, os.listdir(d.dir)))
    check('prune DIR -o out/: the input unchanged', snapshot(d.path('inst')) == before)

    # unbundle --extract-dir out/: the folder out, each entry's bytes as bundled
    d.put('k.bundle', BUNDLE)
    r = d.run([OT, 'unbundle', 'k.bundle', '--extract-dir', 'x/', '--target', HIP + 'gfx90a'], text=True)
    got = harness.tree_files(d.path('x')) if os.path.isdir(d.path('x')) else {}
    check('unbundle --extract-dir x/: the folder x', r.returncode == 0 and r.stderr == '' and
          list(got.values()) == [b'\x02' * 3000] and not any(n.startswith('.x') for n in os.listdir(d.dir)),
          (r.returncode, r.stderr, sorted(got)))
    r = d.run([OT, 'unbundle', 'inst', '--extract-dir', 'y/'], text=True)
    got = harness.tree_files(d.path('y')) if os.path.isdir(d.path('y')) else {}
    check('unbundle --extract-dir y/ of a directory: the folder y',
          r.returncode == 0 and r.stderr == '' and sorted(got.values()) == [b'', b'\x01' * 3000, b'\x02' * 3000],
          (r.returncode, r.stderr, sorted(got)))

    # A file's path ending with '/': refused by every applet that writes a file, nothing written.
    img = b'\x7fELF' + b'\0' * 60
    cases = [
        ('prune', ['--keep', 'gfx90a', 'k.bundle', '-o', 'new/']),
        ('prune', ['--keep', 'gfx90a', 'k.bundle', '-o', 'sub/']),
        ('prune', ['--keep', 'gfx90a', 'pkg.tar', '-o', 'new/']),
        ('bundle', ['--target', HOST + '=h', '--target', HIP + 'gfx90a=img', '--type', 'i', '-o', 'new/']),
        ('unbundle', ['k.bundle', '--type', 'o', '--target', HIP + 'gfx90a=new/']),
        ('compress', ['k.bundle', '-o', 'new/']),
        ('package', ['create', '--image', 'file=img,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=hip', '-o', 'new/']),
        ('wrap', ['--target', 'x86_64-unknown-linux-gnu', 'img', '-o', 'new/']),
    ]
    c = harness.Case(root, 'prune', {'k.bundle': BUNDLE, 'h': b'', 'img': img, 'sub/keep': b'',
                                     'pkg.tar': harness.tar_gnu([('lib/k.bundle', BUNDLE)])})
    for applet, args in cases:
        c.applet = applet
        path = [a for a in args if a.endswith('/')][0].split('=')[-1]
        harness.expect('%s %s: one error line, nothing written' % (applet, ' '.join(args)), c, args, 1, '',
                       e(applet) + "'%s': Is a directory\n" % path, files=[])
        check('%s ... %s: no folder made' % (applet, path), not os.path.exists(c.path('new')))

    # The personalities: LLVM's own text (the bundler and 14's wrapper name the
    # path; the packager and 22's wrapper print the strerror alone, and the
    # packager's is ENOENT for a folder that does not exist).
    tools = [
        ('clang-offload-bundler', LLVM_BUNDLER, None,
         ['-type=i', '-targets=%s,%sgfx90a' % (HOST, HIP), '-input=h', '-input=img', '-output=OUT']),
        ('clang-offload-packager', harness.LLVM_PACKAGER, None,
         ['-o', 'OUT', '--image=file=img,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=hip']),
        ('clang-offload-wrapper', harness.LLVM14_WRAPPER, None, ['-target=x86_64-unknown-linux-gnu', '-o', 'OUT', 'img']),
        ('llvm-offload-wrapper', '/usr/lib/llvm-22/bin/llvm-offload-wrapper', '22',
         ['--kind=hip', '--triple=x86_64-unknown-linux-gnu', '-o', 'OUT', 'img']),
    ]
    for tool, ref_tool, release, argv in tools:
        for out in ('nodir/', 'sub/'):
            args = [tool] + [a.replace('OUT', out) for a in argv]
            env = {'OFFLOADTOOL_LLVM': release} if release else None
            ours = run(args, cwd=c.dir, text=True, executable=OT, env=env)
            ref = run(args, cwd=c.dir, text=True, executable=ref_tool)
            check('%s, output %s: as LLVM' % (tool, out),
                  (ours.returncode, ours.stdout, ours.stderr) == (ref.returncode, ref.stdout, ref.stderr) and
                  ref.returncode == 1 and not os.path.exists(c.path('nodir')) and c.new_files() == [],
                  (ours.returncode, ours.stderr, ref.stderr, c.new_files()))


# ---------------------------------------------------------------------------
# Failed prunes leave nothing

def failed_tree_cases(root):
    d = harness.Folder(root)
    ef = e('prune')
    trees = {
        'plain': {'a/README': b'no device code\n', 'b/c/data': b'\0' * 5000},
        # a bundle first, then a bundle whose entry runs past the end, then another good one
        'hostile': {'a/first.bundle': BUNDLE, 'b/bad.bundle': BUNDLE[:200], 'c/last.bundle': BUNDLE},
    }
    for name, files in trees.items():
        top = os.path.join(d.dir, name)
        harness.populate(top, files)
        os.chmod(os.path.join(top, 'a'), 0o555)  # a read-only folder in the staging copy
        before = snapshot(top)
        for mode in (['-o', 'OUT'], ['-o', 'OUT/'], ['--in-place']):
            r = d.run([OT, 'prune', '--keep', 'gfx90a', name] + mode, text=True)
            check('prune %s (%s) %s: one error line, no OUT, no staging folder, input unchanged' %
                  (name, 'no device code' if name == 'plain' else 'a hostile file', ' '.join(mode)),
                  r.returncode == 1 and r.stderr.startswith(ef + name) and r.stderr.count('\n') == 1 and
                  leftovers(d.dir, 'OUT') == [] and snapshot(top) == before,
                  (r.returncode, r.stderr, os.listdir(d.dir)))
        os.chmod(os.path.join(top, 'a'), 0o755)

    # A signal while the staging folder is being filled: the handler removes it.
    top = os.path.join(d.dir, 'big')
    harness.populate(top, {'lib/k.bundle': BUNDLE})
    for i in range(40):
        sub = os.path.join(top, 'd%02d' % i)
        os.makedirs(sub)
        for j in range(250):
            harness.write(os.path.join(sub, 'f%03d' % j), b'x' * 4096)
    outside = os.path.join(d.dir, 'outside')
    harness.populate(outside, {'precious': b'kept'})
    os.symlink(outside, os.path.join(top, 'd00', 'link'))  # copied as a link: never followed by the removal
    os.chmod(os.path.join(top, 'd01'), 0o555)
    p = subprocess.Popen([OT, 'prune', '--keep', 'gfx90a', 'big', '-o', 'SIG'], cwd=d.dir,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen, deadline = False, time.time() + 60
    while time.time() < deadline and p.poll() is None:
        if leftovers(d.dir, 'SIG'):
            seen = True
            time.sleep(0.05)  # some files in it
            break
        time.sleep(0.001)
    if seen:
        p.send_signal(signal.SIGTERM)
    p.wait()
    check('prune DIR -o SIG, SIGTERM while it is filled: no SIG, no .SIG.* left',
          seen and p.returncode == -signal.SIGTERM and leftovers(d.dir, 'SIG') == [] and
          harness.read(os.path.join(outside, 'precious')) == b'kept',
          (seen, p.returncode, os.listdir(d.dir)))
    os.chmod(os.path.join(top, 'd01'), 0o755)


def failed_package_cases(root):
    plain = harness.tar_gnu([('README', b'no device code\n')])
    hostile = harness.tar_gnu([('a.bundle', BUNDLE), ('b.bundle', BUNDLE[:200]), ('c.bundle', BUNDLE)])
    for name, data in (('plain.tar', plain), ('hostile.tar', hostile), ('plain.tar.gz', gzip_of(plain))):
        c = harness.Case(root, 'prune', {name: data})
        for args in (['-o', 'OUT'], ['--in-place']):
            rc, out, err = c.run('--keep', 'gfx90a', name, *args)
            check('prune %s %s: one error line, nothing written, input unchanged' % (name, ' '.join(args)),
                  rc == 1 and out == '' and err.startswith(e('prune') + name) and err.count('\n') == 1 and
                  c.new_files() == [] and c.read(name) == data, (rc, err, c.new_files()))


# ---------------------------------------------------------------------------
# Bombs

def gzip_of(data):
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def xz_of(data):
    return lzma.compress(data, format=lzma.FORMAT_XZ, preset=6)


def zstd_of(data):
    return run([ZSTD, '-q', '-19', '-c'], stdin=data, check=True).stdout


def bomb_tar(compress, after=b'', chunks=CHUNKS):
    """A tar of a bundle, CHUNK * CHUNKS zeros and (when given) a file `after`,
    as concatenated compressed streams: (bytes, the compressed size of the
    zeros' streams)."""
    def member(name, size):
        info = tarfile.TarInfo(name)
        info.size = size
        return info.tobuf(format=tarfile.GNU_FORMAT)
    head = member('lib/k.bundle', len(BUNDLE)) + BUNDLE + bytes(-len(BUNDLE) % 512) + member('zeros.bin', CHUNK * chunks)
    chunk = compress(bytes(CHUNK))
    tail = member('after.bin', len(after)) + after + bytes(-len(after) % 512) if after else b''
    tail = compress(tail + bytes(10240))  # the end-of-archive blocks, padded to a record
    return compress(head) + chunk * chunks + tail, len(chunk) * chunks


def ar(members):
    out = b'!<arch>\n'
    for name, data in members:
        out += b'%-16s%-12d%-6d%-6d%-8o%-10d`\n' % (name.encode(), 0, 0, 0, 0o100644, len(data)) + data
        if len(data) % 2:
            out += b'\n'
    return out


def bomb_cases(root):
    control = harness.tar_gnu([('./control', b'Package: k\nVersion: 1\nArchitecture: amd64\nInstalled-Size: 9\n'
                                b'Maintainer: t <t@t>\nDescription: t\n')])
    tgz, _ = bomb_tar(gzip_of)
    txz, _ = bomb_tar(xz_of)
    deb = ar([('debian-binary', b'2.0\n'), ('control.tar.gz', gzip_of(control)), ('data.tar.xz', txz)])
    pat = re.compile(r"^offloadtool prune: error: (\S+): (would inflate|inflates) to more than (\d+):1 past 1 GiB "
                     r"\(0x([0-9a-f]+) bytes from (at most )?0x([0-9a-f]+) compressed\): refused as a decompression "
                     r"bomb \(--max-inflate-ratio raises the bound\)\n$")

    def refused(c, name, args=()):
        """prune's refusal: (ratio bound, inflated, compressed, declared?) or None; nothing written."""
        t = time.time()
        rc, out, err = c.run('--keep', 'gfx90a', name, '-o', 'OUT', *args)
        m = pat.match(err)
        ok = rc == 1 and out == '' and m and c.new_files() == []
        check('prune %s %s: refused, one line, nothing written (%.1f s)' % (name, ' '.join(args), time.time() - t),
              ok, (rc, err, c.new_files()))
        return (m.group(1), int(m.group(3)), int(m.group(4), 16), int(m.group(6), 16), m.group(2) == 'would inflate') \
            if ok else None

    # The header declares 1088 MiB where the whole package cannot hold 1/1000 of it: refused before inflating.
    for name, data, member, archive in (('bomb.tar.gz', tgz, 'bomb.tar.gz(zeros.bin)', len(tgz)),
                                        ('bomb.tar.xz', txz, 'bomb.tar.xz(zeros.bin)', len(txz)),
                                        ('bomb.deb', deb, 'bomb.deb(data.tar.xz)(zeros.bin)', len(txz))):
        c = harness.Case(root, 'prune', {name: data})
        got = refused(c, name)
        check('prune %s: names %s, its declared size and all %d compressed bytes' % (name, member, archive),
              got == (member, 1000, CHUNK * CHUNKS, archive, True), got)
        for applet in (('list', 'size') if name != 'bomb.tar.xz' else ()):
            r = run([OT, applet, name], cwd=c.dir, text=True)
            check('%s %s: reads it as before (the bundle, no error)' % (applet, name),
                  r.returncode == 0 and r.stderr == '' and 'gfx90a' in r.stdout, (r.returncode, r.stderr))

    # Followed by 2 MiB that do not compress, the package could hold it: refused while streaming, at 1 GiB.
    tzst, zeros = bomb_tar(zstd_of, after=random.Random(1).randbytes(2 << 20))
    c = harness.Case(root, 'prune', {'bomb.tar.zst': tzst})
    got = refused(c, 'bomb.tar.zst')
    check('prune bomb.tar.zst: names the member, refused past 1 GiB at more than 1000:1 of what it read',
          got and got[0] == 'bomb.tar.zst(zeros.bin)' and not got[4] and GIB < got[2] <= GIB + (256 << 10) and
          got[2] > 1000 * got[3] and got[3] <= zeros, (got, zeros))
    ratio = CHUNK * CHUNKS // zeros
    got = refused(c, 'bomb.tar.zst', ['--max-inflate-ratio', str(ratio // 2)])
    check('prune --max-inflate-ratio %d bomb.tar.zst: refused at that bound' % (ratio // 2),
          got and got[1] == ratio // 2 and got[2] > got[1] * got[3], got)
    # Declaring 512 GiB, refused at 1 GiB (a bound between what the header's
    # size and what 1 GiB read show): it stops there. The archive being written
    # was padded to the member's declared size on the way out (511 GiB more
    # through zstd: minutes) before the writer was marked failed.
    big, big_zeros = bomb_tar(zstd_of, after=random.Random(1).randbytes(8 << 20), chunks=32768)
    c.put('big.tar.zst', big)
    c.before.add('big.tar.zst')
    bound = (CHUNK * 32768 // len(big) + CHUNK * 32768 // big_zeros) // 2
    t = time.time()
    r = run([OT, 'prune', '--keep', 'gfx90a', 'big.tar.zst', '-o', 'OUT', '--max-inflate-ratio', str(bound)], cwd=c.dir,
            text=True, timeout=60)
    check('prune big.tar.zst (512 GiB declared): refused at 1 GiB and stops there (%.1f s)' % (time.time() - t),
          r.returncode == 1 and (': inflates to more than %d:1 past 1 GiB (0x4' % bound) in r.stderr and
          c.new_files() == [], (r.returncode, r.stderr, bound))
    rc, out, err = c.run('--keep', 'gfx90a', 'bomb.tar.zst', '-o', 'OUT', '--max-inflate-ratio', str(ratio * 2))
    listed = run(['tar', '--zstd', '-tvf', 'OUT'], cwd=c.dir, text=True) if rc == 0 else None
    check('prune --max-inflate-ratio %d bomb.tar.zst: written, the zeros kept' % (ratio * 2),
          rc == 0 and err == '' and listed and listed.returncode == 0 and
          re.search(r' %d .* zeros\.bin$' % (CHUNK * CHUNKS), listed.stdout, re.M), (rc, err, listed))


def cases(root):
    slash_cases(root)
    failed_tree_cases(root)
    failed_package_cases(root)
    bomb_cases(root)


if __name__ == '__main__':
    sys.exit(harness.run_suite('outputs', cases, needs=[LLVM_BUNDLER, harness.LLVM_PACKAGER, harness.LLVM14_WRAPPER,
                                                     '/usr/lib/llvm-22/bin/llvm-offload-wrapper', ZSTD, 'tar']))
