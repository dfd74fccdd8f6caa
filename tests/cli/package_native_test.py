#!/usr/bin/env python3
"""`offloadtool package` (the native applet): one case per behaviour with the
exact exit code, stdout and stderr, and the files left behind (a failing case
must leave no output and no temporary file).

Environment: OFFLOADTOOL = the offloadtool binary, OT_TEST_DATA = tests/data (LLVM's reference outputs).
Prints "N passed, M failed"; exits 1 on failure.
"""

import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import OT, check, expect, golden  # noqa: E402

LLVM_MC = harness.llvm('llvm-mc')
E = 'offloadtool package: error: '


def Case(root, files):
    return harness.Case(root, 'package', files)


def main():
    return harness.run_suite('package-native', run_cases)


def run_cases(root):
    inputs = {n: golden(n) for n in ('tgt1', 'tgt2', 'host.i')}
    p3 = golden('19-packager-3.bin')
    images = ['file=tgt1,triple=amdgcn-amd-amdhsa,arch=gfx908,kind=openmp',
              'file=tgt2,triple=nvptx64-nvidia-cuda,arch=sm_70,kind=cuda,foo=bar,foo=baz',
              'file=host.i,triple=x86_64-unknown-linux-gnu,kind=hip']

    # --- create ---
    c = Case(root, inputs)
    expect('create: LLVM 19 bytes', c, ['create', '-o', 'p3.bin'] + [x for i in images for x in ('--image', i)], 0, '',
           files=['p3.bin'])
    check('create: equals the golden file', c.files().get('p3.bin') == p3)
    c = Case(root, inputs)
    expect('create: to stdout, no file', c, ['create', '-o', '-', '--image', images[0]], 0, None, files=[])
    r = harness.run([OT, 'package', 'create', '-o', '-', '--image', images[0]], cwd=c.dir)
    check('create: stdout equals golden 1', r.stdout == golden('19-packager-1.bin'))
    c = Case(root, inputs)
    expect('create: no image gives an empty file', c, ['create', '-o', 'e.bin'], 0, '', files=['e.bin'])
    check('create: empty', c.files()['e.bin'] == b'')
    c = Case(root, inputs)
    expect('create: two files in one --image', c, ['create', '-o', 'two.bin', '--image',
                                                   'file=tgt1,file=tgt1,triple=amdgcn-amd-amdhsa,arch=gfx908,kind=openmp'],
           0, '', files=['two.bin'])
    check('create: two binaries', c.files()['two.bin'] == golden('19-packager-1.bin') * 2)

    c = Case(root, inputs)
    expect('create: missing triple', c, ['create', '-o', 'x.bin', '--image', 'file=tgt1'], 1, '',
           E + "image 0: 'file' and 'triple' are required image arguments\n", files=[])
    expect('create: second image missing file', c, ['create', '-o', 'x.bin', '--image', images[0], '--image', 'triple=t'],
           1, '', E + "image 1: 'file' and 'triple' are required image arguments\n", files=[])
    expect('create: unreadable file', c, ['create', '-o', 'x.bin', '--image', 'file=nope.o,triple=t'], 1, '',
           E + "'nope.o': No such file or directory\n", files=[])
    expect('create: unknown kind', c, ['create', '-o', 'x.bin', '--image', 'file=tgt1,triple=t,kind=sycl'], 1, '',
           E + "--image file=tgt1,triple=t,kind=sycl: unknown offload kind 'sycl' (openmp, cuda, hip or none)\n",
           files=[])
    expect('create: output folder missing', c, ['create', '-o', 'no/x.bin', '--image', images[0]], 1, '',
           E + "'no/x.bin': No such file or directory\n", files=[])
    expect('create: -o required', c, ['create', '--image', images[0]], 1, '',
           E + "--output is required (see 'offloadtool package --help')\n", files=[])
    expect('no subcommand', c, [], 1, '', E + "A subcommand is required (see 'offloadtool package --help')\n")
    got = expect('help', c, ['--help'], 0, None)
    check('help lists the subcommands', all(w in got[1] for w in ('create', 'extract', 'list')), got[1])
    got = expect('create --help', c, ['create', '--help'], 0, None)
    check('create --help shows --image', '--image' in got[1], got[1])

    # --- list ---
    c = Case(root, {'p3.bin': p3})
    # Sizes as people read them, exact with --bytes; offsets in hex.
    text = ('p3.bin: 3 offload images\n\n'
            'image 0: raw, binary at 0x0 (176 B, version 1)\n'
            '  kind      <none> (0)\n  producer  openmp (1)\n  image     25 B at 0x90\n'
            '  arch      gfx908\n  triple    amdgcn-amd-amdhsa\n\n'
            'image 1: raw, binary at 0xb0 (208 B, version 1)\n'
            '  kind      <none> (0)\n  producer  cuda (2)\n  image     25 B at 0x160\n'
            '  arch      sm_70\n  triple    nvptx64-nvidia-cuda\n  foo       bar,baz\n\n'
            'image 2: raw, binary at 0x180 (136 B, version 1)\n'
            '  kind      <none> (0)\n  producer  hip (3)\n  image     7 B at 0x200\n'
            '  triple    x86_64-unknown-linux-gnu\n')
    expect('list: text', c, ['list', 'p3.bin'], 0, text, files=[])
    expect('list --bytes: exact sizes', c, ['list', '--bytes', 'p3.bin'], 0, text.replace(' B', ' bytes'), files=[])
    got = expect('list: json', c, ['list', '--json', 'p3.bin'], 0, None, files=[])
    try:
        j = json.loads(got[1])
        im = j['images'][1]
        ok = (j['schema'] == 'offloadtool-package-list/2' and 'version' not in j and j['file'] == 'p3.bin' and
              len(j['images']) == 3 and im['offload_kind'] == {'value': 2, 'name': 'cuda'} and
              im['image_kind'] == {'value': 0, 'name': '', 'description': '<none>'} and
              im['binary'] == {'offset': 176, 'size': 208, 'version': 1, 'entry': 0} and
              im['strings'] == [{'key': 'arch', 'value': 'sm_70'}, {'key': 'triple', 'value': 'nvptx64-nvidia-cuda'},
                                {'key': 'foo', 'value': 'bar,baz'}] and
              im['image'] == {'offset': 352, 'size': 25} and im['triple'] == 'nvptx64-nvidia-cuda' and
              im['arch'] == 'sm_70' and im['origin'] == 'p3.bin' and im['container'] == 'raw' and im['flags'] == 0 and
              p3[352:352 + 25] == golden('tgt2'))
    except (ValueError, KeyError) as e:
        ok = False
        got = (got[0], got[1] + repr(e), got[2])
    check('list: json fields', ok, got[1])
    got = expect('list: stdin', c, ['list', '-'], 0, None, stdin=p3)
    check('list: stdin names "-"', got[1].startswith('-: 3 offload images\n'), got[1])
    c = Case(root, {'t.c': b'int x;\n', 'e': b''})
    expect('list: no images in a text file', c, ['list', 't.c'], 0, 't.c: 0 offload images\n')
    expect('list: json without images', c, ['list', '--json', 'e'], 0,
           '{\n  "schema": "offloadtool-package-list/2",\n  "file": "e",\n  "images": []\n}\n')
    odd = bytearray(p3[:0xb0])
    # A string value with a tab, a quote and a byte that is not UTF-8: JSON escapes.
    odd[0x8a:0x8e] = b'\t"\xff.'
    c = Case(root, {'odd.bin': bytes(odd)})
    got = expect('list: json escapes', c, ['list', '--json', 'odd.bin'], 0, None)
    check('list: escaped value', '{"key": "arch", "value": "gfx\\u0009\\"\\u00ff."}' in got[1], got[1])

    # Damaged input: our message with the file and offset, exit 1.
    bad = bytearray(p3)
    struct.pack_into('<Q', bad, 0xb0 + 48, 1 << 60)
    c = Case(root, {'bad.bin': bytes(bad), 'trunc.bin': p3[:-8], 'v3.bin': p3[:4] + b'\3\0\0\0' + p3[8:]})
    expect('list: string entries past the end', c, ['list', 'bad.bin'], 1, '',
           E + 'bad.bin: entry 0: 0x1000000000000000 string entries at 0x48 extend past the end of the binary '
           '(0xd0 bytes), at offset 0xd8\n')
    expect('list: truncated', c, ['list', 'trunc.bin'], 1, '',
           E + 'trunc.bin: offload binary size 0x88 extends past the end of the data (0x80 bytes left), at offset 0x188\n')
    expect('list: version 3', c, ['list', 'v3.bin'], 1, '',
           E + 'v3.bin: unsupported offload binary version 3 (1 and 2 are supported), at offset 0x4\n')
    expect('extract: damaged input writes nothing', c, ['extract', 'bad.bin'], 1, '',
           E + 'bad.bin: entry 0: 0x1000000000000000 string entries at 0x48 extend past the end of the binary '
           '(0xd0 bytes), at offset 0xd8\n', files=[])
    expect('list: missing file', c, ['list', 'nope'], 1, '', E + "'nope': No such file or directory\n")

    # --- extract ---
    c = Case(root, {'p3.bin': p3})
    expect('extract: every image by default', c, ['extract', 'p3.bin'], 0, '',
           files=['p3-amdgcn-amd-amdhsa-gfx908.0.', 'p3-nvptx64-nvidia-cuda-sm_70.1.',
                  'p3-x86_64-unknown-linux-gnu-.2.'])
    check('extract: contents', c.files()['p3-nvptx64-nvidia-cuda-sm_70.1.'] == golden('tgt2'))
    c = Case(root, {'p3.bin': p3, 'out/.keep': b''})
    expect('extract: selectors and -C', c, ['extract', '--image', 'kind=openmp', '--image', 'foo=bar,foo=baz',
                                            'p3.bin', '-C', 'out'], 0, '',
           files=['out/p3-amdgcn-amd-amdhsa-gfx908.0.', 'out/p3-nvptx64-nvidia-cuda-sm_70.0.'])
    c = Case(root, {'p3.bin': p3})
    expect('extract: file= with several matches warns, keeps the last', c,
           ['extract', 'p3.bin', '--image', 'file=one.img'], 0, '',
           "offloadtool package: warning: Multiple inputs match to a single file, 'one.img'\n", files=['one.img'])
    check('extract: the last match', c.files()['one.img'] == golden('host.i'))
    c = Case(root, {'p3.bin': p3})
    expect('extract: --archive', c, ['extract', 'p3.bin', '--archive', '--image', 'file=all.a'], 0, '', files=['all.a'])
    a = c.files()['all.a']
    check('extract: archive layout', a.startswith(b'!<arch>\np3.bin/         0           0     0     644     25        `\n'),
          a[:140])
    expect('extract: --archive without file=', c, ['extract', 'p3.bin', '--archive'], 1, '',
           E + "--archive needs a 'file' argument in every --image that matches\n", files=['all.a'])
    expect('extract: no match writes nothing', c, ['extract', 'p3.bin', '--image', 'arch=gfx1100'], 0, '',
           files=['all.a'])
    expect('extract: a later failure leaves no earlier output', c,
           ['extract', 'p3.bin', '--image', 'kind=openmp', '--image', 'file=no/dir/x,kind=hip'], 1, '',
           E + "'no/dir/x': No such file or directory\n", files=['all.a'])
    expect('extract: from stdin', c, ['extract', '-', '--image', 'kind=hip'], 0, '', stdin=p3)
    check('extract: stdin stem is "-"', '--x86_64-unknown-linux-gnu-.0.' in c.new_files(), c.new_files())

    # Objects and archives (when llvm-mc is installed).
    if os.path.exists(LLVM_MC):
        d = harness.Folder(root, files={
            'p3.bin': p3, 'e.s': b'.section .llvm.offloading,"e",@llvm_offloading\n.incbin "p3.bin", 0, 0xb0\n'})
        d.run([LLVM_MC, '-triple=x86_64-pc-linux-gnu', '-filetype=obj', 'e.s', '-o', 'e.o'], check=True)
        eo = d.read('e.o')
        c = Case(root, {'e.o': eo, 'p3.bin': p3})
        got = expect('list: ELF section', c, ['list', 'e.o'], 0, None)
        check('list: section named', 'image 0: section .llvm.offloading, binary at 0x40 (176 B, version 1)' in got[1],
              got[1])
        expect('extract: --archive from an object names the member by the input', c,
               ['extract', 'e.o', '--archive', '--image', 'file=lib.a'], 0, '', files=['lib.a'])
        check('extract: member e.o', c.files()['lib.a'].startswith(b'!<arch>\ne.o/'), c.files()['lib.a'][:80])

    release_cases(root)
    version2_cases(root)


def under_release(release, fn):
    """fn() with offloadtool impersonating `release` (OFFLOADTOOL_LLVM, which
    the harness sets to the suite's release and each run inherits)."""
    saved = os.environ['OFFLOADTOOL_LLVM']
    os.environ['OFFLOADTOOL_LLVM'] = release
    try:
        return fn()
    finally:
        os.environ['OFFLOADTOOL_LLVM'] = saved


def release_cases(root):
    """create numbers kind=hip and kind=sycl as the impersonated release does
    (19: 3 and an error, as 19 has no sycl; 22: 4 and 8, the reference notes'
    section 2.1); list and extract name every release's numbers."""
    for release, hip, sycl in (('19', 3, None), ('22', 4, 8)):
        c = Case(root, {'a.o': b'IMAGE'})
        args = ['create', '-o', 'k.bin', '--image', 'file=a.o,triple=amdgcn-amd-amdhsa,arch=gfx906,kind=hip']
        under_release(release, lambda: expect('create %s: kind=hip' % release, c, args, 0, '', files=['k.bin']))
        kind = struct.unpack_from('<H', c.files()['k.bin'], 0x22)[0]
        check('create %s: kind=hip is %d' % (release, hip), kind == hip, kind)
        args = ['create', '-o', 's.bin', '--image', 'file=a.o,triple=spirv64,kind=sycl']
        if sycl is None:
            under_release(release, lambda: expect(
                'create %s: kind=sycl' % release, c, args, 1, '',
                E + "--image file=a.o,triple=spirv64,kind=sycl: unknown offload kind 'sycl' (openmp, cuda, hip or none)\n",
                files=['k.bin']))
        else:
            under_release(release, lambda: expect('create %s: kind=sycl' % release, c, args, 0, '',
                                                  files=['k.bin', 's.bin']))
            kind = struct.unpack_from('<H', c.files()['s.bin'], 0x22)[0]
            check('create %s: kind=sycl is %d' % (release, sycl), kind == sycl, kind)
            under_release(release, lambda: expect(
                'create %s: unknown kind' % release, c,
                ['create', '-o', 'x.bin', '--image', 'file=a.o,triple=t,kind=openacc'], 1, '',
                E + "--image file=a.o,triple=t,kind=openacc: unknown offload kind 'openacc' "
                "(openmp, cuda, hip, sycl or none)\n", files=['k.bin', 's.bin']))

    # Images as 19 (hip 3) and 22 (hip 4, sycl 8) number them, read under either release.
    hip19 = golden('19-packager-3.bin')[0x180:]  # host.i, kind=hip as 19 writes it
    mixed = hip19
    for kind in (4, 8):
        b = bytearray(hip19)
        struct.pack_into('<H', b, 0x22, kind)
        mixed += bytes(b)
    for release in ('19', '22'):
        c = Case(root, {'m.bin': mixed})
        got = under_release(release, lambda: expect('list %s: every release\'s kinds' % release, c,
                                                    ['list', 'm.bin'], 0, None, files=[]))
        producers = [line.split()[1:] for line in got[1].splitlines() if line.startswith('  producer')]
        check('list %s: 3 and 4 are hip, 8 sycl' % release,
              producers == [['hip', '(3)'], ['hip', '(4)'], ['sycl', '(8)']], got[1])
        got = under_release(release, lambda: expect('list --json %s' % release, c, ['list', '--json', 'm.bin'], 0,
                                                    None, files=[]))
        kinds = [i['offload_kind'] for i in json.loads(got[1])['images']] if got[0] == 0 else None
        check('list --json %s: offload kinds' % release, kinds == [{'value': 3, 'name': 'hip'}, {
            'value': 4, 'name': 'hip'}, {'value': 8, 'name': 'sycl'}], kinds)
        under_release(release, lambda: expect('extract %s: kind=hip selects 3 and 4' % release, c,
                                              ['extract', 'm.bin', '--archive', '--image', 'file=h.a,kind=hip',
                                               '--image', 'file=s.a,kind=sycl'],
                                              0, '', files=['h.a', 's.a']))
        a = c.files().get('h.a', b'')
        check('extract %s: two hip members' % release, a.count(b'm.bin/') == 2, a[:200])


def version2_cases(root):
    """LLVM 23's OffloadBinary version 2 (23-packager-3.bin: tgt1, tgt2 and
    host.i in one binary, as llvm-offload-binary 23 wrote it), alone and after
    LLVM 19's three version-1 binaries: package list/extract, list and
    unbundle read it under every release, and so does the packager
    personality of 19 and 22 (whose own tools reject version 2: a deliberate
    difference). Every image read must be the file packaged."""
    images = {'tgt1': golden('tgt1'), 'tgt2': golden('tgt2'), 'host.i': golden('host.i')}
    v2 = golden('23-packager-3.bin')
    mixed = golden('19-packager-3.bin') + v2
    for release in ('19', '22', '23'):
        c = Case(root, {'v2.bin': v2, 'mixed.bin': mixed})
        got = under_release(release, lambda: expect('package list %s: version 2' % release, c,
                                                    ['list', '--json', 'mixed.bin'], 0, None, files=[]))
        found = json.loads(got[1])['images'] if got[0] == 0 else []
        check('package list %s: six images, the last three in one version 2 binary' % release,
              [i['binary']['version'] for i in found] == [1, 1, 1, 2, 2, 2], got[1][:400])
        args = ['extract', 'mixed.bin', '--archive', '--image', 'file=omp.a,kind=openmp']
        under_release(release, lambda: expect('package extract --archive %s: version 2' % release, c, args, 0, '',
                                              files=['omp.a']))
        # The last match of each (LLVM 23's) is written.
        args = ['extract', 'mixed.bin', '--image', 'file=t2.o,kind=cuda', '--image',
                'file=h.i,triple=x86_64-unknown-linux-gnu']
        warn = "offloadtool package: warning: Multiple inputs match to a single file, '%s'\n"
        under_release(release, lambda: expect('package extract %s: version 2' % release, c, args, 0, '',
                                              warn % 't2.o' + warn % 'h.i', files=['h.i', 'omp.a', 't2.o']))
        a = c.files().get('omp.a', b'')
        check('package extract %s: both tgt1 in the archive' % release, a.count(images['tgt1']) == 2, a[:200])
        check('package extract %s: tgt2 and host.i' % release,
              c.files().get('t2.o') == images['tgt2'] and c.files().get('h.i') == images['host.i'])

        c = Case(root, {'mixed.bin': mixed})
        r = under_release(release, lambda: harness.run([OT, 'list', 'mixed.bin'], cwd=c.dir, text=True))
        check('list %s: six entries in four binaries' % release,
              r.returncode == 0 and r.stdout.endswith('mixed.bin: 6 entries in 4 containers, 114 B\n'), r.stdout)
        r = under_release(release, lambda: harness.run([OT, 'unbundle', '--extract-dir', 'xd', 'mixed.bin'],
                                                       cwd=c.dir))
        out = {k: v for k, v in c.files().items() if k.startswith('xd/')}
        check('unbundle --extract-dir %s: version 2' % release,
              r.returncode == 0 and len(out) == 6 and sorted(out.values()) == sorted(list(images.values()) * 2),
              (r.returncode, r.stderr, sorted(out)))

    # The packager personality of 19 and 22 reads version 2 (23: packager-diff-23 compares with LLVM 23).
    for release in ('19', '22'):
        c = Case(root, {'mixed.bin': mixed})
        os.makedirs(c.path('bin'))
        os.symlink(OT, c.path('bin/llvm-offload-binary-' + release))
        r = harness.run(['bin/llvm-offload-binary-' + release, 'mixed.bin', '--image=kind=openmp',
                         '--image=file=h.i,kind=hip'], cwd=c.dir)
        got = {k: v for k, v in c.files().items() if not k.startswith('bin/') and k != 'mixed.bin'}
        # 19 numbers hip 3, so LLVM 23's hip image (4) is not selected by 19's kind=hip, only 19's own.
        check('llvm-offload-binary-%s reads version 2' % release,
              r.returncode == 0 and r.stdout == b'' and got == {
                  'mixed-amdgcn-amd-amdhsa-gfx908.0.': images['tgt1'],
                  'mixed-amdgcn-amd-amdhsa-gfx908.1.': images['tgt1'], 'h.i': images['host.i']},
              (r.returncode, r.stderr, sorted(got)))


if __name__ == '__main__':
    sys.exit(main())
