#!/usr/bin/env python3
"""The native `offloadtool bundle`, `list` and `unbundle` applets: bundles
byte-identical to LLVM 19's clang-offload-bundler for the same inputs, entries
given back verbatim, and inputs holding several concatenated bundles and CCOBs
(a linked .hip_fatbin section) read bundle by bundle. Every failing case
asserts the exact message and that no output or temporary file is left.

Environment: OFFLOADTOOL = the offloadtool binary, OT_TEST_DATA = tests/data (LLVM's reference outputs).
Prints "N passed, M failed"; exits 1 on failure.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import LLVM_BUNDLER, OT, Case, check, expect, read  # noqa: E402

HOST = 'host-x86_64-unknown-linux-gnu'
G906 = 'hip-amdgcn-amd-amdhsa--gfx906'
G90A = 'hip-amdgcn-amd-amdhsa--gfx90a:xnack+'
SM70 = 'openmp-nvptx64-nvidia-cuda--sm_70'


def llvm_bundle(tmp, targets, inputs, *flags):
    """LLVM 19's bundle of `inputs` (name -> bytes) for `targets`, as bytes."""
    return harness.llvm_bundle(['-targets=' + ','.join(targets)] + list(flags) + ['-input=' + n for n in inputs],
                               inputs, tmp)


def pad(data, align):
    return data + b'\0' * (-len(data) % align)


def bundle_cases(root, tmp, dev):
    for flags, native in ((['-type=bc'], []), (['-type=bc', '-bundle-align=4096'], ['--align', '4096']),
                          (['-type=bc', '-compress'], ['--compress']),
                          (['-type=bc', '-compress', '-compression-level=9'], ['--compress', '--level', '9']),
                          (['-type=i'], ['--type', 'i'])):
        ids = [HOST, G906, G90A] if '-type=i' not in flags else [HOST, G906]
        ins = dict(list(dev.items())[:len(ids)])
        ref = llvm_bundle(tmp, ids, ins, *flags)
        c = Case(root, 'bundle', ins)
        args = [x for i, n in zip(ids, ins) for x in ('-t', '%s=%s' % (i, n))] + ['-o', 'out.bc'] + native
        expect('bundle %s' % ' '.join(native), c, args, 0, '', files=['out.bc'])
        check('bundle %s: LLVM 19 bytes' % ' '.join(native), c.files().get('out.bc') == ref)


def concatenated_cases(root, tmp, dev):
    """Three translation units' fat binaries, linked into one section: 4096-aligned, zero-filled gaps."""
    tu1 = llvm_bundle(tmp, [HOST, G906, G90A], {'h': b'', 'd1': dev['d1'], 'd2': dev['d2']},
                      '-type=o', '-bundle-align=4096')
    tu2 = llvm_bundle(tmp, [HOST, G906, SM70], {'h': b'', 'd3': dev['d3'], 'd4': dev['d4']},
                      '-type=o', '-bundle-align=4096', '-compress')
    tu3 = llvm_bundle(tmp, [HOST, G90A], {'h': b'', 'd5': dev['d5']}, '-type=o', '-bundle-align=4096')
    blob = pad(tu1, 4096) + pad(tu2, 4096) + pad(tu3, 4096)
    files = {'fatbin': blob}
    c = Case(root, 'list', files)
    # `list` walks every container now: one header line per bundle, then its
    # entries; --json gives the IDs, chains and offsets checked here.
    got = expect('list: every bundle of a concatenated blob, in file order', c, ['fatbin', '--json'], 0, None,
                 files=[])
    entries = json.loads(got[1])['entries'] if got[0] == 0 else []
    check('list: the IDs of all three bundles, in file order', [e['id'] for e in entries] ==
          [HOST + '-', G906, G90A, HOST + '-', G906, SM70, HOST + '-', G90A], entries)
    second, third = 4096 * ((len(tu1) + 4095) // 4096), 4096 * ((len(tu1) + 4095) // 4096 + (len(tu2) + 4095) // 4096)
    check('list: each entry names its bundle', [e['path'] for e in entries] ==
          [['fatbin', 'bundle 0 at 0x0']] * 3 + [['fatbin', 'compressed bundle 1 at 0x%x' % second]] * 3 +
          [['fatbin', 'bundle 2 at 0x%x' % third]] * 2, [e['path'] for e in entries])
    want = {1: dev['d1'], 2: dev['d2'], 7: dev['d5']}
    check('list: offsets of uncompressed entries point at their bytes in the file',
          len(entries) == 8 and all(blob[entries[i]['offset']:entries[i]['offset'] + entries[i]['size']] == b
                                    for i, b in want.items()), entries)
    check('list: entries in a compressed bundle have no offset',
          len(entries) == 8 and all(e['offset'] is None and e['uri'] is None and e['compressed']
                                    for e in entries[3:6]), entries)
    got = c.run('fatbin')
    check('list: text form, one header line per bundle and a total',
          got[0] == 0 and got[1].startswith('fatbin, bundle 0 at 0x0: 3 entries\n') and
          'fatbin, compressed bundle 1 at 0x%x: 3 entries\n' % second in got[1] and
          got[1].endswith('fatbin: 8 entries in 3 containers, %s\n' % harness.human_size(sum(
              len(b) for b in (dev['d1'], dev['d2'], dev['d3'], dev['d4'], dev['d5'])))), got)

    # The worklist is drained across the bundles: the first compatible entry wins.
    c = Case(root, 'unbundle', files)
    expect('unbundle: targets from several bundles', c,
           ['fatbin', '-t', G906 + '=o906', '-t', SM70 + '=o70'], 0, '', '',
           files=['o906', 'o70'])
    got = c.files()
    check('unbundle: gfx906 from the first bundle', got.get('o906') == dev['d1'])
    check('unbundle: sm_70 from the compressed second bundle', got.get('o70') == dev['d4'])
    # gfx90a:xnack+ entries do not serve a plain gfx90a request (LLVM's rules): nothing was written
    c = Case(root, 'unbundle', files)
    expect('unbundle: a missing target across all bundles', c,
           ['fatbin', '-t', G906 + '=o906', '-t', 'hip-amdgcn-amd-amdhsa--gfx90a=o90a'], 1, '',
           "offloadtool unbundle: error: Can't find bundles for hip-amdgcn-amd-amdhsa--gfx90a\n", files=[])
    c = Case(root, 'unbundle', files)
    expect('unbundle: xnack+ request served by the first bundle', c,
           ['fatbin', '-t', G90A + '=x'], 0, '', '', files=['x'])
    check('unbundle: xnack+ bytes', c.files().get('x') == dev['d2'])

    # A bundle followed by bytes that are neither padding nor a bundle.
    bad = pad(tu1, 4096) + b'\0' * 16 + b'junk' + tu3
    at = 4096 * ((len(tu1) + 4095) // 4096) + 16
    for applet, args in (('list', ['bad']), ('unbundle', ['bad', '-t', G906 + '=o'])):
        c = Case(root, applet, {'bad': bad, 'o': b'old'})
        expect('%s: junk after a bundle' % applet, c, args, 1, '',
               'offloadtool %s: error: bad: neither an offload bundle nor padding after the bundle ending at 0x%x, '
               'at offset 0x%x\n' % (applet, len(tu1), at), files=[])
        check('%s: existing output untouched' % applet, c.files().get('o') == b'old')
    # A lying CCOB header in the second bundle: reported at its offset in the file.
    lying = bytearray(blob)
    second = 4096 * ((len(tu1) + 4095) // 4096)
    lying[second + 8:second + 12] = (len(blob) + 1).to_bytes(4, 'little')
    c = Case(root, 'list', {'lying': bytes(lying)})
    expect('list: lying total size of a later CCOB', c, ['lying'], 1, '',
           'offloadtool list: error: lying: compressed bundle total size 0x%x exceeds the file size 0x%x, '
           'at offset 0x%x\n' % (len(blob) + 1, len(blob) - second, second + 8), files=[])


def archive_cases(root, tmp, dev):
    """`list` of a static device library made by llvm-ar from LLVM 19's bundles."""
    members = {'a.bc': llvm_bundle(tmp, [HOST, G906], {'h': b'', 'd1': dev['d1']}, '-type=bc'),
               'b.bc': llvm_bundle(tmp, [HOST, G90A], {'h': b'', 'd2': dev['d2']}, '-type=bc', '-compress'),
               'plain.txt': b'not a bundle\n'}
    lib = harness.llvm_ar(members, tmp)
    c = Case(root, 'list', {'lib.a': lib})
    got = expect('list: every member of an archive, compressed ones too', c, ['lib.a', '--json'], 0, None, files=[])
    entries = json.loads(got[1])['entries'] if got[0] == 0 else []
    check('list: archive members in the chain', [(e['path'], e['id']) for e in entries] ==
          [(['lib.a', 'a.bc', 'bundle at 0x0'], HOST + '-'), (['lib.a', 'a.bc', 'bundle at 0x0'], G906),
           (['lib.a', 'b.bc', 'compressed bundle at 0x0'], HOST + '-'),
           (['lib.a', 'b.bc', 'compressed bundle at 0x0'], G90A)], entries)
    check('list: the offset of an entry in a plain member is its offset in the archive',
          len(entries) == 4 and lib[entries[1]['offset']:entries[1]['offset'] + entries[1]['size']] == dev['d1'],
          entries)
    got = c.run('lib.a')
    check('list: text form names the members', got[0] == 0 and got[1].startswith('lib.a(a.bc), bundle at 0x0: 2 entries\n')
          and 'lib.a(b.bc), compressed bundle at 0x0: 2 entries\n' in got[1], got)
    c = Case(root, 'list', {'lib.a': lib[:-5]})
    got = c.run('lib.a')
    # entries are printed as they are found: the members before the damage, no total line, then the error
    check('list: a truncated archive lists the members before the damage, then one error line naming it',
          got[0] == 1 and got[1].startswith('lib.a(a.bc), bundle at 0x0: 2 entries\n') and
          '\nlib.a:' not in got[1] and got[2].startswith('offloadtool list: error: lib.a: ') and
          got[2].count('\n') == 1, got)


def stdin_cases(root, tmp, dev):
    """`unbundle -`: standard input, read once, serves the type's detection and the unbundling."""
    plain = llvm_bundle(tmp, [HOST, G906, G90A], {'h': b'', 'd1': dev['d1'], 'd2': dev['d2']}, '-type=bc')
    packed = llvm_bundle(tmp, [HOST, G906], {'h': b'', 'd3': dev['d3']}, '-type=bc', '-compress')
    for what, data, image in (('a bundle', plain, dev['d2']), ('a compressed bundle', packed, None)):
        c = Case(root, 'unbundle', {})
        target = G90A if image else G906
        expect('unbundle - (%s) -t %s=out' % (what, target), c, ['-', '-t', '%s=out' % target], 0, '', files=['out'],
               stdin=data)
        check('unbundle - (%s): the entry' % what, c.files().get('out') == (image or dev['d3']))
    lib = harness.llvm_ar({'a.bc': plain}, tmp)
    ref = harness.Folder(tmp, files={'lib.a': lib}).dir
    r = harness.run([LLVM_BUNDLER, '-type=a', '-unbundle', '-targets=' + G906, '-input=lib.a', '-output=dev.a'],
                    cwd=ref, text=True)
    check('LLVM 19 unbundles the archive', r.returncode == 0, r.stderr)
    c = Case(root, 'unbundle', {})
    expect('unbundle - (an archive) -t %s=dev.a' % G906, c, ['-', '-t', '%s=dev.a' % G906], 0, '', files=['dev.a'],
           stdin=lib)
    check('unbundle - (an archive): LLVM 19\'s device archive', c.files().get('dev.a') == read(os.path.join(ref, 'dev.a')))


def large_compressed_cases(root, tmp):
    """A compressed bundle of 80 MiB that compresses to a few KiB (zero-padded
    images): unbundled from a scratch file in steps, memory stays flat, by the
    native applet and the LLVM personality alike."""
    images = {'z906': b'device image 906 ' + bytes(40 << 20), 'z90a': b'device image 90a ' + bytes(40 << 20)}
    d = harness.Folder(tmp, files=images).dir
    r = harness.run([LLVM_BUNDLER, '-type=bc', '-compress', '-targets=%s,%s' % (G906, G90A), '-input=z906',
                     '-input=z90a', '-output=z.bc'], cwd=d, text=True)
    check('LLVM 19 compresses an 80 MiB bundle', r.returncode == 0, r.stderr)
    limit = harness.resident_budget_kib(32)
    for name, argv in (('unbundle', [OT, 'unbundle', 'z.bc', '-t', '%s=o906' % G906, '-t', '%s=o90a' % G90A]),
                       ('clang-offload-bundler -unbundle',
                        [OT, 'clang-offload-bundler', '-type=bc', '-unbundle', '-targets=%s,%s' % (G906, G90A),
                         '-input=z.bc', '-output=o906', '-output=o90a'])):
        for o in ('o906', 'o90a'):
            if os.path.exists(os.path.join(d, o)):
                os.unlink(os.path.join(d, o))
        rc, peak = harness.peak_resident_kib(argv, cwd=d)
        same = all(os.path.exists(os.path.join(d, o)) and read(os.path.join(d, o)) == images[i]
                   for o, i in (('o906', 'z906'), ('o90a', 'z90a')))
        check('%s of an 80 MiB compressed bundle: the images, peak resident %d KiB <= %d KiB' % (name, peak, limit),
              rc == 0 and same and peak <= limit, 'exit %d' % rc)


def run_cases(root):
    dev = {'d%d' % i: (b'device image %d ' % i) * (100 + 37 * i) for i in range(1, 6)}
    tmp = os.path.join(root, 'llvm')
    os.makedirs(tmp)
    bundle_cases(root, tmp, dev)
    concatenated_cases(root, tmp, dev)
    archive_cases(root, tmp, dev)
    stdin_cases(root, tmp, dev)
    large_compressed_cases(root, tmp)


def main():
    return harness.run_suite('bundler-native', run_cases, needs=[LLVM_BUNDLER, harness.llvm('llvm-ar')])


if __name__ == '__main__':
    sys.exit(main())
