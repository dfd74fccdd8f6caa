#!/usr/bin/env python3
"""Issue 25 (hardening), items 4, 5 and 7, on crafted inputs only (no other tool):

  4. a library's message (libarchive's, which ends some with a newline) never
     splits an error: every error is one line;
  5. text from a file (entry IDs, member names) reaches the human-readable
     outputs with its control characters escaped (\\n, \\x1b ...; docs/outputs.md,
     "Names with control characters"), and JSON stays JSON;
  7. two .hip_fatbin sections are named as such; prune of an empty .hip_fatbin
     says there is nothing to prune; compat verify of a file without device code
     is a violation (exit 1).

Environment: OFFLOADTOOL = the offloadtool binary. Prints "N passed, M failed";
exits 1 on failure. The crafted inputs are also in tests/fuzz/corpus (contents/, prune/).
"""

import io
import json
import os
import struct
import sys
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import binary_bundle, check, expect  # noqa: E402

HOST = 'host-x86_64-unknown-linux-gnu-'
GFX906 = 'hipv4-amdgcn-amd-amdhsa--gfx906'
ESC_ID = GFX906 + '\x1b[2J'
NL_ID = 'hipv4-amdgcn-amd-amdhsa--gfx9\n08'


def one_line(err):
    return err.count('\n') == 1 and err.endswith('\n')


def bad_zip():
    """A zip whose deflated member says 100 bytes and holds 100000: libarchive's
    "ZIP uncompressed data is wrong size (read 100000, expected 100)\\n"."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w', zipfile.ZIP_DEFLATED) as z:
        z.writestr('a.bundle', bytes(100000))
    data = bytearray(buf.getvalue())
    struct.pack_into('<I', data, 22, 100)  # local header: uncompressed size
    cd = data.rfind(b'PK\x01\x02')
    struct.pack_into('<I', data, cd + 24, 100)  # central directory: the same
    return bytes(data)


def elf64(e_type, sections):
    """A little-endian x86-64 ELF file of e_type with `sections` ((name, type,
    flags, data) each), no program headers, the section names last."""
    names = b'\0' + b''.join(n.encode() + b'\0' for n, _, _, _ in sections) + b'.shstrtab\0'
    body, headers, at = b'', [bytes(64)], 64
    name_at = 1
    for name, typ, flags, data in sections:
        headers.append(struct.pack('<IIQQQQIIQQ', name_at, typ, flags, 0, at + len(body), len(data), 0, 0, 1, 0))
        name_at += len(name) + 1
        body += data
    headers.append(struct.pack('<IIQQQQIIQQ', name_at, 3, 0, 0, at + len(body), len(names), 0, 0, 1, 0))
    body += names
    shoff = (at + len(body) + 7) // 8 * 8
    body += bytes(shoff - at - len(body))
    ident = b'\x7fELF\x02\x01\x01' + bytes(9)
    ehdr = ident + struct.pack('<HHIQQQIHHHHHH', e_type, 62, 1, 0, 0, shoff, 0, 64, 56, 0, 64, len(headers),
                               len(headers) - 1)
    return ehdr + body + b''.join(headers)


def one_line_errors(root):
    """Item 4: libarchive's message loses its newline; the error stays one line."""
    z = bad_zip()
    for applet, args in [('list', ['x.zip']), ('size', ['x.zip']), ('compat', ['verify', 'x.zip']),
                         ('compat', ['select', 'x.zip', '--target', 'gfx906']),
                         ('unbundle', ['--extract-dir', 'out', 'x.zip'])]:
        c = harness.Case(root, applet, {'x.zip': z})
        rc, out, err = c.run(*args)
        check('%s %s: a libarchive message ending in a newline: one line' % (applet, args[0]),
              rc == (2 if applet == 'compat' else 1) and one_line(err) and
              '(read 100000, expected 100), at offset 0x' in err, (rc, out, err))


def escaped_ids(root):
    """Item 5: IDs with control characters, escaped in every text output."""
    b = binary_bundle([(HOST, b''), (ESC_ID, b'\x7fELF' + bytes(60)), (NL_ID, b'\x7fELF' + bytes(60))])
    c = harness.Case(root, 'list', {'b.bundle': b})
    rc, out, err = c.run('b.bundle')
    check('list: control characters of IDs escaped, one row each',
          rc == 0 and '\x1b' not in out and GFX906 + '\\x1b[2J ' in out and 'gfx9\\n08' in out and
          len(out.splitlines()) == 5, (rc, out, err))
    rc, out, err = c.run('--json', 'b.bundle')
    check('list --json: the IDs as they are, in valid JSON',
          rc == 0 and [e['id'] for e in json.loads(out)['entries']] == [HOST, ESC_ID, NL_ID], (rc, out, err))
    c = harness.Case(root, 'size', {'b.bundle': b})
    rc, out, err = c.run('b.bundle')
    check('size: control characters of IDs escaped', rc == 0 and '\x1b' not in out and 'gfx9\n' not in out
          and 'gfx9\\n08' in out, (rc, out, err))
    c = harness.Case(root, 'prune', {'b.bundle': b, 'nl.bundle': binary_bundle([(HOST, b''), (NL_ID, b'x')])})
    rc, out, err = c.run('--keep', 'gfx906', '-o', 'out.bundle', 'nl.bundle')
    check('prune: an error naming an ID with a newline is one line', rc == 1 and one_line(err) and
          "'hipv4-amdgcn-amd-amdhsa--gfx9\\n08'" in err, (rc, out, err))
    rc, out, err = c.run('--keep', 'gfx906', '-o', 'out.bundle', 'b.bundle')
    check('prune: an error naming an ID with ESC holds no ESC', rc == 1 and one_line(err) and '\x1b' not in err and
          GFX906 + '\\x1b[2J' in err, (rc, out, err))
    c = harness.Case(root, 'compat', {'b.bundle': b})
    rc, out, err = c.run('verify', 'b.bundle')
    check('compat verify: findings name IDs escaped', '\x1b' not in out and 'gfx9\n08' not in out and
          'gfx9\\n08' in out, (rc, out, err))
    t = harness.tar_gnu([('m\x1b[2J\n.bundle', binary_bundle([(HOST, b''), (GFX906, b'\x7fELF' + bytes(60))]))])
    c = harness.Case(root, 'list', {'t.tar': t})
    rc, out, err = c.run('t.tar')
    check('list: a member name with control characters escaped in the header line',
          rc == 0 and '\x1b' not in out and 't.tar(m\\x1b[2J\\n.bundle)' in out, (rc, out, err))
    c = harness.Case(root, 'compress', {'t.tar': t})
    rc, out, err = c.run('--info', 't.tar')
    check('compress --info: a member name escaped', rc == 0 and '\x1b' not in out and
          '\nt.tar(m\\x1b[2J\\n.bundle), bundle at 0x0: uncompressed' in out, (rc, out, err))
    c = harness.Case(root, 'unbundle', {'t.tar': t, 'b.bundle': b})
    rc, out, err = c.run('--extract-dir', 'out', '-v', 't.tar')
    check('unbundle --extract-dir -v: a member name escaped, one line a file', rc == 0 and '\x1b' not in out and
          len(out.splitlines()) == 2 and '\tm\\x1b[2J\\n.bundle\t' in out, (rc, out, err))
    rc, out, err = c.run('--extract-dir', 'out2', '-v', 'b.bundle')
    check('unbundle --extract-dir -v: IDs escaped', rc == 0 and '\x1b' not in out and
          len(out.splitlines()) == 3 and '\t' + GFX906 + '\\x1b[2J\n' in out, (rc, out, err))


def smaller(root):
    """Item 7."""
    fatbin = binary_bundle([(HOST, b''), (GFX906, b'\x7fELF' + bytes(60))])
    two = elf64(3, [('.hip_fatbin', 1, 2, fatbin), ('.hip_fatbin', 1, 2, fatbin)])
    c = harness.Case(root, 'prune', {'two.so': two})
    rc, out, err = c.run('--keep', 'gfx906', '-o', 'out.so', 'two.so')
    check('prune: two .hip_fatbin sections are called that', rc == 1 and 'two .hip_fatbin sections' in err and
          'both' not in err and c.new_files() == [], (rc, out, err))
    empty = elf64(1, [('.hip_fatbin', 1, 2, b'')])
    c = harness.Case(root, 'prune', {'empty.o': empty})
    expect('prune: an empty .hip_fatbin: nothing to prune', c, ['--keep', 'gfx906', '-o', 'out.o', 'empty.o'], 1, '',
           'offloadtool prune: error: empty.o: section .hip_fatbin is empty: nothing to prune, at offset 0x0\n',
           files=[])
    c = harness.Case(root, 'compat', {'notes.txt': b'hello\n'})
    rc, out, err = c.run('verify', 'notes.txt')
    check('compat verify: no device code is a violation', rc == 1 and 'no device code found' in out and
          out.endswith('1 violation, 0 warnings\n'), (rc, out, err))
    rc, out, err = c.run('verify', '--json', 'notes.txt')
    j = json.loads(out) if rc in (0, 1) and out else {}
    check('compat verify --json: no device code is a violation', rc == 1 and j.get('violations') == 1 and
          j['files'][0]['findings'][0]['rule'] == 'no-device-code', (rc, out, err))


def cases(root):
    one_line_errors(root)
    escaped_ids(root)
    smaller(root)


if __name__ == '__main__':
    sys.exit(harness.run_suite('hardening', cases))
