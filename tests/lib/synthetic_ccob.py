"""CCOBs of many MiB written in a few KiB of Python: a binary bundle whose code
objects are runs of one byte between pseudo-random bytes, compressed as a zstd
frame of raw and RLE blocks (no compressor involved, so generating 1 GiB of
decompressed content takes a fraction of a second). Shared by the memory tests
of split (kpack_split_memory_test) and of list, size and prune
(ccob_memory_test)."""
import hashlib
import struct

HOST = b'host-x86_64-unknown-linux-gnu-'
BLOCK = 1 << 17  # zstd's largest block


def code_object(seed, size, head=4096, tail=8192, fill=None):
    """A code object of `size` bytes that says where it belongs: a `head` of
    pseudo-random bytes drawn from `seed` (bytes), a run of one byte (from the
    seed unless `fill`), a `tail` likewise. As (head, fill, run, tail)."""
    digest = hashlib.sha256(seed).digest()
    stream = hashlib.shake_256(digest).digest(head + tail)
    if fill is None:
        fill = 0x40 + digest[0] % 0x80
    return stream[:head], fill, size - head - tail, stream[head:]


def ccob(ids, objects, window_log=27):
    """The CCOB (v2, zstd, window 2^window_log as LLVM's long-distance matching
    makes it) of a binary bundle of the host entry (empty) and, for each of
    `ids` (bytes), the code object of `objects` (code_object's tuples), each at
    a 4 KiB boundary, as clang lays out HIP bundles; the hash is LLVM's
    truncated MD5 (the first 8 digest bytes, little-endian)."""
    all_ids = [HOST] + list(ids)
    sizes = [0] + [len(h) + run + len(t) for h, _, run, t in objects]
    table_size = 24 + 8 + sum(24 + len(i) for i in all_ids)
    at = (table_size + 4095) // 4096 * 4096
    offsets = []
    for n in sizes:
        offsets.append(at)
        at = (at + n + 4095) // 4096 * 4096 if n else at
    table = b'__CLANG_OFFLOAD_BUNDLE__' + struct.pack('<Q', len(all_ids))
    for i, o, n in zip(all_ids, offsets, sizes):
        table += struct.pack('<QQQ', o, n, len(i)) + i
    pieces, end = [('raw', table + bytes(offsets[0] - len(table)))], offsets[0]
    for (head, fill, run, tail), o in zip(objects, offsets[1:]):
        if o > end:
            pieces.append(('raw', bytes(o - end)))
        pieces += [('raw', head), ('rle', fill, run), ('raw', tail)]
        end = o + len(head) + run + len(tail)
    blocks, md5, chunks = [], hashlib.md5(), {}
    pieces = [p for p in pieces if (len(p[1]) if p[0] == 'raw' else p[2])]
    for n, p in enumerate(pieces):
        last = n == len(pieces) - 1
        if p[0] == 'raw':
            for at in range(0, len(p[1]), BLOCK):
                part = p[1][at:at + BLOCK]
                done = last and at + len(part) == len(p[1])
                blocks.append(struct.pack('<I', done | (0 << 1) | (len(part) << 3))[:3] + part)
            md5.update(p[1])
        else:
            _, fill, run = p
            left = run
            while left:
                k = min(BLOCK, left)
                left -= k
                blocks.append(struct.pack('<I', (last and not left) | (1 << 1) | (k << 3))[:3] + bytes([fill]))
            chunk = chunks.setdefault(fill, bytes([fill]) * (16 << 20))
            for _ in range(run // len(chunk)):
                md5.update(chunk)
            md5.update(bytes([fill]) * (run % len(chunk)))
    frame = (struct.pack('<I', 0xFD2FB528) + bytes([0xC0, (window_log - 10) << 3]) + struct.pack('<Q', end) +
             b''.join(blocks))
    return b'CCOB' + struct.pack('<HHIIQ', 2, 1, 24 + len(frame), end,
                                 int.from_bytes(md5.digest()[:8], 'little')) + frame


def hip_library_asm(ccobs):
    """Assembly of a HIP library whose .hip_fatbin holds the files `ccobs`
    (each at a 4 KiB boundary) with a .hipFatBinSegment record for each, the
    form clang links."""
    fatbin = ''.join('  .p2align 12\nb%d: .incbin "%s"\n' % (i, c) for i, c in enumerate(ccobs))
    records = ''.join('  .long 0x48495046, 1\n  .quad b%d, 0\n' % i for i in range(len(ccobs)))
    return ('  .section .hip_fatbin,"a",@progbits\n' + fatbin +
            '  .section .hipFatBinSegment,"aw",@progbits\n  .p2align 3\n' + records)


def split_ccobs(data):
    """The CCOBs (v2, v3) one after another in `data` (a .hip_fatbin section's
    bytes, padding between them), as bytes: read by their headers' total sizes."""
    out, at = [], 0
    while True:
        at = data.find(b'CCOB', at)
        if at < 0:
            return out
        version = struct.unpack_from('<H', data, at + 4)[0]
        total = struct.unpack_from('<I' if version == 2 else '<Q', data, at + 8)[0]
        out.append(data[at:at + total])
        at += total
