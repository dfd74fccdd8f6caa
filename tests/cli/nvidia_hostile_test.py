#!/usr/bin/env python3
"""NVIDIA fatbins that lie: hostile inputs made here, at test time, from the
committed CUDA 13 fixtures (tests/data/nvidia: lz4.fatbin, zstd.fatbin,
k-nvcc13.o, k-rdc-nvcc13.o) by patching their headers with struct, or by
putting fixture bytes in an ELF section; never from offloadtool's own output.
The offsets below are the fixtures' (tests/data/nvidia/expected.txt).

For each input, `list`, `size`, `compat select --target sm_80` and
`unbundle --extract-dir` (which decompresses every entry):
  * a damaged header (an entry header size under 64, huge, or past the
    fatbin; a payload or a fatbin size past the fatbin, the file or the
    section; fatbin version 2; an identifier or options string outside its
    entry header; both compression flags; a compressed size of 0 or over the
    payload; a fatbin cut mid-entry; garbage after a fatbin in a section; a
    .nv_fatbin holding no fatbin) is an error in every applet: exactly one
    line on stderr, `offloadtool <applet>: error: <file>: <what>, at offset
    0x..`, the text and offset given here, nothing on stdout for list; exit 1
    (compat: 2, its exit code for errors);
  * a damaged payload (LZ4 or zstd garbage; LZ4 or zstd declaring GBs, which
    must be refused before anything is allocated; 3 GiB of LZ4 stored, in a
    sparse file, which no applet may read through) lists as it is; only
    unbundle --extract-dir, which decompresses, fails, naming the entry;
  * an entry of a kind this tool does not know is listed as "kind 0x10" (no
    error), and zero padding between two fatbins, in a file or a section, is
    two fatbins listed;
every run within 20 s and a peak resident set of 64 MiB over the binary's own
(3 x under ASan: harness.resident_budget_kib), and no file left: a failing
unbundle --extract-dir leaves its folder as it was.

Environment: OFFLOADTOOL = the offloadtool binary. Prints "N passed, M failed";
exits 1 on failure. `nvidia_hostile_test.py --corpus DIR` writes the inputs to
DIR instead: the .fatbin ones are seeds of the fuzz harnesses in
tests/fuzz/corpus/fatbin, zero-padding.o and garbage-after.o in
tests/fuzz/corpus/contents (as fatbin-*.o).
"""

import os
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import OT, check  # noqa: E402
from hardening_test import elf64  # noqa: E402

NV = os.path.join(harness.DATA, 'nvidia')
SECONDS = 20
GIB3 = 3 << 30

# Entry header fields (offsets from the entry's start).
KIND, HEADER_SIZE, PAYLOAD_SIZE, COMPRESSED_SIZE, FLAGS, UNCOMPRESSED_SIZE = 0, 4, 8, 16, 40, 56
FAT_SIZE = 8  # of the 16-byte fatbin header
# Where the fixtures' entries lie (expected.txt).
LZ4_E0, LZ4_E1, LZ4_END = 0x10, 0x5d0, 0x7b8    # sm_80 cubin (1402 of 1408 bytes at 0x50), compute_80 PTX
ZSTD_E0, ZSTD_END = 0x10, 0x560                  # sm_80 cubin (912 bytes at 0x50)
SECTION_AT = 0x40                                # elf64(): the first section's data
NVCC_O_FATBIN = 0x5a8                            # k-nvcc13.o: .nv_fatbin, 5056 bytes
RDC_E0 = 0x5b0                                   # k-rdc-nvcc13.o: a PTX entry, options area {0x48, 16}


def fixture(name):
    return harness.read(os.path.join(NV, name))


def patch(data, at, fmt, value):
    b = bytearray(data)
    struct.pack_into('<' + fmt, b, at, value)
    return bytes(b)


def fill(data, at, n, byte):
    return data[:at] + bytes([byte]) * n + data[at + n:]


def nv_object(section):
    """A relocatable x86-64 ELF object whose one .nv_fatbin section (at 0x40) holds `section`."""
    return elf64(1, [('.nv_fatbin', 1, 2, section)])


def rle_zstd_fatbin(size):
    """A fatbin of one sm_80 cubin entry whose payload is a zstd frame of
    `size` zero bytes in RLE blocks of 128 KiB (4 bytes each), written here
    from the zstd format (RFC 8878): single segment, 8-byte content size."""
    block = 128 << 10
    frame = struct.pack('<IBQ', 0xFD2FB528, 0xE0, size)
    for i in range(size // block):
        last = 1 if i == size // block - 1 else 0
        frame += (last | 1 << 1 | block << 3).to_bytes(3, 'little') + b'\0'
    payload = frame + bytes(-len(frame) % 8)
    entry = struct.pack('<HHIQIIHHIIIQQQ', 2, 0x101, 64, len(payload), len(frame), 0, 8, 1, 80, 0, 0, 0x8011, 0,
                        size)
    return struct.pack('<IHHQ', 0xBA55ED50, 1, 16, len(entry) + len(payload)) + entry + payload


def inputs():
    """{file name: (bytes, expectation)}: ('header', offset, text) an error of
    every applet; ('payload', entry, offset, text) an error of unbundle
    --extract-dir only (`entry`: the index errors name); ('ok', list lines,
    compat select lines, {file unbundle --extract-dir writes: its bytes, or
    None}) accepted by every applet."""
    lz4, zstd = fixture('lz4.fatbin'), fixture('zstd.fatbin')
    nvcc_o = fixture('k-nvcc13.o')
    cubin = fixture('inputs/k.sm_80.cubin')
    rdc_o = fixture('k-rdc-nvcc13.o')
    e1 = LZ4_E1
    left1 = LZ4_END - e1  # from the second entry to the end of the fatbin
    between = 'entry header size 0x{:x} is not between 0x40 and 0x10000'
    both = 'the entry is flagged both LZ4 (0x2000) and zstd (0x8000) compressed'
    csize = 'compressed size 0x{:x} of a compressed entry is 0 or larger than its payload (0x580 bytes)'
    huge = lz4[:LZ4_E0 + 64]  # the header and the first entry's, of 3 GiB stored from 0x50
    for at, fmt, value in ((FAT_SIZE, 'Q', 64 + GIB3), (LZ4_E0 + PAYLOAD_SIZE, 'Q', GIB3),
                           (LZ4_E0 + COMPRESSED_SIZE, 'I', GIB3)):
        huge = patch(huge, at, fmt, value)
    past = "the fatbin's 0x{:x} bytes of entries extend past the end of its data (0x{:x} bytes left)"
    return {
        # Entry header sizes.
        'header-size-small.fatbin': (patch(lz4, LZ4_E0 + HEADER_SIZE, 'I', 0x20),
                                     ('header', LZ4_E0 + HEADER_SIZE, between.format(0x20))),
        'header-size-huge.fatbin': (patch(lz4, LZ4_E0 + HEADER_SIZE, 'I', 0xfffffff8),
                                    ('header', LZ4_E0 + HEADER_SIZE, between.format(0xfffffff8))),
        'header-size-past.fatbin': (patch(lz4, e1 + HEADER_SIZE, 'I', 0x400),
                                    ('header', e1 + HEADER_SIZE,
                                     'the entry header (0x400 bytes) extends past the end of its fatbin '
                                     '(0x%x bytes left)' % left1)),
        # Payload and fatbin sizes.
        'payload-size-past.fatbin': (patch(lz4, e1 + PAYLOAD_SIZE, 'Q', 0x1000),
                                     ('header', e1 + PAYLOAD_SIZE,
                                      "the entry's payload (0x1000 bytes) extends past the end of its fatbin "
                                      '(0x%x bytes left)' % (left1 - 80))),
        'payload-size-huge.fatbin': (patch(lz4, e1 + PAYLOAD_SIZE, 'Q', (1 << 64) - 8),
                                     ('header', e1 + PAYLOAD_SIZE,
                                      "the entry's payload (0xfffffffffffffff8 bytes) extends past the end of its "
                                      'fatbin (0x%x bytes left)' % (left1 - 80))),
        'fat-size-past-file.fatbin': (patch(lz4, FAT_SIZE, 'Q', LZ4_END + 0x100),
                                      ('header', FAT_SIZE, past.format(LZ4_END + 0x100, LZ4_END - 16))),
        'fat-size-huge.fatbin': (patch(lz4, FAT_SIZE, 'Q', (1 << 64) - 1),
                                 ('header', FAT_SIZE, past.format((1 << 64) - 1, LZ4_END - 16))),
        # k-nvcc13.o as nvcc wrote it, its fatbin 0x40 bytes longer than its .nv_fatbin (the file goes on).
        'fat-size-past-section.o': (patch(nvcc_o, NVCC_O_FATBIN + FAT_SIZE, 'Q', 5040 + 0x40),
                                    ('header', NVCC_O_FATBIN + FAT_SIZE, past.format(5040 + 0x40, 5040))),
        'truncated-mid-entry.fatbin': (lz4[:e1 + 40], ('header', FAT_SIZE, past.format(LZ4_END - 16, e1 + 40 - 16))),
        # The outer header, strings in the entry header, a section without a fatbin.
        'fatbin-version-2.fatbin': (patch(lz4, 4, 'H', 2), ('header', 4, 'fatbin version 2 is not known (1 is)')),
        'options-outside.o': (patch(rdc_o, RDC_E0 + 0x44, 'I', 0x1000),
                              ('header', RDC_E0 + 0x40, "the entry's options string (0x1000 bytes at 0x48) lies "
                               'outside its 0x60-byte header')),
        'identifier-outside.fatbin': (patch(lz4, LZ4_E0 + 0x24, 'I', 8),
                                      ('header', LZ4_E0 + 0x20, "the entry's identifier (0x8 bytes) lies outside its "
                                       '0x40-byte header')),
        'no-fatbin-in-section.o': (nv_object(b'\x01' * 64),
                                   ('header', SECTION_AT, 'section .nv_fatbin holds no NVIDIA fatbin')),
        # Compression fields.
        'both-compressions.fatbin': (patch(lz4, LZ4_E0 + FLAGS, 'Q', 0xa011), ('header', LZ4_E0 + FLAGS, both)),
        'compressed-size-0.fatbin': (patch(lz4, LZ4_E0 + COMPRESSED_SIZE, 'I', 0),
                                     ('header', LZ4_E0 + COMPRESSED_SIZE, csize.format(0))),
        'compressed-size-over.fatbin': (patch(lz4, LZ4_E0 + COMPRESSED_SIZE, 'I', 0x581),
                                        ('header', LZ4_E0 + COMPRESSED_SIZE, csize.format(0x581))),
        # Payloads: listed, refused when decompressed.
        'lz4-garbage.fatbin': (fill(lz4, 0x50, 1402, 0xff),
                               ('payload', 0, 0x50, 'the LZ4 entry is damaged: the block does not decode')),
        'lz4-bomb.fatbin': (patch(lz4, LZ4_E0 + UNCOMPRESSED_SIZE, 'Q', GIB3),
                            ('payload', 0, 0x50, 'the LZ4 entry declares 0xc0000000 bytes from 0x57a (more than LZ4 '
                             'expands to, or the limit of 0x100000000): a decompression bomb?')),
        # 3 GiB stored (a file with a hole): more than liblz4 takes (an int), and read by no applet.
        'lz4-3gib-stored.fatbin': (Sparse(huge, 16 + 64 + GIB3),
                                   ('payload', 0, 0x50, "the LZ4 entry's 0xc0000000 compressed bytes are more than an "
                                    'LZ4 block holds (0x7e000000)')),
        'zstd-garbage.fatbin': (fill(zstd, 0x50, 912, 0xff),
                                ('payload', 0, 0x50, 'the zstd entry is damaged: Unknown frame descriptor')),
        'zstd-bomb.fatbin': (patch(zstd, ZSTD_E0 + UNCOMPRESSED_SIZE, 'Q', GIB3),
                             ('payload', 0, 0x50, 'the zstd entry declares 0xc0000000 bytes from 0x390 (more than '
                              'zstd expands to, or the limit of 0x100000000): a decompression bomb?')),
        'zstd-over-limit.fatbin': (patch(zstd, ZSTD_E0 + UNCOMPRESSED_SIZE, 'Q', 5 << 30),
                                   ('payload', 0, 0x50, 'the zstd entry declares 0x140000000 bytes from 0x390 (more '
                                    'than zstd expands to, or the limit of 0x100000000): a decompression bomb?')),
        # Accepted: an entry of a kind not known (its target names none, so compat passes over it;
        # unbundle writes its image), and fatbins with zero bytes between them (and after).
        'unknown-kind.fatbin': (patch(lz4, LZ4_E0 + KIND, 'H', 0x10),
                                ('ok', ['unknown-kind.fatbin, fatbin at 0x0: 2 entries\n',
                                        '    0  fatbin-kind-0x10-sm_80  -              1.4 KiB  at 0x50 (kind 0x10, '
                                        'LZ4 of 4.5 KiB)\n'],
                                 ['rejected fatbin-kind-0x10-sm_80 (', 'selected compute_80 ('],
                                 {'unknown-kind.1.sm_80.kind16.bin': cubin, 'unknown-kind.1.sm_80.ptx': None})),
        'zero-padding.fatbin': (zstd + bytes(16) + lz4 + bytes(8),
                                ('ok', ['zero-padding.fatbin, fatbin 0 at 0x0: 2 entries\n',
                                        'zero-padding.fatbin, fatbin 1 at 0x%x: 2 entries\n' % (ZSTD_END + 16),
                                        'zero-padding.fatbin: 4 entries in 2 containers'],
                                 ['selected sm_80 (zero-padding.fatbin, fatbin 0 at 0x0, entry 0'],
                                 {'zero-padding.1.sm_80.cubin': cubin, 'zero-padding.2.sm_80.cubin': cubin,
                                  'zero-padding.1.sm_80.ptx': None, 'zero-padding.2.sm_80.ptx': None})),
        'zero-padding.o': (nv_object(zstd + bytes(24) + lz4),
                           ('ok', ['zero-padding.o, section .nv_fatbin, fatbin 0 at 0x40: 2 entries\n',
                                   'zero-padding.o, section .nv_fatbin, fatbin 1 at 0x%x: 2 entries\n' % (
                                       SECTION_AT + ZSTD_END + 24),
                                   'zero-padding.o: 4 entries in 2 containers'],
                            ['selected sm_80 (zero-padding.o, section .nv_fatbin, fatbin 0 at 0x40, entry 0'],
                            {'zero-padding.1.sm_80.cubin': cubin, 'zero-padding.2.sm_80.cubin': cubin,
                             'zero-padding.1.sm_80.ptx': None, 'zero-padding.2.sm_80.ptx': None})),
        # A real zstd frame of 256 MiB (RLE blocks: 8 KB of input): extracted
        # within the memory budget (it was decoded into memory: 256 MB resident).
        'zstd-bomb-real.fatbin': (rle_zstd_fatbin(256 << 20),
                                  ('ok', ['zstd-bomb-real.fatbin, fatbin at 0x0: 1 entry\n',
                                          '(cubin, zstd of 256.0 MiB)'],
                                   ['selected sm_80 (zstd-bomb-real.fatbin, fatbin at 0x0, entry 0'],
                                   {'zstd-bomb-real.1.sm_80.cubin': ('size', 256 << 20)})),
        # A section's bytes after its fatbin: neither padding nor a fatbin.
        'garbage-after.o': (nv_object(zstd + b'\xde\xad\xbe\xef' + bytes(12)),
                            ('header', SECTION_AT + ZSTD_END,
                             '0x10 bytes after a fatbin are neither zero padding nor another fatbin (they start '
                             'de ad be ef 00 00 00 00 ...)')),
        'garbage-after-short.o': (nv_object(zstd + bytes(4) + b'\x01\x02\x03\x04'),
                                  ('header', SECTION_AT + ZSTD_END,
                                   '0x8 bytes after a fatbin are neither zero padding nor another fatbin (they '
                                   'start 00 00 00 00 01 02 03 04)')),
    }


APPLETS = (('list', []), ('size', []), ('compat', ['select', '--target', 'sm_80']),
           ('unbundle', ['--extract-dir', 'out']))


def run_timed(folder, argv):
    """(exit code, stdout, stderr, seconds, peak resident KiB) of offloadtool `argv` in `folder`."""
    with tempfile.NamedTemporaryFile() as t:
        t0 = time.monotonic()
        try:
            p = subprocess.run(['/usr/bin/time', '-f', '%M', '-o', t.name, OT] + argv, cwd=folder,
                               capture_output=True, timeout=120)
            rc, out, err = p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')
        except subprocess.TimeoutExpired:
            rc, out, err = 'timeout', '', ''
        secs = time.monotonic() - t0
        lines = open(t.name).read().split()
    return rc, out, err, secs, int(lines[-1]) if lines else -1


class Sparse:
    """A file of `size` bytes that are zero after `head`, written sparse (a hole, not written)."""

    def __init__(self, head, size):
        self.head, self.size = head, size


def names(folder):
    """The files (and empty folders, as 'name/') below `folder`, without reading them."""
    out = []
    for dirpath, dirnames, files in os.walk(folder):
        rel = os.path.relpath(dirpath, folder)
        out += [os.path.normpath(os.path.join(rel, f)) for f in files]
        out += [os.path.normpath(os.path.join(rel, d)) + '/' for d in dirnames
                if not os.listdir(os.path.join(dirpath, d))]
    return sorted(out)


def one(root, name, data, want, budget):
    """Every applet on one input, in a folder holding it and out/keep.txt."""
    kind = want[0]
    for applet, args in APPLETS:
        d = harness.Folder(root, files={'out/keep.txt': b'kept\n'})
        with open(d.path(name), 'wb') as f:
            if isinstance(data, Sparse):
                f.write(data.head)
                f.truncate(data.size)
            else:
                f.write(data)
        argv = [applet] + args[:1] + [name] + args[1:] if applet == 'compat' else [applet] + args + [name]
        rc, out, err, secs, kib = run_timed(d.dir, argv)
        what = '%s: %s' % (name, ' '.join(a for a in argv if a != name))
        detail = 'rc=%s\n--- stdout\n%s--- stderr\n%s' % (rc, out[:3000], err)
        check(what + ': within %d s' % SECONDS, secs < SECONDS, '%.1f s' % secs)
        check(what + ': peak resident within budget', kib <= budget, '%d KiB (budget %d KiB)' % (kib, budget))
        files = names(d.dir)
        if kind == 'header' or (kind == 'payload' and applet == 'unbundle'):
            if kind == 'header':
                where, at, text = name, want[1], want[2]
            else:
                where, at, text = '%s, fatbin at 0x0, entry %d' % (name, want[1]), want[2], want[3]
            line = 'offloadtool %s: error: %s: %s, at offset 0x%x\n' % (applet, where, text, at)
            check(what + ': one error line', rc == (2 if applet == 'compat' else 1) and err == line and
                  (applet != 'list' or out == ''), detail + '--- expected stderr\n' + line)
            check(what + ': leaves no file', files == sorted([name, 'out/keep.txt']), files)
            continue
        check(what + ': accepted', rc == 0 and err == '', detail)
        if kind == 'payload':  # listed as declared: the damage is in the payload, which only unbundle reads
            check(what + ': the fatbin as it is', applet != 'list' or ' in 1 container, ' in out, detail)
            continue
        marks = want[1] if applet == 'list' else want[2] if applet == 'compat' else []
        missing = [m for m in marks if m not in out]
        check(what + ': says what it found', not missing, detail + '--- missing\n' + '\n'.join(missing))
        if applet == 'unbundle':
            written = [f[4:] for f in files if f.startswith('out/') and f != 'out/keep.txt']

            def holds(f, b):  # None: any bytes; ('size', n): n bytes (not read); else these bytes
                if b is None:
                    return True
                if isinstance(b, tuple):
                    return os.path.getsize(d.path('out/' + f)) == b[1]
                return harness.read(d.path('out/' + f)) == b
            check(what + ': writes every entry', sorted(written) == sorted(want[3]) and
                  all(holds(f, b) for f, b in want[3].items()), sorted(written))


def cases(root):
    budget = harness.resident_budget_kib(64)
    for name, (data, want) in inputs().items():
        one(root, name, data, want, budget)


if __name__ == '__main__':
    if len(sys.argv) == 3 and sys.argv[1] == '--corpus':
        for name, (data, _) in inputs().items():
            if not isinstance(data, Sparse):
                harness.write(os.path.join(sys.argv[2], name), data)
        sys.exit(0)
    sys.exit(harness.run_suite('nvidia-hostile', cases))
