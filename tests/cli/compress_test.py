#!/usr/bin/env python3
"""`offloadtool compress`: one case per behaviour (exact exit code, stdout,
stderr, files left behind) and differential checks against LLVM 19's
clang-offload-bundler: the default output is byte-identical to its -compress
output of the same bundle, and LLVM can unbundle everything we write in its
formats (threads, auto window, other levels, zlib). Also: thread-count
invariance, a bundle of near-identical entries larger than LLVM's window,
concatenated bundles, and damaged or lying CCOB headers.

Environment: OFFLOADTOOL = the offloadtool binary, OT_TEST_DATA = tests/data (LLVM's reference outputs).
Needs /usr/lib/llvm-19/bin/clang-offload-bundler (fails without it).
Prints "N passed, M failed"; exits 1 on failure.
"""

import json
import os
import random
import shutil
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import LLVM_BUNDLER as LLVM, OT, check, expect, golden, read, run  # noqa: E402

E = 'offloadtool compress: error: '
HOST = 'host-x86_64-unknown-linux-gnu'
GPUS = ['hipv4-amdgcn-amd-amdhsa--gfx906', 'hipv4-amdgcn-amd-amdhsa--gfx908', 'hipv4-amdgcn-amd-amdhsa--gfx90a']

def Dir(root):
    """A fresh folder for `offloadtool compress` runs, filled as the case goes."""
    return harness.Case(root, 'compress', {})


# Against LLVM 22 too (compress-22): its default is CCOB v3, so comparisons with
# LLVM 19's golden v2 files ask for version 2, which 22 writes byte for byte.
R22 = harness.FIVE_PIECES  # 22 and 23 (23 through the chroot's wrappers, on libzstd 1.5.4)
V2 = ['--ccob-version', '2'] if R22 else []


def llvm(d, *args, env=None):
    """The suite's LLVM clang-offload-bundler in the folder of `d` (a harness.reference_run); raises when it fails."""
    argv = [LLVM] + list(args)
    rc, _, err = harness.reference_run(lambda: harness.outcome(argv, cwd=d.dir, text=False, env=env),
                                       [argv, env or {}], d.dir, [d.dir])
    if rc != 0:
        raise RuntimeError('%s failed (exit %s):\n%s' % (' '.join(argv), rc, err.decode(errors='replace')))


def noise(n, seed):
    """n bytes compressible about 2x (fast to make): random 64 KiB blocks, each followed by a repeat."""
    rnd = random.Random(seed)
    out = bytearray()
    while len(out) < n:
        block = rnd.randbytes(1 << 16)
        out += block + block
    return bytes(out[:n])


def mutate(data, count, seed):
    rnd = random.Random(seed)
    b = bytearray(data)
    for _ in range(count):
        b[rnd.randrange(len(b))] ^= 0xff
    return bytes(b)


def llvm_bundle(d, name, images, compress=False, level=None):
    """LLVM 19 bundles the images (host /dev/null) the way clang bundles HIP fat binaries."""
    paths = [d.put('%s.img%d' % (name, i), img) for i, img in enumerate(images)]
    args = ['-type=o', '-bundle-align=4096', '-targets=' + ','.join([HOST] + GPUS[:len(images)]),
            '-input=/dev/null'] + ['-input=' + p for p in paths] + ['-output=' + d.path(name)]
    if compress:
        args.append('-compress')
    if level is not None:
        args.append('-compression-level=%d' % level)
    llvm(d, *args)
    for p in paths:
        os.unlink(p)
    return read(d.path(name))


def llvm_unbundles(d, name, images):
    """LLVM 19 unbundles `name` and gets `images` back."""
    outs = [d.path('%s.out%d' % (name, i)) for i in range(len(images) + 1)]
    r = run([LLVM, '-type=o', '-unbundle', '-targets=' + ','.join([HOST] + GPUS[:len(images)]),
             '-input=' + d.path(name)] + ['-output=' + o for o in outs])
    ok = r.returncode == 0 and all(read(o) == img for o, img in zip(outs[1:], images))
    for o in outs:
        if os.path.exists(o):
            os.unlink(o)
    return ok, r.stderr.decode()


def test_llvm_identity(root):
    # The golden files (LLVM 19, levels 3 and 9) and bundles of several sizes made here.
    d = Dir(root)
    d.put('hip2.bc', golden('19-hip2.bc'))
    expect('golden: default output', d, ['hip2.bc', '-o', 'c.bc'] + V2, 0, '', '')
    check('golden: LLVM 19 -compress bytes', read(d.path('c.bc')) == golden('19-hip2-compressed.bc'))
    expect('golden: level 9', d, ['--level', '9', 'hip2.bc', '-o', 'c9.bc'] + V2, 0, '', '')
    check('golden: LLVM 19 -compression-level=9 bytes', read(d.path('c9.bc')) == golden('19-hip2-compressed-l9.bc'))
    d.put('text.i', golden('19-text.i'))
    llvm(d, '-type=i', '-compress', '-targets=%s,openmp-x86_64-pc-linux-gnu' % HOST,
         '-input=' + d.put('h.i', b'int x;\n'), '-input=' + d.put('t.i', b'int y;\n'), '-output=' + d.path('llvm.i'))
    llvm(d, '-type=i', '-targets=%s,openmp-x86_64-pc-linux-gnu' % HOST,
         '-input=' + d.path('h.i'), '-input=' + d.path('t.i'), '-output=' + d.path('plain.i'))
    expect('text bundle: compressed as a whole', d, ['plain.i', '-o', 'ours.i'], 0, '', '')
    check('text bundle: LLVM 19 bytes', read(d.path('ours.i')) == read(d.path('llvm.i')))

    # 30 MiB images: a 75 MiB bundle, fed to zstd in more than one piece
    for size, level in ((3 << 20, None), (30 << 20, None), (6 << 20, 1), (6 << 20, 19)):
        imgs = [noise(size, 1), mutate(noise(size, 1), 100, 2), noise(size // 2, 3)]
        name = 'b%d-%s' % (size >> 20, level)
        plain = llvm_bundle(d, name + '.hipfb', imgs)
        llvm_c = llvm_bundle(d, name + '.llvm', imgs, compress=True, level=level)
        args = [name + '.hipfb', '-o', name + '.ours'] + (['--level', str(level)] if level is not None else [])
        expect('identity %s: runs' % name, d, args, 0, '', '')
        check('identity %s: byte-identical to LLVM 19 -compress' % name, read(d.path(name + '.ours')) == llvm_c)
        # and back: decompressing LLVM's CCOB gives LLVM's uncompressed bundle
        expect('identity %s: -d of LLVM output' % name, d, ['-d', name + '.llvm', '-o', name + '.d'], 0, '', '')
        check('identity %s: -d gives the bundle' % name, read(d.path(name + '.d')) == plain)
        if level is None:
            # recompressing with LLVM's settings gives the same bytes (75 MiB: through a scratch file)
            expect('identity %s: recompress as is' % name, d, ['--recompress', name + '.llvm', '-o', name + '.re0'],
                   0, '', '')
            check('identity %s: recompress as is gives LLVM bytes' % name, read(d.path(name + '.re0')) == llvm_c)
        if level is not None:
            # recompressing LLVM's default CCOB at this level gives LLVM's bytes at this level
            default_c = llvm_bundle(d, name + '.llvm3', imgs, compress=True)
            d.put(name + '.in3', default_c)
            expect('identity %s: recompress' % name, d,
                   ['--recompress', '--level', str(level), name + '.in3', '-o', name + '.re'], 0, '', '')
            check('identity %s: recompress gives LLVM bytes' % name, read(d.path(name + '.re')) == llvm_c)
    shutil.rmtree(d.dir)


def test_llvm_reads(root):
    # Every output in an LLVM-compatible mode (version 2, zstd or zlib) unbundles with LLVM 19.
    d = Dir(root)
    imgs = [noise(5 << 20, 4), mutate(noise(5 << 20, 4), 50, 5), noise(3 << 20, 6)]
    llvm_bundle(d, 'in.hipfb', imgs)
    modes = {
        'threads 2': ['--threads', '2'],
        'threads 1': ['--threads', '1'],
        'window auto': ['--window', 'auto'],
        'window 30 threads 3': ['--window', '30', '--threads', '3'],
        'no-long level 19': ['--no-long', '--level', '19'],
        'level -5': ['--level', '-5'],
        'zlib': ['--method', 'zlib'],
        'zlib level 9': ['--method', 'zlib', '--level', '9'],
    }
    expect('version 3: runs', d, ['--ccob-version', '3', 'in.hipfb', '-o', 'v3.hipfb'], 0, '', '')
    ok, err = llvm_unbundles(d, 'v3.hipfb', imgs)
    if R22:
        check('version 3: LLVM 22 reads it', ok, err)
    else:
        check('version 3: LLVM 19 cannot read it (documented: LLVM 20+)', not ok and 'Failed to decompress input' in err,
              err)
    for i, (mode, args) in enumerate(modes.items()):
        out = 'm%d.hipfb' % i
        expect('llvm reads %s: runs' % mode, d, args + ['in.hipfb', '-o', out], 0, '', '')
        ok, err = llvm_unbundles(d, out, imgs)
        check('llvm reads %s: LLVM 19 unbundles it' % mode, ok, err)
        expect('llvm reads %s: verify' % mode, d, ['--verify', out], 0, '%s: ok (1 bundle, 1 compressed)\n' % out, '')
    shutil.rmtree(d.dir)


def test_threads(root):
    # The same bytes for every thread count >= 1 (several 8 MiB jobs), not LLVM's single-threaded bytes.
    d = Dir(root)
    imgs = [noise(9 << 20, 7), mutate(noise(9 << 20, 7), 1000, 8), noise(5 << 20, 9)]
    llvm_bundle(d, 'in.hipfb', imgs)
    outs = {}
    for n in (1, 2, 3, 8):
        expect('threads %d: runs' % n, d, ['--threads', str(n), 'in.hipfb', '-o', 't%d' % n], 0, '', '')
        outs[n] = read(d.path('t%d' % n))
    check('threads: identical for 1, 2, 3 and 8', len(set(outs.values())) == 1)
    expect('threads 0: runs', d, ['in.hipfb', '-o', 't0'], 0, '', '')
    check('threads: differ from the single-threaded (LLVM) bytes', read(d.path('t0')) != outs[1])
    ratio = [len(outs[1]) / os.path.getsize(d.path('in.hipfb')), os.path.getsize(d.path('t0')) / os.path.getsize(d.path('in.hipfb'))]
    check('threads: ratio within 2% of single-threaded', ratio[0] <= ratio[1] * 1.02, ratio)
    shutil.rmtree(d.dir)


def test_auto_window(root):
    # Two near-identical 130 MiB entries: farther apart than LLVM's 2^27 window.
    d = Dir(root)
    base = random.Random(10).randbytes(130 << 20)
    imgs = [base, mutate(base, 2000, 11)]
    del base
    plain = llvm_bundle(d, 'big.hipfb', imgs)
    llvm_c = llvm_bundle(d, 'big.llvm', imgs, compress=True)
    expect('auto window: runs', d, ['--window', 'auto', 'big.hipfb', '-o', 'big.auto'], 0, '', '')
    expect('auto window + threads: runs', d, ['--window', 'auto', '--threads', '2', 'big.hipfb', '-o', 'big.auto2'],
           0, '', '')
    llvm_ratio = len(plain) / len(llvm_c)
    ours = len(plain) / os.path.getsize(d.path('big.auto'))
    ours_mt = len(plain) / os.path.getsize(d.path('big.auto2'))
    check('auto window: LLVM 19 finds nothing (ratio < 1.05)', llvm_ratio < 1.05, llvm_ratio)
    check('auto window: ratio > 1.9 (the second entry costs almost nothing)', ours > 1.9, ours)
    check('auto window + threads: ratio > 1.9', ours_mt > 1.9, ours_mt)
    got = d.run('--info', '--json', 'big.auto')
    check('auto window: window log 28 in the frame', got[0] == 0 and json.loads(got[1])['bundles'][0]['window_log'] == 28,
          got)
    for f in ('big.auto', 'big.auto2'):
        ok, err = llvm_unbundles(d, f, imgs)
        check('auto window: LLVM 19 unbundles %s' % f, ok, err)
    r = run([OT, 'unbundle', 'big.auto', '-t', GPUS[1] + '=e1'], cwd=d.dir)
    check('auto window: offloadtool unbundle reads it (streaming decoder, window beyond 2^27)',
          r.returncode == 0 and read(d.path('e1')) == imgs[1], r.stderr)
    expect('auto window: decompresses (streaming, window beyond 2^27)', d, ['-d', 'big.auto', '-o', 'big.d'], 0, '', '')
    check('auto window: round trip', read(d.path('big.d')) == plain)
    shutil.rmtree(d.dir)


def test_resident(root):
    # Two identical 40 MiB entries: LLVM's frame refers back 40 MiB for all of the
    # second, so decoding into the output's mapping reads dropped pages again.
    d = Dir(root)
    img = random.Random(12).randbytes(40 << 20)
    plain = llvm_bundle(d, 'dup.hipfb', [img, img])
    llvm_bundle(d, 'dup.ccob', [img, img], compress=True)
    check('resident: LLVM 19 finds the second entry (ratio > 1.9)',
          len(plain) / os.path.getsize(d.path('dup.ccob')) > 1.9, os.path.getsize(d.path('dup.ccob')))
    limit = harness.resident_budget_kib(32)
    targets = '-targets=' + ','.join([HOST] + GPUS[:2])
    for name, argv, outs in (
            ('compress -d', ['compress', '-d', 'dup.ccob', '-o', 'dup.d'], {'dup.d': plain}),
            ('compress -d --hash check', ['compress', '-d', '--hash', 'check', 'dup.ccob', '-o', 'dup.h'],
             {'dup.h': plain}),
            ('clang-offload-bundler -unbundle', ['clang-offload-bundler', '-type=o', '-unbundle', targets,
                                                 '-input=dup.ccob', '-output=h', '-output=e0', '-output=e1'],
             {'e0': img, 'e1': img})):
        rc, peak = harness.peak_resident_kib([OT] + argv, cwd=d.dir)
        same = all(os.path.exists(d.path(o)) and read(d.path(o)) == want for o, want in outs.items())
        check('resident: %s of an 80 MiB bundle: right bytes, peak resident %d KiB <= %d KiB' % (name, peak, limit),
              rc == 0 and same and peak <= limit, 'exit %d' % rc)
    # into a pipe: streamed through zstd's window instead of a mapping, the same bytes
    r = run([OT, 'compress', '-d', 'dup.ccob', '-o', '-'], cwd=d.dir)
    check('resident: -d into a pipe', r.returncode == 0 and r.stdout == plain and not r.stderr, r.stderr)
    shutil.rmtree(d.dir)


def test_compress_resident(root):
    # LLVM's bytes of a bundle well over zstd's 128 MiB window, of random bytes
    # (zstd outruns MD5 there, which then sets the pace): memory stays at the
    # window and a few pieces, compressed from the bundle (compress) or from its
    # inputs (clang-offload-bundler -compress maps them into its scratch file),
    # with the same bytes and a hash that checks.
    d = Dir(root)
    rnd = random.Random(13)
    imgs = ['big%d.img' % i for i in range(3)]
    for name in imgs:
        d.put(name, rnd.randbytes(72 << 20))
    targets = '-targets=' + ','.join([HOST] + GPUS)
    bundler = [OT, 'clang-offload-bundler', '-type=o', '-bundle-align=4096', targets, '-input=/dev/null'] + \
        ['-input=' + n for n in imgs]
    run(bundler + ['-output=big.hipfb'], cwd=d.dir, check=True)
    limit = harness.resident_budget_kib(128 + 48)
    for name, argv in (('compress', [OT, 'compress', 'big.hipfb', '-o', 'big.ccob']),
                       ('clang-offload-bundler -compress', bundler + ['-compress', '-output=big2.ccob'])):
        rc, peak = harness.peak_resident_kib(argv, cwd=d.dir)
        check('compress resident: %s of a 216 MiB bundle: peak resident %d KiB <= %d KiB' % (name, peak, limit),
              rc == 0 and peak <= limit, 'exit %d' % rc)
    check('compress resident: the same bytes from the bundle and from its inputs',
          read(d.path('big.ccob')) == read(d.path('big2.ccob')))
    r = run([OT, 'compress', '--verify', 'big.ccob'], cwd=d.dir, text=True)
    check('compress resident: the hash checks', r.returncode == 0 and 'ok (1 bundle, 1 compressed)' in r.stdout,
          r.stdout + r.stderr)
    shutil.rmtree(d.dir)


def test_info(root):
    d = Dir(root)
    d.put('c.bc', golden('19-hip2-compressed.bc'))
    text = ('c.bc: 1 bundle\n\n'
            'bundle 0 at 0x0: compressed bundle version 2, zstd\n'
            '  header           24 B\n  total size       137 B\n  compressed       113 B\n'
            '  uncompressed     188 B (ratio 1.66)\n  window log       8\n'
            '  stored hash      0x2bcafb899a29dc94\n  recomputed hash  0x2bcafb899a29dc94 (matches)\n')
    expect('info: text', d, ['--info', 'c.bc'], 0, text, '')
    expect('info --bytes: exact sizes', d, ['--info', '--bytes', 'c.bc'], 0, text.replace(' B', ' bytes'), '')
    want = {'schema': 'offloadtool-compress-info/2', 'file': 'c.bc', 'size': 137, 'bundles': [
        {'index': 0, 'offset': 0, 'size': 137, 'compressed': True, 'format_version': 2, 'method': 'zstd',
         'header_size': 24, 'total_size': 137, 'compressed_size': 113, 'uncompressed_size': 188, 'ratio': 1.6637,
         'window_log': 8, 'content_size': 188, 'stored_hash': '0x2bcafb899a29dc94',
         'recomputed_hash': '0x2bcafb899a29dc94', 'hash_match': True}]}
    got = d.run('--info', '--json', 'c.bc')
    try:
        ok = got[0] == 0 and json.loads(got[1]) == want
    except ValueError:
        ok = False
    check('info: json', ok, got)
    # A name that is not UTF-8: its byte written as a \\u escape (offloadtool-json(7)); it was written as is, which
    # is no JSON.
    odd = b'n\xffme.bc'
    with open(os.path.join(d.dir, os.fsdecode(odd)), 'wb') as f:
        f.write(harness.read(os.path.join(d.dir, 'c.bc')))
    r = harness.run([OT, 'compress', '--info', '--json', os.fsdecode(odd)], cwd=d.dir)
    try:
        ok = r.returncode == 0 and json.loads(r.stdout.decode('utf-8'))['file'] == 'n\u00ffme.bc'
    except ValueError:
        ok = False
    check('info --json: a file name that is not UTF-8 is escaped, and the output is JSON', ok, (r.stdout[:200], r.stderr))
    # version 1 (LLVM 18): no total size
    v2 = golden('19-hip2-compressed.bc')
    d.put('v1.bc', b'CCOB\1\0\1\0' + v2[12:16] + v2[16:24] + v2[24:])
    got = d.run('--info', '--json', 'v1.bc')
    try:
        b = json.loads(got[1])['bundles'][0]
        ok = got[0] == 0 and b['format_version'] == 1 and b['total_size'] is None and b['header_size'] == 20 and \
            b['hash_match']
    except (ValueError, KeyError, IndexError):
        ok = False
    check('info: version 1', ok, got)
    expect('info: -d of version 1', d, ['-d', 'v1.bc', '-o', 'v1.out'], 0, '', '')
    check('info: version 1 decompresses', read(d.path('v1.out')) == golden('19-hip2.bc'))
    # an uncompressed bundle
    d.put('p.bc', golden('19-hip2.bc'))
    expect('info: uncompressed', d, ['--info', 'p.bc'], 0, 'p.bc: 1 bundle\n\nbundle 0 at 0x0: uncompressed, 188 B\n', '')
    expect('info --bytes: uncompressed', d, ['--info', '--bytes', 'p.bc'], 0,
           'p.bc: 1 bundle\n\nbundle 0 at 0x0: uncompressed, 188 bytes\n', '')
    expect('--bytes without --info refused', d, ['-d', 'c.bc', '-o', 'x', '--bytes'], 1, '',
           E + '--bytes goes with --info\n')
    check('--bytes without --info: no output', not os.path.exists(d.path('x')))
    expect('--bytes with --verify refused', d, ['--verify', 'c.bc', '--bytes'], 1, '', E + '--bytes goes with --info\n')
    expect('info: -o refused', d, ['--info', 'c.bc', '-o', 'x'], 1, '',
           E + '--info and --verify write no output file: drop -o\n')
    expect('verify: ok', d, ['--verify', 'c.bc'], 0, 'c.bc: ok (1 bundle, 1 compressed)\n', '')
    shutil.rmtree(d.dir)


def test_concatenated(root):
    # Several bundles in one file (a .hip_fatbin section): each handled on its own.
    d = Dir(root)
    a, ac = golden('19-hip2.bc'), golden('19-hip2-compressed.bc')
    m = golden('19-mixed.bc')
    targets = '-targets=%s,openmp-nvptx64-nvidia-cuda-sm_70,hip-amdgcn-amd-amdhsa-gfx90a:xnack+' % HOST
    inputs = ['-input=' + d.put('h', b'int x;\n'), '-input=' + d.put('t1', golden('tgt1')),
              '-input=' + d.put('t2', golden('tgt2'))]
    if R22:
        # 22 spells those targets otherwise: its own plain bundle, and its v2 CCOB (the golden ones are v2)
        targets = '-targets=%s,openmp-nvptx64-nvidia-cuda--sm_70,hip-amdgcn-amd-amdhsa--gfx90a:xnack+' % HOST
        llvm(d, '-type=bc', targets, *inputs, '-output=' + d.path('m22'))
        m = read(d.path('m22'))
    llvm(d, '-type=bc', '-compress', targets, *inputs, '-output=' + d.path('mc'),
         env={'COMPRESSED_BUNDLE_FORMAT_VERSION': '2'} if R22 else None)
    mc = read(d.path('mc'))

    def pad(parts):
        out = b''
        for p in parts:
            out += b'\0' * (-len(out) % 4096) + p
        return out
    d.put('plain2', pad([a, m]) + b'\0' * 100)
    d.put('ccob2', pad([ac, mc]))
    expect('concat: compress', d, ['plain2', '-o', 'c2'] + V2, 0, '', '')
    check('concat: each bundle is LLVM -compress of it, at 4096', read(d.path('c2')) == pad([ac, mc]))
    expect('concat: decompress', d, ['-d', 'ccob2', '-o', 'd2'], 0, '', '')
    check('concat: each CCOB decompressed, at 4096', read(d.path('d2')) == pad([a, m]))
    d.put('mixed', pad([ac, m]))
    expect('concat: decompress keeps uncompressed bundles', d, ['-d', 'mixed', '-o', 'd3'], 0, '', '')
    check('concat: mixed result', read(d.path('d3')) == pad([a, m]))
    expect('concat: recompress', d, ['--recompress', '--level', '9', 'mixed', '-o', 'r3'] + V2, 0, '', '')
    check('concat: recompress level 9', read(d.path('r3'))[:len(golden('19-hip2-compressed-l9.bc'))] ==
          golden('19-hip2-compressed-l9.bc'))
    expect('concat: verify', d, ['--verify', 'mixed'], 0, 'mixed: ok (2 bundles, 1 compressed)\n', '')
    got = expect('concat: info', d, ['--info', 'mixed'], 0, None, '')
    check('concat: info lists both', 'bundle 1 at 0x1000: uncompressed, %s\n' % harness.human_size(len(m)) in got[1],
          got[1])
    expect('concat: compress refuses a CCOB inside', d, ['mixed', '-o', 'x'], 1, '',
           E + 'mixed: the bundle is already compressed (--recompress changes its settings), at offset 0x0\n')
    d.put('junk', pad([a]) + b'\0' * 10 + b'junk')
    expect('concat: junk after a bundle', d, ['junk', '-o', 'x'], 1, '',
           E + 'junk: neither an offload bundle nor padding after the bundle ending at 0xbc, at offset 0xc6\n')
    check('concat: no output left behind', not os.path.exists(d.path('x')))
    shutil.rmtree(d.dir)


def test_bad_input(root):
    d = Dir(root)
    good = golden('19-hip2-compressed.bc')
    d.put('keep', b'precious')

    def bad(name, data, args, err, out_name='keep'):
        d.put(name, data)
        expect('bad %s' % name, d, args + [name, '-o', out_name], 1, '', E + err)
        check('bad %s: existing output untouched' % name, read(d.path('keep')) == b'precious')
        check('bad %s: no temporary left' % name, all(not n.startswith('.keep') and '.tmp' not in n for n in d.names()),
              d.names())

    h = bytearray(good)
    h[16] ^= 1
    bad('hash', bytes(h), ['-d', '--hash', 'check'],
        'hash: stored hash 0x2bcafb899a29dc95 does not match the decompressed bundle\'s 0x2bcafb899a29dc94, at offset 0x10\n')
    expect('bad hash: --hash warn writes it', d, ['-d', '--hash', 'warn', 'hash', '-o', 'w'], 0, '',
           'offloadtool compress: warning: hash: stored hash 0x2bcafb899a29dc95 does not match the decompressed '
           'bundle\'s 0x2bcafb899a29dc94, at offset 0x10\n')
    check('bad hash: warn output', read(d.path('w')) == golden('19-hip2.bc'))
    expect('bad hash: --hash skip', d, ['-d', '--hash', 'skip', 'hash', '-o', 'w2'], 0, '', '')
    expect('bad hash: not checked by default, as LLVM', d, ['-d', 'hash', '-o', 'w3'], 0, '', '')
    check('bad hash: default output', read(d.path('w3')) == golden('19-hip2.bc'))
    expect('bad hash: verify fails', d, ['--verify', 'hash'], 1, '',
           E + 'hash: stored hash 0x2bcafb899a29dc95 does not match the decompressed bundle\'s 0x2bcafb899a29dc94, '
           'at offset 0x10\n')
    got = expect('bad hash: info reports it', d, ['--info', 'hash'], 0, None, '')
    check('bad hash: info says MISMATCH', '(MISMATCH)' in got[1], got[1])
    h = bytearray(good)
    struct.pack_into('<I', h, 12, 189)
    bad('size+1', bytes(h), ['-d'],
        'size+1: zstd data of 0x71 bytes does not decompress to 0xbd bytes: declared uncompressed size 0xbd but the '
        'data decompresses to 0xbc bytes, at offset 0x18\n')
    struct.pack_into('<I', h, 12, 0xfffffff0)
    bad('huge', bytes(h), ['-d'],
        'huge: zstd data of 0x71 bytes does not decompress to 0xfffffff0 bytes: declared uncompressed size 0xfffffff0 '
        'is more than 0x71 compressed bytes can hold, at offset 0x18\n')
    h = bytearray(good)
    struct.pack_into('<I', h, 8, 0x10000)
    bad('total', bytes(h), ['-d'], 'total: compressed bundle total size 0x10000 exceeds the file size 0x89, at offset 0x8\n')
    struct.pack_into('<I', h, 8, 4)
    bad('total-small', bytes(h), ['-d'],
        'total-small: compressed bundle total size 0x4 is smaller than its header (0x18 bytes), at offset 0x8\n')
    bad('truncated', good[:16], ['-d'],
        'truncated: compressed bundle header (0x18 bytes) extends past the end of the file (0x10 bytes), at offset 0x0\n')
    bad('cut', good[:100], ['-d'],
        'cut: compressed bundle total size 0x89 exceeds the file size 0x64, at offset 0x8\n')
    bad('method', good[:6] + b'\7\0' + good[8:], ['-d'], 'method: unknown compression method 7, at offset 0x6\n')
    bad('version', good[:4] + b'\x09\0' + good[6:], ['--recompress'],
        'version: unknown compressed bundle version 9, at offset 0x4\n')
    h = bytearray(good)
    h[24] ^= 0x55
    bad('frame', bytes(h), ['-d'],
        'frame: zstd data of 0x71 bytes does not decompress to 0xbc bytes: Unknown frame descriptor, at offset 0x18\n')
    # the second of two CCOBs lies: nothing is written, not even the first
    bad('second', good + b'\0' * (4096 - len(good)) + good[:12] + struct.pack('<I', 189) + good[16:], ['-d'],
        'second: zstd data of 0x71 bytes does not decompress to 0xbd bytes: declared uncompressed size 0xbd but the '
        'data decompresses to 0xbc bytes, at offset 0x1018\n')
    bad('notabundle', b'hello\n', ['-d'], 'notabundle: not an offload bundle or compressed offload bundle\n')
    bad('empty', b'', [], 'empty: not an offload bundle or compressed offload bundle\n')
    d.put('p.bc', golden('19-hip2.bc'))
    expect('options: bad window', d, ['--window', '40', 'p.bc', '-o', 'x'], 1, '',
           E + '--window 40: expected llvm, auto or a window log from 10 to 31\n')
    expect('options: zlib with threads', d, ['--method', 'zlib', '--threads', '2', 'p.bc', '-o', 'x'], 1, '',
           E + '--threads, --window and --long are zstd settings\n')
    expect('options: no output', d, ['p.bc'], 1, '', E + 'no output file: give -o (or \'-o -\' for standard output)\n')
    got = expect('options: stdout', d, ['p.bc', '-o', '-'], 0, None, '')
    check('options: stdout bytes', got[1].startswith('CCOB'), got[1][:8])
    check('bad: no stray files', 'x' not in d.names(), d.names())
    shutil.rmtree(d.dir)


def run_cases(root):
    for t in (test_llvm_identity, test_llvm_reads, test_threads, test_info, test_concatenated, test_bad_input,
              test_auto_window, test_resident, test_compress_resident):
        t(root)


def main():
    return harness.run_suite('compress-test', run_cases, needs=[LLVM])


if __name__ == '__main__':
    sys.exit(main())
