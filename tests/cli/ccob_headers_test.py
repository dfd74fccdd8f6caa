#!/usr/bin/env python3
"""`list`, `size` and `compat select` read a compressed bundle (CCOB) only as
far as its bundle table and its code objects' ELF headers; `unbundle` and
`compress --verify` read all of it.

The input is what clang (19, or 22 as OT_LLVM_RELEASE says) writes with
`--offload-compress --gpu-bundle-output` for one GPU, the form of hipBLASLt's
per-GPU .co files: a host entry and a gfx90a code object whose 512 KiB of
random constants take several zstd blocks. Its second half is then
overwritten with garbage: the table and the ELF header lie in the first
blocks, so the damaged file still lists and sizes -- which shows the rest is
not read -- while unbundling or verifying it fails with one line naming the
file and an offset, writing nothing. The IDs listed are those LLVM's
clang-offload-bundler -list gives for the intact file, the sizes those of
the files its -unbundle writes; never offloadtool's own output."""
import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import LLVM_BUNDLER, OT, check  # noqa: E402

GPU = 'gfx90a'


def kernel_source():
    """A kernel reading a table of 2^17 random words (deterministic): 512 KiB
    of code object data zstd cannot shrink."""
    r = random.Random(32)
    words = ','.join(str(r.getrandbits(32)) for _ in range(1 << 17))
    return ('__attribute__((device)) const unsigned table[%d] = {%s};\n'
            '__attribute__((global)) void k(unsigned *p, int i) { *p = table[i]; }\n' % (1 << 17, words))


def llvm_entries(d, name):
    """{id: size}: the IDs LLVM's bundler lists, each with the size of the file
    its -unbundle writes; the host entry, which a device-only compile leaves
    empty, as 0 (LLVM 19 cannot find clang's 5-field host ID it is given back)."""
    r = harness.run([LLVM_BUNDLER, '-list', '-type=o', '-input=' + name], cwd=d, text=True, check=True)
    ids = [i for i in r.stdout.split() if not i.startswith('host-')]
    outs = ['u%d' % i for i in range(len(ids))]
    harness.run([LLVM_BUNDLER, '-unbundle', '-type=o', '-input=' + name, '-targets=' + ','.join(ids)] +
                ['-output=' + o for o in outs], cwd=d, check=True)
    sizes = {i: os.path.getsize(os.path.join(d, o)) for i, o in zip(ids, outs)}
    return dict(sizes, **{i: 0 for i in r.stdout.split() if i.startswith('host-')})


def cases(root):
    harness.write(os.path.join(root, 'k.hip'), kernel_source())
    r = harness.run([harness.CLANG, '-x', 'hip', '-nogpulib', '-nogpuinc', '--offload-arch=' + GPU, '--cuda-device-only',
                     '--gpu-bundle-output', '--offload-compress', '-c', 'k.hip', '-o', 'k.co'], cwd=root, text=True)
    check('clang %s writes a compressed bundle for %s' % (harness.RELEASE, GPU), r.returncode == 0, r.stderr)
    intact = harness.read(os.path.join(root, 'k.co'))
    check('it is a CCOB of more than 400 KiB', intact[:4] == b'CCOB' and len(intact) > 400 << 10, len(intact))
    want = llvm_entries(root, 'k.co')
    check('LLVM lists a host entry and a %s entry' % GPU,
          len(want) == 2 and any(i.startswith('host-') for i in want) and any(i.endswith(GPU) for i in want), want)
    device = next(i for i in want if i.endswith(GPU))
    half = len(intact) // 2
    damaged = intact[:half] + b'\xa5' * (len(intact) - half)

    c = harness.Case(root, 'list', {'damaged.co': damaged})
    rc, out, err = c.run('--json', 'damaged.co')
    got = json.loads(out)['entries'] if rc == 0 else []
    check('list --json of the damaged CCOB: the IDs and sizes LLVM gives for the intact one',
          rc == 0 and err == '' and {e['id']: e['size'] for e in got} == want, (rc, out, err))
    check('list --json: the %s entry\'s processor from its ELF header, compressed, no offset' % GPU,
          [(e['processor'], e['compressed'], e['offset']) for e in got if e['id'] == device] == [(GPU, True, None)],
          got)
    rc, out, err = c.run('damaged.co')
    check('list of the damaged CCOB: its entries and total', rc == 0 and err == '' and
          out.splitlines()[-1] == 'damaged.co: 2 entries in 1 container, %s' % harness.human_size(sum(want.values())),
          (rc, out, err))

    c = harness.Case(root, 'size', {'damaged.co': damaged})
    rc, out, err = c.run('--json', 'damaged.co')
    s = json.loads(out) if rc == 0 else {}
    rows = {t['target']: t for t in s.get('targets', [])}
    check('size --json of the damaged CCOB: the %s row holds the size LLVM unbundles, the whole holds the file' % GPU,
          rc == 0 and err == '' and s['uncompressed_bytes'] == sum(want.values()) and
          [t['uncompressed_bytes'] for k, t in rows.items() if k.endswith(GPU)] == [want[device]] and
          abs(s['file_bytes'] - len(damaged)) <= 2, (rc, out, err))

    c = harness.Case(root, 'compat', {'damaged.co': damaged})
    rc, out, err = c.run('select', 'damaged.co', '--target', 'hipv4-amdgcn-amd-amdhsa--' + GPU)
    check('compat select of the damaged CCOB picks the %s entry' % GPU,
          rc == 0 and err == '' and out.startswith('selected ' + device + ' '), (rc, out, err))

    # What reads the payload meets the garbage: one line, the file and an offset, nothing written.
    for applet, args in (('unbundle', ['--extract-dir', 'out', 'damaged.co']), ('compress', ['--verify', 'damaged.co'])):
        c = harness.Case(root, applet, {'damaged.co': damaged})
        rc, out, err = c.run(*args)
        check('%s of the damaged CCOB fails: one line naming the file and an offset, nothing written' % applet,
              rc == 1 and out == '' and err.count('\n') == 1 and
              err.startswith('offloadtool %s: error: damaged.co: ' % applet) and 'offset 0x' in err and
              c.new_files() == [], (rc, out, err, c.new_files()))


if __name__ == '__main__':
    sys.exit(harness.run_suite('ccob-headers', cases, needs=[harness.CLANG, LLVM_BUNDLER]))
