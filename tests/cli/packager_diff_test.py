#!/usr/bin/env python3
"""Differential test: offloadtool's clang-offload-packager personality against
the real tool of the suite's LLVM release (harness.RELEASE, $OT_LLVM_RELEASE:
19's clang-offload-packager, or 22's or 23's llvm-offload-binary, of which
clang-offload-packager is a symlink). meson registers this one suite three
times, packager-diff (19), packager-diff-22 and packager-diff-23.

Each case runs a sequence of command lines once with each tool, in two
directories populated with identical inputs. Both tools are invoked through a
symlink named clang-offload-packager with the same argv[0]
("../bin/clang-offload-packager", relative to the case directory), so their
messages compare equal as they are. Compared: exit code, stdout, stderr and
every file left in the case directory, byte for byte.

The cases cover packaging (hundreds of random --image combinations: several
images, repeated and odd keys, empty files, every image kind, long keys that
make LLVM's DenseMap grow), extraction (selectors, generated names, file=,
--archive with ELF and bitcode members, objects, archives, concatenated and
damaged binaries, stdin) and the command line (errors, help, version,
response files, the program names each release reacts to). Objects come from
the release's clang when it is installed.

What differs between the releases (the OffloadKind numbers of hip and sycl,
22's help without arguments, optional triple, 'file' message and deprecation
warning under the old name) is covered by the same cases run under each, and
by release_facts(), which checks the numbers both tools write against the
reference notes copied here. Under 23, cases23() adds 23's extraction: version
2, mixed and nested inputs, the names, 23's reader's errors, clang 23's objects.

Where offloadtool is deliberately different from LLVM the case asserts
offloadtool's behaviour instead and says why next to it.

Environment: OFFLOADTOOL = the offloadtool binary (required).
Arguments:   [substring]  run only the cases whose name contains it.
             PACKAGER_DIFF_VERBOSE=1 prints every case as it passes.
Prints "N passed, M failed"; exits 1 if anything failed.
"""

import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import CLANG, LLVM_BIN, LLVM_PACKAGER, check, golden, llvm_ar, read, write  # noqa: E402

PROG = '../bin/clang-offload-packager'
# Other names both tools run under (each side's bin/ has them all). 22 warns
# that clang-offload-packager is deprecated when the stem of argv[0] ends with
# that name: under the plain, triple-prefixed and .exe names, not under
# llvm-offload-binary or the versioned name.
NAMES = ('llvm-offload-binary', 'x86_64-linux-gnu-clang-offload-packager', 'clang-offload-packager.exe',
         'clang-offload-packager-' + harness.RELEASE)
# The OffloadKind each release writes for kind=hip and kind=sycl (the
# project's reference notes, section 2.1: 19 writes 3 and 0, 22 writes 4 and 8).
KIND_NUMBERS = {'19': {'hip': 3, 'sycl': 0}, '22': {'hip': 4, 'sycl': 8}, '23': {'hip': 4, 'sycl': 8}}[harness.RELEASE]
# The clang that makes the host objects the extraction cases read: under 23
# clang 22 on this machine, which has ptxas for the nvptx object (the sid
# chroot has none); clang 23's own objects (version 2 binaries) are cases23's.
INPUT_CLANG = '/usr/lib/llvm-22/bin/clang' if harness.RELEASE == '23' else CLANG
harness.VERBOSE = harness.VERBOSE or bool(os.environ.get('PACKAGER_DIFF_VERBOSE'))
FILTER = sys.argv[1] if len(sys.argv) > 1 else None

# ---------------------------------------------------------------------------
# Running one case on one side


def run_case(side, index, files, commands):
    """files: {name: bytes, or None for a folder}; commands: list of
    (argv-after-prog, stdin bytes or None, env) or ('sh', argv) for helper
    programs. Returns (transcript, {path: bytes})."""
    w = side.workdir(index)
    w.prepare(files)
    transcript = []
    for cmd in commands:
        if cmd[0] == 'sh':
            harness.run(cmd[1], cwd=w.case, check=True)
            continue
        args, stdin = cmd[0], cmd[1]
        prog = cmd[3] if len(cmd) > 3 else PROG
        rc, out, err = w.run(args, prog, env=cmd[2] if len(cmd) > 2 else {}, stdin=stdin or b'')
        transcript.append((args, rc, harness.without_own_version_line(out), err))
    out = w.files()
    w.cleanup()
    return transcript, out


# ---------------------------------------------------------------------------
# Inputs

BITCODE = b'BC\xc0\xde' + bytes(range(40))
WRAPPED_BITCODE = b'\xde\xc0\x17\x0b' + bytes(20)


def ob(image, kind=0, offload=0, strings=(), version=1):
    """A v1 OffloadBinary laid out as LLVM 19 does (for damaged-input cases; the
    string table is written naively, which LLVM's reader accepts)."""
    table = b'\0'
    offs = []
    for k, v in strings:
        ko = len(table)
        table += k.encode() + b'\0'
        vo = len(table)
        table += v.encode() + b'\0'
        offs.append((ko, vo))
    n = len(strings)
    strtab = 72 + 16 * n
    img = (strtab + len(table) + 7) // 8 * 8
    size = (img + len(image) + 7) // 8 * 8
    b = bytearray(size)
    b[0:4] = b'\x10\xff\x10\xad'
    struct.pack_into('<IQQQ', b, 4, version, size, 32, 40)
    struct.pack_into('<HHIQQQQ', b, 32, kind, offload, 0, 72, n, img, len(image))
    for i, (ko, vo) in enumerate(offs):
        struct.pack_into('<QQ', b, 72 + 16 * i, strtab + ko, strtab + vo)
    b[strtab:strtab + len(table)] = table
    b[img:img + len(image)] = image
    return bytes(b)


def ob2(*entries, version=2):
    """A version-2 OffloadBinary holding `entries` ((image, image kind, offload
    kind, [(key, value)]), in order) laid out as LLVM 23 writes one (reference
    notes 2.1; the string table is written naively, which LLVM's reader accepts)."""
    table = b'\0'
    records = []
    for _, _, _, strings in entries:
        for k, v in strings:
            ko = len(table)
            table += k.encode() + b'\0'
            vo = len(table)
            table += v.encode() + b'\0'
            records.append((ko, vo, len(v.encode())))
    strtab = 32 + 40 * len(entries) + 24 * len(records)
    img = (strtab + len(table) + 7) // 8 * 8
    size = (img + sum(len(e[0]) for e in entries) + 7) // 8 * 8
    b = bytearray(size)
    b[0:4] = b'\x10\xff\x10\xad'
    struct.pack_into('<IQQQ', b, 4, version, size, 32, len(entries))
    rec, at = 32 + 40 * len(entries), img
    for i, (image, kind, offload, strings) in enumerate(entries):
        struct.pack_into('<HHIQQQQ', b, 32 + 40 * i, kind, offload, 0, rec, len(strings), at, len(image))
        b[at:at + len(image)] = image
        rec += 24 * len(strings)
        at += len(image)
    for i, (ko, vo, vlen) in enumerate(records):
        struct.pack_into('<QQQ', b, 32 + 40 * len(entries) + 24 * i, strtab + ko, strtab + vo, vlen)
    b[strtab:strtab + len(table)] = table
    return bytes(b)


def patched(data, offset, fmt, value):
    b = bytearray(data)
    struct.pack_into(fmt, b, offset, value)
    return bytes(b)


def clang_objects(tmp):
    """Host objects with embedded offload binaries, made by clang 19 (with LLVM's own packager)."""
    src = write(os.path.join(tmp, 'k.c'), 'int g;\nint main(void) {\n  int s = 0;\n#pragma omp target map(tofrom: s)\n'
                '  for (int i = 0; i < 10; ++i) s += i;\n  return s != 45;\n}\n')
    out = {}
    for name, flags in (('x86.o', ['-fopenmp-targets=x86_64-pc-linux-gnu']),
                        ('amd.o', ['--offload-arch=gfx906,gfx90a', '-nogpulib']),
                        ('nv.o', ['--offload-arch=sm_80', '-nogpulib']),
                        # -flto: the host object is bitcode with the binaries in .llvm.offloading globals.
                        ('x86-lto.o', ['-fopenmp-targets=x86_64-pc-linux-gnu', '-flto']),
                        ('amd-lto.o', ['--offload-arch=gfx906,gfx90a', '-nogpulib', '-flto'])):
        obj = os.path.join(tmp, name)
        r = harness.run([INPUT_CLANG, '-fopenmp', '-c', src, '-o', obj] + flags, text=True)
        if r.returncode != 0:
            check('clang 19 builds ' + name, False, r.stderr)
            continue
        out[name] = read(obj)
    return out


def mc_objects(tmp, p3):
    """An ELF object with two SHT_LLVM_OFFLOADING sections and a PROGBITS .llvm.offloading.x, and a
    COFF object with .llvm.offloading and .llvm.offloading$aux sections (one not 8-aligned)."""
    mc = LLVM_BIN + '/llvm-mc'
    d = harness.Folder(tmp, files={'p3.bin': p3})
    sources = {
        'e.o': ('x86_64-pc-linux-gnu', '.section .llvm.offloading,"e",@llvm_offloading\n.incbin "p3.bin"\n'
                '.section .other,"e",@llvm_offloading\n.incbin "p3.bin", 0x180\n'
                '.section .llvm.offloading.x,"a",@progbits\n.ascii "junk"\n'),
        'emb.bc': None,
        'c.obj': ('x86_64-pc-windows-msvc', '.section .llvm.offloading,"dr"\n.incbin "p3.bin", 0xb0, 0xd0\n'
                  '.section .llvm.offloading$aux,"dr"\n.incbin "p3.bin", 0x180\n'),
    }
    out = {}
    for name, src in sources.items():
        if src is None:  # bitcode embedding the same binary twice (one uniqued constant) and another one
            d.put('g1.bin', p3[:0xb0])
            d.put('x.c', 'int x;\n')
            r = d.run([CLANG, '-c', '-emit-llvm', 'x.c', '-o', name] +
                      ['-Xclang', '-fembed-offload-object=p3.bin'] * 2 +
                      ['-Xclang', '-fembed-offload-object=g1.bin'], text=True)
            if r.returncode != 0:
                check('clang 19 embeds offload binaries in ' + name, False, r.stderr)
                continue
            out[name] = d.read(name)
            continue
        triple, text = src
        d.put('in.s', text)
        d.run([mc, '-triple=' + triple, '-filetype=obj', 'in.s', '-o', name], check=True)
        out[name] = d.read(name)
    return out


# ---------------------------------------------------------------------------
# Cases

def P(*args, stdin=None, env=None, name=None):
    return (list(args), stdin, env or {}, '../bin/' + name if name else PROG)


def cases(tmp):
    rnd = random.Random(19)
    inputs = {n: golden(n) for n in ('tgt1', 'tgt2', 'host.i')}
    inputs.update({'a.o': b'IMAGE-A', 'b.bc': b'not bitcode', 'c.cubin': b'\x7fELF cubin-ish', 'd.fatbin': b'FAT',
                   'e.s': b'.version 7.0\n', 'f.O': b'upper', 'g': b'', 'bit.o': BITCODE, 'wrap.x': WRAPPED_BITCODE,
                   '.o': b'dot-o', 'dir/h.o': b'in a dir', 'sp ace.o': b'space', 'empty.o': b''})

    # --- golden files of the reference ---
    yield ('golden-1', inputs, [P('-o', 'p1.bin', '--image=file=tgt1,triple=amdgcn-amd-amdhsa,arch=gfx908,kind=openmp')])
    yield ('golden-3', inputs, [P('-o', 'p3.bin', '--image=file=tgt1,triple=amdgcn-amd-amdhsa,arch=gfx908,kind=openmp',
                                  '--image=file=tgt2,triple=nvptx64-nvidia-cuda,arch=sm_70,kind=cuda,foo=bar,foo=baz',
                                  '--image=file=host.i,triple=x86_64-unknown-linux-gnu,kind=hip')])

    # --- packaging: random combinations ---
    files = [n for n in inputs if n not in ('dir/h.o',)] + ['dir/h.o']
    keys = ['arch', 'foo', 'bar', 'x', 'k1', 'k2', 'feature', 'a-b', 'with space', 'ünï', '', 'triple2', 'file2',
            'kindx', 'Kind', 'TRIPLE']
    kinds = ['openmp', 'cuda', 'hip', 'sycl', 'none', 'OpenMP', '']
    for i in range(260):
        images = []
        for _ in range(rnd.choice([1, 1, 2, 3, 5])):
            parts = ['file=' + rnd.choice(files), 'triple=' + rnd.choice(['amdgcn-amd-amdhsa', 'nvptx64-nvidia-cuda',
                                                                        'x86_64-pc-linux-gnu', 'x', ''])]
            for _ in range(rnd.choice([0, 1, 2, 4, 8])):
                r = rnd.random()
                if r < 0.15:
                    parts.append('kind=' + rnd.choice(kinds))
                elif r < 0.22:
                    parts.append(rnd.choice(keys))  # no '='
                elif r < 0.3:
                    parts.append(rnd.choice(keys) + '=')
                elif r < 0.36:
                    parts.append('arch=' + rnd.choice(['gfx906', 'sm_80', 'gfx90a:xnack+', '']))
                else:
                    parts.append(rnd.choice(keys) + '=' + rnd.choice(['v', 'v=w', 'long-' * 5, 'é', '']))
            rnd.shuffle(parts)
            if rnd.random() < 0.1:
                parts.append('')  # trailing comma
            images.append('--image=' + ','.join(parts))
        yield ('create-random-%d' % i, inputs, [P('-o', 'out.bin', *images)])

    # Many keys (the DenseMap grows past 64 buckets) and keys longer than 64 bytes.
    for n in (47, 48, 49, 100, 300):
        many = ','.join('key%d=%d' % (k, k) for k in range(n))
        yield ('create-many-keys-%d' % n, inputs, [P('-o', 'm.bin', '--image=file=a.o,triple=t,' + many)])
    for n in (63, 64, 65, 127, 128, 129, 200):
        longk = ','.join(('L%d' % k) + 'x' * (n - 1 - len(str(k))) + '=v' for k in range(12))
        yield ('create-long-keys-%d' % n, inputs, [P('-o', 'l.bin', '--image=file=a.o,triple=t,' + longk)])
    yield ('create-no-images', inputs, [P('-o', 'empty.bin')])
    yield ('create-stdin-image', inputs, [P('-o', 's.bin', '--image=file=-,triple=t,arch=a', stdin=b'from stdin')])
    yield ('create-stdout', inputs, [P('-o', '-', '--image=file=a.o,triple=t')])
    yield ('create-separate-values', inputs, [P('-o', 'sep.bin', '--image', 'file=a.o,triple=t', '-image', 'file=tgt2,triple=u')])
    yield ('create-response-file', dict(inputs, rsp=b'-o r.bin --image=file=a.o,triple=t,arch="x y"\n'), [P('@rsp')])
    yield ('create-overwrite-input', inputs, [P('-o', 'a.o', '--image=file=a.o,triple=t')])
    # LLVM 19.1.7 makes one binary per file of a repeated file= key.
    yield ('create-repeated-file', inputs, [P('-o', 'rf.bin', '--image=file=a.o,file=tgt1,triple=t')])
    yield ('create-repeated-file-3', inputs, [P('-o', 'rf.bin', '--image=file=a.o,triple=t,file=bit.o,arch=x,kind=hip,file=tgt2',
                                                '--image=file=e.s,triple=u')])
    yield ('create-repeated-file-missing', inputs, [P('-o', 'rf.bin', '--image=file=a.o,file=nonexist,triple=t')])
    yield ('create-repeated-file-empty', inputs, [P('-o', 'rf.bin', '--image=file=a.o,file=,triple=t')])

    # --- packaging errors (22: a missing triple is none, a missing file has its own message) ---
    yield ('err-missing-triple', inputs, [P('-o', 'x.bin', '--image=file=a.o')])
    yield ('err-missing-triple-arch', inputs, [P('-o', 'x.bin', '--image=file=a.o,arch=gfx906,kind=hip')])
    yield ('err-missing-file', inputs, [P('-o', 'x.bin', '--image=triple=x')])
    yield ('err-missing-file-and-triple', inputs, [P('-o', 'x.bin', '--image=arch=gfx906')])
    yield ('err-second-image-missing', inputs, [P('-o', 'x.bin', '--image=file=a.o,triple=t', '--image=file=tgt1')])
    yield ('err-nonexistent', inputs, [P('-o', 'x.bin', '--image=file=nonexist.o,triple=x')])
    yield ('err-directory-image', dict(inputs, d=None), [P('-o', 'x.bin', '--image=file=d,triple=x')])
    yield ('err-output-dir-missing', inputs, [P('-o', 'nodir/x.bin', '--image=file=a.o,triple=x')])
    yield ('err-output-is-dir', dict(inputs, d=None), [P('-o', 'd', '--image=file=a.o,triple=x')])
    yield ('err-both-modes', inputs, [P('-o', 'x.bin', 'tgt1')])
    yield ('err-unknown-option', inputs, [P('--imag=file=a.o')])
    yield ('err-group', inputs, [P('-ox.bin')])
    yield ('err-two-positionals', inputs, [P('a.o', 'tgt1')])
    # 19 does nothing at all; 22 prints its help when there is neither -o nor an input.
    yield ('nothing-to-do', inputs, [P()])
    yield ('nothing-to-do-image-only', inputs, [P('--image=file=a.o,triple=t')])
    yield ('nothing-to-do-archive-only', inputs, [P('--archive')])
    yield ('nothing-to-do-empty-output', inputs, [P('-o', '')])
    yield ('nothing-to-do-empty-input', inputs, [P('')])
    yield ('help-h-with-output', inputs, [P('-h', '-o', 'x.bin', '--image=file=a.o,triple=t')])
    yield ('help', inputs, [P('--help')])
    yield ('help-hidden', inputs, [P('--help-hidden')])
    yield ('help-h', inputs, [P('-h')])
    yield ('version', inputs, [P('--version')])

    # --- kind numbering: what each release writes, and what its kind= selects ---
    for kind in ('hip', 'sycl', 'openmp', 'cuda', 'none', 'openacc', 'HIP', 'Sycl'):
        yield ('create-kind-%s' % kind, inputs, [P('-o', 'k.bin', '--image=file=a.o,triple=t,arch=a,kind=' + kind)])
    # Images as 19 (hip 3) and 22 (hip 4, sycl 8) write them, side by side.
    releases = (ob(b'HIP19', 1, 3, [('triple', 'amdgcn-amd-amdhsa'), ('arch', 'gfx906')])
                + ob(b'HIP22', 1, 4, [('triple', 'amdgcn-amd-amdhsa'), ('arch', 'gfx90a')])
                + ob(b'SYCL22', 2, 8, [('triple', 'spirv64-unknown-unknown'), ('arch', '')])
                + ob(b'NONE', 1, 0, [('triple', 'x86_64-unknown-linux-gnu'), ('arch', '')]))
    rel = dict(inputs, **{'rel.bin': releases})
    for sel in ('kind=hip', 'kind=sycl', 'kind=none', 'kind=openmp'):
        yield ('extract-release-kinds-%s' % sel, rel, [P('rel.bin', '--image=' + sel)])
        yield ('extract-release-kinds-archive-%s' % sel, rel, [P('rel.bin', '--image=file=k.a,' + sel, '--archive')])
    # A kind=hip image packed by the release, extracted by it (a round trip).
    yield ('roundtrip-kind-hip', inputs, [P('-o', 'h.bin', '--image=file=a.o,triple=t,arch=a,kind=hip'),
                                          P('h.bin', '--image=kind=hip'), P('h.bin', '--image=file=s.o,kind=sycl')])
    yield ('roundtrip-kind-sycl', inputs, [P('-o', 's.bin', '--image=file=a.o,triple=t,arch=a,kind=sycl'),
                                           P('s.bin', '--image=kind=sycl'), P('s.bin', '--image=file=n.o,kind=none')])

    # --- program names: 22's deprecation warning, the versioned name ---
    for name in NAMES:
        yield ('name-%s-create' % name, inputs, [P('-o', 'n.bin', '--image=file=a.o,triple=t', name=name)])
        yield ('name-%s-error' % name, inputs, [P('-o', 'n.bin', '--image=triple=t', name=name)])
        yield ('name-%s-nothing' % name, inputs, [P(name=name)])
        yield ('name-%s-help' % name, inputs, [P('--help', name=name)])
        yield ('name-%s-h' % name, inputs, [P('-h', name=name)])
        yield ('name-%s-usage-error' % name, inputs, [P('--bogus', name=name)])

    # --- extraction from raw binaries ---
    p3 = golden('19-packager-3.bin')
    multi = (ob(b'AMD908', 1, 1, [('arch', 'gfx908'), ('triple', 'amdgcn-amd-amdhsa')])
             + ob(b'AMD90A', 1, 1, [('arch', 'gfx90a'), ('triple', 'amdgcn-amd-amdhsa'), ('feature', 'xnack+')])
             + ob(b'CUBIN', 3, 2, [('arch', 'sm_70'), ('triple', 'nvptx64-nvidia-cuda')])
             + ob(b'BITCODE', 2, 3, [('triple', 'amdgcn-amd-amdhsa'), ('arch', 'gfx1030')])
             + ob(b'NONE', 0, 0, [('triple', 'z')])
             + ob(b'', 5, 7, []))
    ex = dict(inputs, **{'p3.bin': p3, 'multi.bin': multi, 'dir/m.bin': multi, 'text.c': b'int main() {}\n'})
    selectors = ['triple=amdgcn-amd-amdhsa', 'arch=gfx908', 'kind=openmp', 'kind=cuda', 'kind=hip', 'kind=none',
                 'kind=bogus', 'arch=', 'triple=z', 'feature=xnack+', 'feature=', 'foo=bar,baz', 'foo=bar',
                 'arch=sm_70,kind=cuda', 'triple=amdgcn-amd-amdhsa,arch=gfx90a', 'nomatch=1', '', 'arch']
    for i, sel in enumerate(selectors):
        for src in ('multi.bin', 'p3.bin', 'dir/m.bin'):
            yield ('extract-gen-%d-%s' % (i, src), ex, [P(src, '--image=' + sel)])
            yield ('extract-file-%d-%s' % (i, src), ex, [P(src, '--image=file=out.img' + (',' + sel if sel else ''))])
            yield ('extract-archive-%d-%s' % (i, src), ex,
                   [P(src, '--image=file=out.a' + (',' + sel if sel else ''), '--archive')])
    yield ('extract-several-selectors', ex, [P('multi.bin', '--image=kind=openmp', '--image=file=one.o,kind=cuda',
                                               '--image=file=all.a', '--image=kind=hip')])
    yield ('extract-several-archives', ex, [P('multi.bin', '--archive', '--image=file=a1.a,kind=openmp',
                                              '--image=file=a2.a,triple=nvptx64-nvidia-cuda')])
    yield ('extract-archive-no-file', ex, [P('multi.bin', '--image=kind=openmp', '--archive')])
    yield ('extract-archive-no-file-no-match', ex, [P('multi.bin', '--image=kind=sycl', '--archive')])
    yield ('extract-stdin', ex, [P('-', '--image=kind=openmp', stdin=multi)])
    yield ('extract-stdin-archive', ex, [P('-', '--image=file=s.a,kind=openmp', '--archive', stdin=multi)])
    yield ('extract-not-a-container', ex, [P('text.c', '--image=arch=sm_70')])
    yield ('extract-empty-file', ex, [P('g', '--image=arch=sm_70')])
    yield ('extract-nonexistent', ex, [P('nonexist.bin', '--image=arch=none')])
    yield ('extract-directory', dict(ex, d=None), [P('d', '--image=arch=none')])
    yield ('extract-into-input', ex, [P('multi.bin', '--image=file=multi.bin,arch=gfx908')])
    yield ('extract-output-missing-dir', ex, [P('multi.bin', '--image=file=nodir/x,arch=gfx908')])
    yield ('extract-no-selector', ex, [P('multi.bin')])
    yield ('extract-p3-kind-hip', ex, [P('p3.bin', '--image=kind=hip'), P('p3.bin', '--image=file=h.o,kind=hip')])
    # Archives written by --archive name members by the input path ("dir/m.bin"): read them back.
    yield ('extract-from-packager-archive', ex, [P('dir/m.bin', '--image=file=pk.a', '--archive'),
                                                 P('pk.a', '--image=kind=openmp'),
                                                 P('pk.a', '--image=file=again.a', '--archive')])
    yield ('extract-dot-names', dict(ex, **{'.hidden': multi, 'x.y.z': multi}),
           [P('.hidden', '--image=arch=gfx908'), P('x.y.z', '--image=arch=gfx908')])

    # Damaged binaries: LLVM 19's own messages.
    good = ob(b'IMG', 1, 1, [('triple', 't'), ('arch', 'a')])
    damaged = {
        'trunc-header': good[:20], 'trunc-entry': good[:60], 'trunc-binary': good[:-8],
        'bad-version': good[:4] + struct.pack('<I', 3) + good[8:],
        'version-0': good[:4] + struct.pack('<I', 0) + good[8:],
        'size-small': good[:8] + struct.pack('<Q', 16) + good[16:],
        'size-huge': good[:8] + struct.pack('<Q', 1 << 63) + good[16:],
        'entry-offset': good[:16] + struct.pack('<Q', len(good)) + good[24:],
        'entry-size': good[:24] + struct.pack('<Q', len(good)) + good[32:],
        'image-offset': good[:56] + struct.pack('<Q', 1 << 40) + good[64:],
        'string-offset': good[:40] + struct.pack('<Q', 1 << 40) + good[48:],
        'trailing-garbage': good + b'garbage!',
        'trailing-zeros': good + bytes(8),
        'second-bad-magic': good + good[:3] + b'\0' + good[4:],
        'two-good': good + good,
    }
    for name, data in damaged.items():
        yield ('damaged-%s' % name, {'in.bin': data}, [P('in.bin', '--image=triple=t')])

    # --- objects made by llvm-mc: any SHT_LLVM_OFFLOADING section, COFF .llvm.offloading* ---
    mc = mc_objects(tmp, p3)
    if mc:
        mi = dict(mc)
        mi['mc.a'] = llvm_ar(mc, tmp)
        for src in list(mc) + ['mc.a']:
            for sel in ('kind=cuda', 'triple=x86_64-unknown-linux-gnu', 'arch=gfx908', ''):
                yield ('mc-gen-%s-%s' % (src, sel), mi, [P(src, '--image=' + sel)])
                yield ('mc-archive-%s-%s' % (src, sel), mi, [P(src, '--image=file=o.a,' + sel, '--archive')])

    # --- objects and archives made by clang and llvm-ar ---
    objs = clang_objects(tmp)
    if objs:
        oi = dict(objs)
        oi['raw.bin'] = multi
        oi['lib.a'] = llvm_ar(objs, tmp, flags='rcs')
        oi['nosym.a'] = llvm_ar({'raw.bin': multi, 'raw_with_a_long_name.bin': p3}, tmp, flags='rcS')
        oi['nested.a'] = llvm_ar({'inner.a': oi['lib.a'], 'raw.bin': multi}, tmp, flags='rcs')
        for src in list(objs) + ['lib.a', 'nosym.a', 'nested.a']:
            for sel in ('kind=openmp', 'triple=amdgcn-amd-amdhsa', 'arch=gfx90a', 'triple=nvptx64-nvidia-cuda',
                        'triple=x86_64-pc-linux-gnu', 'arch=sm_70'):
                yield ('obj-gen-%s-%s' % (src, sel), oi, [P(src, '--image=' + sel)])
                yield ('obj-archive-%s-%s' % (src, sel), oi, [P(src, '--image=file=o.a,' + sel, '--archive')])
                yield ('obj-file-%s-%s' % (src, sel), oi, [P(src, '--image=file=o.img,' + sel)])
        # Member offsets past a small threshold switch LLVM to the 64-bit symbol table.
        yield ('obj-archive-sym64', oi, [P('amd.o', '--image=file=o.a', '--archive', env={'SYM64_THRESHOLD': '100'})])
        yield ('obj-archive-sym64-x86', oi, [P('lib.a', '--image=file=o.a', '--archive', env={'SYM64_THRESHOLD': '0'})])
        # Damaged objects.
        x = objs.get('x86.o')
        if x:
            yield ('obj-truncated', {'t.o': x[:100]}, [P('t.o', '--image=kind=openmp')])
            yield ('obj-truncated-archive', {'t.a': oi['lib.a'][:100]}, [P('t.a', '--image=kind=openmp')])

    if harness.RELEASE == '23':
        yield from cases23(tmp, ex)


def cases23(tmp, ex):
    """LLVM 23's extraction (reference notes 2.4, 2.5; docs/llvm23.md): version
    2 and mixed inputs, every image without --image and the "Extracted:" lines,
    nested binaries, the names (empty arch, SPIR-V), 23's reader's errors.
    Each one fails against offloadtool's former refusal to extract as 23."""
    amd = [('triple', 'amdgcn-amd-amdhsa'), ('arch', 'gfx906')]
    v2 = ob2((b'ABCDE', 1, 4, amd),
             (b'xyz', 2, 1, [('triple', 'x86_64-pc-linux-gnu'), ('arch', '')]),
             (b'QQQQQQQ', 3, 2, [('triple', 'nvptx64-nvidia-cuda'), ('arch', 'sm_70')]),
             (b'SPV', 6, 8, [('triple', 'spirv64-intel')]),
             (b'K9', 9, 0, [('arch', 'a'), ('triple', '')]))
    v1 = ob(b'V1IMG', 1, 1, [('triple', 'x86_64-pc-linux-gnu'), ('arch', 'generic')])
    inner2 = ob2((b'IN1', 1, 4, [('triple', 'amdgcn-amd-amdhsa'), ('arch', 'gfx906')]),
                 (b'IN2xx', 2, 4, [('triple', 'amdgcn-amd-amdhsa'), ('arch', 'gfx90a')]))
    inner1 = (ob(b'V1A', 1, 2, [('triple', 'nvptx64-nvidia-cuda'), ('arch', 'sm_70')])
              + ob(b'V1B', 3, 2, [('triple', 'nvptx64-nvidia-cuda'), ('arch', 'sm_80')]))
    host = [('triple', 'x86_64-pc-linux-gnu'), ('arch', 'generic')]
    nested = ob2((b'PLAIN', 1, 1, host), (inner2, 0, 1, [('triple', 'host'), ('arch', 'outer')]),
                 (inner1, 0, 2, [('triple', 'host')]), (b'TAIL', 5, 2, [('triple', 'x86_64-pc-linux-gnu')]))
    files = dict(ex, **{
        'v2.bin': v2, 'mixed.bin': v1 + v2 + ex['multi.bin'], 'nested.bin': nested,
        'deep.bin': ob2((ob2((nested, 0, 1, [('triple', 'mid')])), 0, 1, [('triple', 'top')])),
        # The nested binary starts 3 bytes after an 8-aligned offset (images follow each other unpadded).
        'unaligned.bin': ob2((b'ODD', 1, 1, [('triple', 'a')]), (inner2, 0, 1, [('triple', 'b')])),
        'in-v1.bin': ob(inner2, 0, 1, host),  # a version 1 binary holding a version 2 one
        'empty-inner.bin': ob2((patched(inner2, 24, '<Q', 0), 0, 1, host)) + v1,
        'r2.spv': b'SPIRV',
    })
    for src in ('v2.bin', 'mixed.bin', 'multi.bin', 'p3.bin', 'dir/m.bin', 'nested.bin', 'deep.bin', 'unaligned.bin',
                'in-v1.bin', 'empty-inner.bin'):
        yield ('x23-all-%s' % src, files, [P(src)])
        for sel in ('kind=openmp', 'kind=hip', 'triple=host', 'arch=gfx906', 'triple=amdgcn-amd-amdhsa',
                    'arch=', 'kind=sycl'):
            yield ('x23-gen-%s-%s' % (src, sel), files, [P(src, '--image=' + sel)])
        yield ('x23-file-%s' % src, files, [P(src, '--image=file=o.bin,triple=host', '--image=file=k.bin,kind=openmp')])
        yield ('x23-archive-%s' % src, files, [P(src, '--image=file=o.a', '--image=file=h.a,triple=host', '--archive')])
        yield ('x23-two-%s' % src, files, [P(src, '--image=kind=openmp', '--image=kind=cuda', '--image=kind=openmp')])
    yield ('x23-all-stdin', files, [P('-', stdin=nested)])
    yield ('x23-all-stdin-archive', files, [P('-', '--image=file=s.a', '--archive', stdin=v2)])
    yield ('x23-all-output-missing-dir', files, [P('v2.bin', '--image=file=nodir/x,kind=hip')])
    # --archive without --image: every image under its generated name.
    yield ('x23-all-archive-flag', files, [P('nested.bin', '--archive')])
    # An output LLVM cannot write stops it after the files of the --image before (a deliberate difference).
    yield ('x23-partial-output-missing-dir', files,
           [P('v2.bin', '--image=kind=hip', '--image=file=nodir/x,kind=openmp')])
    yield ('x23-all-names', dict(files, **{'.hidden': v2, 'x.y.z': nested, 'dir/d.e.bin': v2}),
           [P('.hidden'), P('x.y.z'), P('dir/d.e.bin')])
    # LLVM 23's own binaries: what its packager wrote, read back.
    yield ('x23-roundtrip', files, [P('-o', 'r.bin', '--image=file=a.o,triple=t,arch=a,kind=hip',
                                      '--image=file=tgt1,triple=u,kind=openmp', '--image=file=e.s,triple=t,arch=',
                                      '--image=file=r2.spv,triple=spirv64,kind=sycl', stdin=None),
                                    P('r.bin'), P('r.bin', '--image=kind=hip')])
    yield ('x23-roundtrip-nested', files, [P('-o', 'in.bin', '--image=file=a.o,triple=t,arch=a,kind=hip'),
                                           P('-o', 'out.bin', '--image=file=in.bin,triple=h,arch=g,kind=openmp'),
                                           P('out.bin'), P('out.bin', '--image=kind=openmp'),
                                           P('out.bin', '--image=kind=openmp,file=raw.bin')])
    yield ('x23-zero-images', files, [P('-o', 'z.bin'), P('z.bin')])

    # 23's reader: its words where it fails (an input it cannot read writes nothing).
    good = v2
    n = len(good)
    damaged = {
        'version-0': patched(good, 4, '<I', 0), 'version-3': patched(good, 4, '<I', 3),
        'version-4': patched(good, 4, '<I', 4), 'v1-version-3': patched(v1, 4, '<I', 3) + good,
        'count-1000': patched(good, 24, '<Q', 1000), 'count-0-then-good': patched(good, 24, '<Q', 0) + good,
        'truncated-8': good[:-8], 'truncated-half': good[:n // 2], 'truncated-31': good[:31],
        'truncated-71': good[:71], 'truncated-second': good + good[:100],
        'trailing-zeros': good + bytes(8), 'trailing-zeros-80': good + bytes(80), 'trailing-junk': good + b'garbage!',
        'size-unaligned-last': patched(good, 8, '<Q', n - 3),
        'size-unaligned-then-good': patched(good[:n - 3], 8, '<Q', n - 3) + good,
        'size-small': patched(good, 8, '<Q', 39), 'size-huge': patched(good, 8, '<Q', 1 << 63),
        'entries-at-40': patched(good, 16, '<Q', 40), 'entries-at-0': patched(good, 16, '<Q', 0),
        'entries-past-end': patched(good, 16, '<Q', n),
        'strings-past-end': patched(good, 32 + 8, '<Q', n), 'string-count': patched(good, 32 + 16, '<Q', 1000),
        'image-offset-past-end': patched(good, 32 + 80 + 24, '<Q', n + 1),
        'value-length-0': patched(good, 32 + 200 + 16, '<Q', 0),
        # A version 1's field at 0x18 (19's and 22's entry size) is not read by 23.
        'v1-entry-size': patched(v1, 24, '<Q', len(v1)) + good,
        # 23 checks version 1's string records as 24 bytes each.
        'v1-strings-24': patched(patched(v1, 32 + 8, '<Q', len(v1) - 40), 32 + 16, '<Q', 2),
    }
    for name, data in damaged.items():
        yield ('x23-damaged-%s' % name, {'in.bin': data}, [P('in.bin'), P('in.bin', '--image=triple=t')])
    # A nested binary 23 cannot read stops it there, after writing the images before it.
    bad = {'junk-after': inner2 + b'junkjunk', 'short': b'\x10\xff\x10\xad' + bytes(20),
           'version-3': patched(inner2, 4, '<I', 3), 'truncated': inner2[:-8]}
    for name, inner in bad.items():
        data = ob2((b'FIRST', 1, 1, [('triple', 'a')]), (inner, 0, 1, [('triple', 'b')]), (b'LAST', 1, 1, []))
        yield ('x23-nested-bad-%s' % name, {'in.bin': data}, [P('in.bin')])
        yield ('x23-nested-bad-%s-selected' % name, {'in.bin': data}, [P('in.bin', '--image=kind=openmp')])
    # Where 23 reads past the binary (an image or a value beyond its end, an
    # image over the header): offloadtool refuses the input instead.
    overread = {
        'image-past-end': patched(good, 32 + 24, '<Q', n - 2),
        'image-size-past-end': patched(good, 32 + 32, '<Q', 1000),
        'key-past-end': patched(good, 32 + 200, '<Q', 5000),
        'value-length-past-end': patched(good, 32 + 200 + 16, '<Q', 5000),
        'image-over-header': patched(good, 32 + 24, '<Q', 8),
    }
    for name, data in overread.items():
        yield ('x23-overread-%s' % name, {'in.bin': data}, [P('in.bin')])

    # Host objects and archives clang 23 makes: version 2 binaries in .llvm.offloading.
    src = write(os.path.join(tmp, 'k23.c'), 'int main(void) {\n  int s = 0;\n#pragma omp target map(tofrom: s)\n'
                '  s = 1;\n  return s != 1;\n}\n')
    objs = {}
    for name, flags in (('x86.o', ['-fopenmp-targets=x86_64-pc-linux-gnu']),
                        ('amd.o', ['--offload-arch=gfx906,gfx90a:xnack+', '-nogpulib']),
                        ('amd-lto.o', ['--offload-arch=gfx906', '-nogpulib', '-flto'])):
        obj = os.path.join(tmp, '23-' + name)
        r = harness.run([CLANG, '-fopenmp', '-c', src, '-o', obj] + flags, text=True)
        check('clang 23 builds ' + name, r.returncode == 0, r.stderr)
        if r.returncode == 0:
            objs[name] = read(obj)
    if objs:
        oi = dict(objs)
        oi['lib.a'] = llvm_ar(objs, tmp, flags='rcs')
        for src in list(objs) + ['lib.a']:
            yield ('x23-obj-all-%s' % src, oi, [P(src)])
            for sel in ('kind=openmp', 'arch=gfx90a:xnack+', 'triple=x86_64-pc-linux-gnu'):
                yield ('x23-obj-gen-%s-%s' % (src, sel), oi, [P(src, '--image=' + sel)])
            yield ('x23-obj-archive-%s' % src, oi, [P(src, '--image=file=o.a', '--archive')])


# ---------------------------------------------------------------------------
# Expected differences (deliberate), applied to LLVM's result before comparing.
# Each returns the adjusted (transcript, files) or None when not applicable.

def message_only_differences(name, llvm, ours):
    """Error texts that LLVM takes from its ELF/archive parsers: offloadtool
    reports the same failure (exit 1, no output) in its own words."""
    if name in ('obj-truncated', 'obj-truncated-archive'):
        (lt, lf), (ot, of) = llvm, ours
        if [t[1] for t in lt] == [t[1] for t in ot] == [1] and lf == of and ot[0][3]:
            return True
    return False


def partial_outputs(llvm, ours):
    """LLVM 23 writes each image as it reaches it, and reads a nested binary
    only then: one it cannot read (or an output it cannot write) stops it with
    the files before it written and reported ("Extracted: <name>"). offloadtool reads everything before it
    writes, so it stops with the same error and nothing written or reported.
    The transcripts agree but for those lines; LLVM's extra files are the ones
    it reported."""
    (lt, lf), (ot, of) = llvm, ours
    if len(lt) != 1 or len(ot) != 1:
        return False
    (_, rc1, o1, e1), (_, rc2, o2, e2) = lt[0], ot[0]
    lines = o1.splitlines()
    if not (rc1 == rc2 == 1 and e1 == e2 and e2.count(b'error:') == 1 and o2 == b''
            and all(line.startswith(b'Extracted: ') for line in lines)):
        return False
    left = {line[len(b'Extracted: '):].decode() for line in lines}
    return set(lf) - set(of) == left and set(of) <= set(lf) and all(lf[k] == of[k] for k in of)


def ours_refuses_overread(llvm, ours):
    """Where LLVM 23 reads past the binary it was given (memory after its copy
    of it: nothing to compare), offloadtool stops: exit 1, one error line
    naming the input, the entry and the offset of the field at fault, nothing
    written."""
    (_, of), ((_, rc, out, err),) = ours, ours[0]
    return (rc == 1 and out == b'' and err.count(b'error:') == 1 and b': error: in.bin: entry 0: ' in err
            and b', at offset 0x' in err and set(of) == {'in.bin'})


def read_v2(data):
    """An OffloadBinary version 2 (reference notes 2.1) as [(image kind, offload
    kind, flags, [(key, value bytes, value length)], image bytes)], or None."""
    if len(data) < 32 or data[:4] != b'\x10\xff\x10\xad' or struct.unpack_from('<I', data, 4)[0] != 2:
        return None
    size, entries_at, count = struct.unpack_from('<QQQ', data, 8)
    out = []
    for i in range(count):
        ik, ok, flags, strs, n, img, isize = struct.unpack_from('<HHIQQQQ', data, entries_at + 40 * i)
        strings = []
        for j in range(n):
            k, v, vlen = struct.unpack_from('<QQQ', data, strs + 24 * j)
            strings.append((data[k:data.index(b'\0', k)], data[v:v + vlen], vlen))
        out.append((ik, ok, flags, strings, data[img:img + isize]))
    return out


def joined_keys(commands):
    """The keys given more than once in one --image (file aside): LLVM joins
    their values with ',' into a temporary string."""
    keys = set()
    for c in commands:
        if c[0] == 'sh':
            continue
        for a in c[0]:
            if a.startswith(('--image=', '-image=')):
                names = [x.split('=', 1)[0] for x in a.split('=', 1)[1].split(',')]  # '' too: an empty key
                names = [k for k in names if k not in ('file', 'kind')]
                keys |= {k.encode() for k in names if names.count(k) > 1}
    return keys


def dangling_joined_values(llvm, ours, keys):
    """LLVM 23 (its V2 writer) keeps a key given twice in one --image as a
    reference to the temporary ','-joined string, gone by the time the string
    table is written: the value's bytes in its output are whatever that memory
    then holds (a heap address, seen), and the table's layout follows. That is
    an LLVM 23 defect offloadtool does not copy: it writes the joined value, as
    22 does. (Other values that end a joined one share its bytes in LLVM's
    tail-merged string table, and its garbage.) The outputs are compared entry by
    entry instead: kinds, flags, keys in order, every other value, the images,
    and for those values the length (LLVM's is right) and offloadtool's value."""
    (lt, lf), (ot, of) = llvm, ours
    if not keys or [t[1:] for t in lt] != [t[1:] for t in ot] or sorted(lf) != sorted(of):
        return False
    for name in lf:
        if lf[name] == of[name]:
            continue
        a, b = read_v2(lf[name]), read_v2(of[name])
        if a is None or b is None or len(a) != len(b):
            return False
        # offloadtool's joined values; LLVM's string table tail-merges other values
        # into them (a value that ends one), and those read the same garbage.
        joined = {v for e in b for k, v, _ in e[3] if k in keys and b',' in v}
        for ea, eb in zip(a, b):
            if ea[0:3] != eb[0:3] or ea[4] != eb[4] or [s[0] for s in ea[3]] != [s[0] for s in eb[3]]:
                return False
            for (k, va, la), (_, vb, lb) in zip(ea[3], eb[3]):
                if va == vb:
                    continue
                if la != lb or not any(j.endswith(vb) for j in joined):
                    return False
    return True


def describe(a, b):
    """What differs between LLVM's (transcript, files) `a` and ours `b`."""
    lines = []
    for (args, rc1, o1, e1), (_, rc2, o2, e2) in zip(a[0], b[0]):
        if (rc1, o1, e1) != (rc2, o2, e2):
            lines.append('%s' % args)
            lines.append('llvm: rc=%s out=%r err=%r' % (rc1, o1[:300], e1[:300]))
            lines.append('ours: rc=%s out=%r err=%r' % (rc2, o2[:300], e2[:300]))
    for k in sorted(set(a[1]) | set(b[1])):
        if a[1].get(k) != b[1].get(k):
            lines.append('file %s: llvm %s, ours %s' % (
                k, len(a[1][k]) if k in a[1] else 'missing', len(b[1][k]) if k in b[1] else 'missing'))
    return '\n'.join(lines)


def release_facts(tmp):
    """The reference notes' numbers, checked on both tools (a diff alone would
    pass if both were wrong the same way): the u16 at 0x22 of a kind=hip and a
    kind=sycl binary, and whether kind=hip extracts a 19-packed HIP image."""
    d = harness.Folder(tmp, files={'a.o': b'IMAGE', 'p3.bin': golden('19-packager-3.bin')})
    for side, tool in (('llvm', LLVM_PACKAGER), ('ours', harness.OT)):
        for kind, number in sorted(KIND_NUMBERS.items()):
            out = '%s-%s.bin' % (side, kind)
            r = d.run(['clang-offload-packager', '-o', out, '--image=file=a.o,triple=t,kind=' + kind], text=True,
                      executable=tool)
            got = struct.unpack_from('<H', d.read(out), 0x22)[0] if r.returncode == 0 else None
            check('release %s: %s kind=%s writes %d' % (harness.RELEASE, side, kind, number), got == number,
                  'got %r: %s' % (got, r.stderr))
        out = '%s-hip19.o' % side
        d.run(['clang-offload-packager', 'p3.bin', '--image=file=%s,kind=hip' % out], text=True, executable=tool)
        # p3.bin's host.i is HIP as 19 numbers it (3): only 19 selects it.
        check('release %s: %s kind=hip extracts a 19-packed HIP image: %s' % (
            harness.RELEASE, side, harness.RELEASE == '19'), os.path.exists(d.path(out)) == (harness.RELEASE == '19'))


def run_cases(tmp):
    links = {'bin/clang-offload-packager': harness.OT}
    links.update({'bin/' + n: harness.OT for n in NAMES})
    ours = harness.Side(tmp, 'ours', links)
    theirs = harness.Side(tmp, 'llvm', {k: LLVM_PACKAGER for k in links})
    if not FILTER or 'release' in FILTER:
        release_facts(tmp)
    for index, (name, files, commands) in enumerate(cases(tmp)):
        if FILTER and FILTER not in name:
            continue
        if harness.RELEASE == '23' and joined_keys(commands):
            # LLVM 23 writes the freed memory of a joined value (dangling_joined_values).
            # Under meson's MALLOC_PERTURB_ that memory is one byte repeated, and where
            # the byte spells a key ('x' is 120) the tail-merged string table points
            # that key into it too: these cases run without it.
            commands = [c if c[0] == 'sh' else (c[0], c[1], dict(c[2], MALLOC_PERTURB_=None)) + tuple(c[3:])
                        for c in commands]
        a = run_case(theirs, index, files, commands)
        b = run_case(ours, index, files, commands)
        if name.startswith('x23-overread-'):
            check(name, ours_refuses_overread(a, b), describe(a, b))
            continue
        ok = a == b or message_only_differences(name, a, b) or (
            harness.RELEASE == '23' and dangling_joined_values(a, b, joined_keys(commands))) or (
            name.startswith(('x23-nested-bad-', 'x23-partial-')) and partial_outputs(a, b))
        check(name, ok, '' if ok else describe(a, b))


def main():
    return harness.run_suite('packager-diff', run_cases, needs=[LLVM_PACKAGER, CLANG, LLVM_BIN + '/llvm-mc',
                                                                LLVM_BIN + '/llvm-ar'])


if __name__ == '__main__':
    sys.exit(main())
