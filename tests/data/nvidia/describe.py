#!/usr/bin/env python3
"""Describe the NVIDIA fat binaries (magic 0xBA55ED50) in the fixtures of this folder.

    python3 describe.py [FILE...]      (default: the five fixtures, as in expected.txt)

A FILE is a raw fatbin or a 64-bit little-endian ELF object whose .nv_fatbin or
__nv_relfatbin sections hold fatbins. For each fatbin it prints the 16-byte
header, then each entry: file offset, kind, target, header size, flags, the
stored (payload_size), compressed and uncompressed sizes, the options area and
identifier; then the entry's bytes after decompression (LZ4 blocks decoded
here; zstd through the `zstd` program, skipped when there is none) and which
file under inputs/ they reproduce. For an ELF object it also prints the
.nvFatBinSegment wrappers and their relocations.

Written from the format notes in README.md of this folder; standard library only.
"""
import hashlib
import os
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = ['zstd.fatbin', 'lz4.fatbin', 'arch-specific.fatbin', 'k-nvcc13.o', 'k-rdc-nvcc13.o']
FATBIN_MAGIC = 0xBA55ED50
WRAPPER_MAGIC = 0x466243B1
KINDS = {1: 'PTX', 2: 'ELF'}
FLAG_NAMES = [(0x1, '64bit'), (0x2, 'debug'), (0x4, 'cuda'), (0x8, 'opencl'), (0x10, 'linux'),
              (0x20, 'mac'), (0x40, 'windows'), (0x2000, 'lz4'), (0x8000, 'zstd'),
              (0x100000, 'a'), (0x200000, 'f')]
LZ4, ZSTD = 0x2000, 0x8000
RELOC_TYPES = {1: 'R_X86_64_64', 2: 'R_X86_64_PC32', 8: 'R_X86_64_RELATIVE'}
ENTRY = struct.Struct('<HHIQIIHHIIIQQQ')  # the 64-byte base entry header


def length(src, i, n):
    """An LZ4 length: a nibble of 15 goes on in bytes at `i`, each added, until one below 255.
    The length and where reading stopped."""
    if n == 15:
        while True:
            b = src[i]
            i += 1
            n += b
            if b != 255:
                break
    return n, i


def lz4_block(src, size):
    """Decode one raw LZ4 block (no frame) that must give exactly size bytes."""
    out = bytearray()
    i = 0
    while True:
        token = src[i]
        i += 1
        n = token >> 4
        n, i = length(src, i, n)
        out += src[i:i + n]
        i += n
        if i >= len(src):  # the last sequence has literals only
            break
        off = src[i] | src[i + 1] << 8
        i += 2
        n = token & 15
        n, i = length(src, i, n)
        if off == 0 or off > len(out):
            raise ValueError('match offset %d outside the %d bytes decoded' % (off, len(out)))
        for _ in range(n + 4):
            out.append(out[-off])
    if i != len(src) or len(out) != size:
        raise ValueError('decoded %d bytes from %d, want %d from %d' % (len(out), i, size, len(src)))
    return bytes(out)


def zstd_frame(src, size):
    """The bytes the zstd program makes of src, or None when there is no zstd program."""
    exe = shutil.which('zstd')
    if not exe:
        return None
    r = subprocess.run([exe, '-dcq'], input=src, capture_output=True)
    if r.returncode or len(r.stdout) != size:
        raise ValueError('zstd -d: exit %d, %d bytes, want %d' % (r.returncode, len(r.stdout), size))
    return r.stdout


def ptx_as_stored(src):
    """The text fatbinary 13.0 stores for a PTX input file (see README.md):
    // and /* */ comments removed, strings kept as they are, a space or tab
    dropped when the input byte before it is whitespace, then a NUL."""
    out = bytearray()
    i = 0
    while i < len(src):
        c = src[i]
        if c == 0x22 and src[i - 1:i] != b'\\':  # a "string": to the next " with no \ before it
            j = i + 1
            while j < len(src) and (src[j] != 0x22 or src[j - 1] == 0x5C):
                j += 1
            out += src[i:j + 1]
            i = j + 1
        elif src.startswith(b'//', i):  # to the next CR or LF, which stays
            ends = [j for j in (src.find(b'\n', i), src.find(b'\r', i)) if j >= 0]
            i = min(ends) if ends else len(src)
        elif src.startswith(b'/*', i):  # its */ may share the *: '/*/' is a whole comment
            j = src.find(b'*/', i + 1)
            i = len(src) if j < 0 else j + 2
        elif c in b' \t' and i > 0 and src[i - 1] in b' \t\n\r\v\f':
            i += 1
        else:
            out.append(c)
            i += 1
    return bytes(out) + b'\0'


def inputs():
    """(name, bytes an entry holds for it) for each .cubin and .ptx under inputs/."""
    folder = os.path.join(HERE, 'inputs')
    found = []
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        with open(os.path.join(folder, name), 'rb') as f:
            data = f.read()
        if name.endswith('.cubin'):
            found.append(('inputs/' + name, data, ''))
        elif name.endswith('.ptx'):
            found.append(('inputs/' + name, ptx_as_stored(data), ' as stored (see README), NUL included'))
    return found


def matches(data, known):
    """Which inputs the entry's bytes are, allowing up to 7 zero bytes of padding."""
    said = []
    for name, want, how in known:
        pad = len(data) - len(want)
        if 0 <= pad < 8 and data.startswith(want) and not data[len(want):].strip(b'\0'):
            said.append('= %s%s%s' % (name, how, ', + %d zero bytes' % pad if pad else ''))
    return said or ['= no file under inputs/']


def flag_names(flags):
    names = [n for bit, n in FLAG_NAMES if flags & bit]
    rest = flags & ~sum(bit for bit, _ in FLAG_NAMES)
    if rest:
        names.append('%#x' % rest)
    return '|'.join(names)


def printable(b):
    return all(32 <= c < 127 for c in b)


def describe_entry(d, q, end, known, out):
    if q + ENTRY.size > end:
        out.append('    ERROR: entry header @%#x runs past the fatbin end @%#x' % (q, end))
        return end
    (kind, ever, hsize, psize, csize, opt_off, minor, major, arch, id_off, id_len, flags, unknown30,
     usize) = ENTRY.unpack_from(d, q)
    kname = KINDS.get(kind, 'kind%d' % kind)
    target = '%s_%d%s%s' % ('compute' if kind == 1 else 'sm', arch,
                            'a' if flags & 0x100000 else '', 'f' if flags & 0x200000 else '')
    out.append('  entry @%#x %s %s: header %d, entry version %#06x, flags %#x (%s), version %d.%d'
               % (q, kname, target, hsize, ever, flags, flag_names(flags), major, minor))
    out.append('    payload @%#x, stored %d, compressed %d, uncompressed %d'
               % (q + hsize, psize, csize, usize))
    if opt_off:
        o_at, o_len = struct.unpack_from('<II', d, q + opt_off)
        blob = d[q + o_at:q + o_at + o_len]
        text = repr(blob.decode()) if printable(blob) else blob.hex()
        out.append('    options area @+%#x: (offset %#x, length %d)%s'
                   % (opt_off, o_at, o_len, ' ' + text if o_len else ''))
    if id_off or id_len:
        out.append('    identifier @+%#x, length %d: %r' % (id_off, id_len, d[q + id_off:q + id_off + id_len]))
    if unknown30:
        out.append('    +0x30: %#x' % unknown30)
    tail = d[q + ENTRY.size:q + hsize]
    if tail:
        out.append('    header bytes +0x40..+%#x: %s' % (hsize, tail.hex()))
    payload = d[q + hsize:q + hsize + psize]
    try:
        if flags & LZ4:
            data = lz4_block(payload[:csize], usize)
            how = 'LZ4 block decoded'
        elif flags & ZSTD:
            data = zstd_frame(payload[:csize], usize)
            how = 'zstd frame decoded'
            if data is None:
                out.append('    zstd frame not decoded: no zstd program')
        else:
            data, how = payload, 'stored as is'
    except (ValueError, IndexError) as e:
        out.append('    ERROR: %s' % e)
        data = None
    if data is not None:
        if flags & (LZ4 | ZSTD):
            extra = payload[csize:]
            how += ', %d padding bytes after it%s' % (len(extra), '' if not extra.strip(b'\0') else ' (not zero)')
        out.append('    %s: %d bytes, sha256 %s' % (how, len(data), hashlib.sha256(data).hexdigest()[:16]))
        for line in matches(data, known):
            out.append('    ' + line)
    return q + hsize + psize


def describe_fatbins(d, start, size, where, known, out):
    p, end = start, start + size
    while p < end:
        if d[p:p + 8] == b'\0' * 8:
            out.append('zero padding @%#x' % p)
            p += 8
            continue
        if p + 16 > end:
            out.append('ERROR: %d bytes left @%#x' % (end - p, p))
            return
        magic, version, hsize, fsize = struct.unpack_from('<IHHQ', d, p)
        if magic != FATBIN_MAGIC:
            out.append('ERROR: magic %#x @%#x' % (magic, p))
            return
        fend = p + hsize + fsize
        out.append('fatbin @%#x (%s+%#x): version %d, header %d, fat size %d, ends @%#x'
                   % (p, where, p - start, version, hsize, fsize, fend))
        if fend > end:
            out.append('ERROR: fatbin runs past %s, which ends @%#x' % (where, end))
            return
        q = p + hsize
        while q < fend:
            q = describe_entry(d, q, fend, known, out)
        if q != fend:
            out.append('ERROR: the last entry ends @%#x, past the fatbin' % q)
        p = fend


def elf_sections(d):
    shoff, = struct.unpack_from('<Q', d, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', d, 0x3A)
    secs = []
    for i in range(shnum):
        secs.append(struct.unpack_from('<IIQQQQIIQQ', d, shoff + i * shentsize))
    names_at = secs[shstrndx][4]

    def name(off):
        return d[names_at + off:d.index(b'\0', names_at + off)].decode()
    return [(name(s[0]),) + s[1:] for s in secs]


def symbol_name(d, secs, symtab, index):
    _, _, _, _, off, _, link, _, _, entsize = secs[symtab]
    st_name, st_info, _, st_shndx = struct.unpack_from('<IBBH', d, off + index * entsize)
    if st_info & 0xF == 3:  # STT_SECTION: the section's name
        return secs[st_shndx][0]
    strtab = secs[link][4]
    return d[strtab + st_name:d.index(b'\0', strtab + st_name)].decode()


def describe_elf(d, known, out):
    secs = elf_sections(d)
    by_name = {s[0]: i for i, s in enumerate(secs)}
    for i, (name, typ, flags, _, off, size, link, info, align, entsize) in enumerate(secs):
        if name in ('.nv_fatbin', '__nv_relfatbin', '.nvFatBinSegment', '__nv_module_id') or \
                name == '.rela.nvFatBinSegment':
            fl = ''.join(c for bit, c in ((1, 'W'), (2, 'A'), (4, 'X')) if flags & bit)
            out.append('section [%d] %s: offset %#x, size %d, flags %s, align %d'
                       % (i, name, off, size, fl or '-', align))
            if name == '__nv_module_id':
                out.append('  %r' % d[off:off + size])
    for name in ('.nv_fatbin', '__nv_relfatbin'):
        if name in by_name:
            s = secs[by_name[name]]
            describe_fatbins(d, s[4], s[5], name, known, out)
    if '.nvFatBinSegment' in by_name:
        s = secs[by_name['.nvFatBinSegment']]
        relocs = {}
        for r in secs:
            if r[1] == 4 and r[7] == by_name['.nvFatBinSegment']:  # SHT_RELA for this section
                for k in range(0, r[5], 24):
                    r_off, r_info, addend = struct.unpack_from('<QQq', d, r[4] + k)
                    sym = symbol_name(d, secs, r[6], r_info >> 32) if r_info >> 32 else ''
                    relocs[r_off] = '%s %s%+d' % (RELOC_TYPES.get(r_info & 0xFFFFFFFF, 'type%d' % (r_info & 0xFFFFFFFF)),
                                                   sym, addend)
        for k in range(0, s[5] - 23, 24):
            magic, version, data, extra = struct.unpack_from('<IIQQ', d, s[4] + k)
            out.append('wrapper @.nvFatBinSegment+%#x: magic %#x%s, version %d, data %#x%s, filename_or_fatbins %#x%s'
                       % (k, magic, '' if magic == WRAPPER_MAGIC else ' (not 0x466243b1)', version,
                          data, ' + reloc ' + relocs[k + 8] if k + 8 in relocs else '',
                          extra, ' + reloc ' + relocs[k + 16] if k + 16 in relocs else ''))


def describe(path, known):
    with open(path, 'rb') as f:
        d = f.read()
    out = ['== %s (%d bytes)' % (os.path.basename(path), len(d))]
    if d[:4] == b'\x7fELF':
        if d[4] != 2 or d[5] != 1:
            out.append('ERROR: not a 64-bit little-endian ELF file')
        else:
            describe_elf(d, known, out)
    elif d[:4] == struct.pack('<I', FATBIN_MAGIC):
        describe_fatbins(d, 0, len(d), 'file', known, out)
    else:
        out.append('ERROR: neither a fatbin nor an ELF file')
    return out


def main(argv):
    paths = argv[1:] or [os.path.join(HERE, n) for n in FIXTURES]
    known = inputs()
    for n, path in enumerate(paths):
        if n:
            print()
        print('\n'.join(describe(path, known)))


if __name__ == '__main__':
    main(sys.argv)
