"""Real ROCm libraries from Debian 12 against ROCm's own code object tools.

Debian's hipcc package ships roc-obj-ls and roc-obj-extract (Perl). For each
sample package (librocrand1 by default; OT_REAL_PACKAGES, space-separated,
names others in the cache) this suite
  * unpacks the cached .deb (scripts/fetch-rocm-samples puts it in
    $OT_SAMPLES_CACHE, default ~/.cache/offloadtool/debs) and finds every
    shared library with a .hip_fatbin section;
  * runs `roc-obj-ls -v <absolute path>` and `offloadtool list --json` on it and
    requires the same entries, one check per entry and property: bundle entry
    ID, offset, size, URI, the bundle it belongs to and its index there, plus
    the properties roc-obj-ls does not print (target, processor, compressed);
  * requires the bytes at each offset/size of our listing to equal the range
    roc-obj-ls names, and roc-obj-extract's file (for the smallest entry
    only: it copies with dd bs=1, about 15 s per MB on a busy machine);
  * runs `offloadtool unbundle <library> --extract-dir` and requires one file
    per roc-obj-ls entry, in its order, holding the range it names (the
    smallest: roc-obj-extract's file);
  * repeats the listing through a hard link whose folder name holds ' ', '+',
    ':', '@' and '%': our URI must be roc-obj-ls's string, decode to the same
    file, and roc-obj-extract must open the file our URI names;
  * runs `offloadtool list --json <the .deb>` and requires the same IDs and
    sizes with offset and uri null, the chain through data.tar.xz.

What roc-obj-ls prints, and so what is compared: every entry of every bundle
it finds in .hip_fatbin, the host entry (size 0, offset the bundle's data
start) included, in file order, bundles numbered from 1 (`Bundle#`). It reads
nothing but .hip_fatbin (no __CLANG_OFFLOAD_BUNDLE__ sections, no
.llvm.offloading, no CCOBs: it stops at the first thing that is not an
uncompressed bundle) and expects each next bundle at the 4096-byte boundary
after the previous bundle's last entry; entries we list elsewhere cannot be
compared with it (one check says there are none in these packages). Its
URIs name the path as given (so we give both tools the same absolute path),
percent-encoded by Perl's URI::Encode with encode_reserved off: ' ' and '%'
are encoded, the reserved characters (:/?#[]@!$&'()*+,;=) are left as they
are. Non-ASCII bytes it encodes twice over (UTF-8 of each byte read as
Latin-1), which nothing decodes back to the file: not compared. Nor is a path
holding ',' (or '#', '?'): roc-obj-ls leaves it as it is, and roc-obj-extract,
which splits a URI at the first of '#', ',' and '?', then cannot open the file
roc-obj-ls's own URI names (ROCm's two tools disagree; a URI with ',' encoded
as %2C works with roc-obj-extract but is not roc-obj-ls's string).

A tool or package that is missing is a failure (never a skip).
"""
import glob
import json
import os
import re
import sys
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import OT, check, run  # noqa: E402

CACHE = os.path.abspath(os.environ.get('OT_SAMPLES_CACHE') or
                        os.path.join(os.path.expanduser('~'), '.cache', 'offloadtool', 'debs'))
PACKAGES = (os.environ.get('OT_REAL_PACKAGES') or 'librocrand1').split()
HIPCC_BIN = os.path.join(CACHE, 'unpacked', 'hipcc', 'usr', 'bin')
ROC_OBJ_LS = os.path.join(HIPCC_BIN, 'roc-obj-ls')
ROC_OBJ_EXTRACT = os.path.join(HIPCC_BIN, 'roc-obj-extract')
SCHEMA = 'offloadtool-list/2'
ODD_FOLDER = 'odd name+x:y@z%1'  # characters URI::Encode keeps (+ : @) and encodes (' ' %)
LINE = re.compile(r'^(\d+)\s+(\S+)\s+(file://\S+)$')
URI = re.compile(r'^file://(.*)#offset=(\d+)&size=(\d+)$')
BUNDLE_LABEL = re.compile(r'^(compressed )?bundle (\d+ )?at 0x[0-9a-f]+$')  # 'bundle at' when the section holds one


# ---------------------------------------------------------------------------
# Reading the inputs

def elf_sections(path):
    """{name: (offset, size)} of a 64-bit little-endian ELF file's sections, or
    None when it is not one."""
    sections = harness.elf64_sections(path)
    return None if sections is None else {x['name']: (x['offset'], x['size']) for x in sections}


def read_range(path, offset, size):
    with open(path, 'rb') as f:
        f.seek(offset)
        return f.read(size)


def roc_obj_ls(path):
    """roc-obj-ls -v <path>: (entries, problem). An entry is a dict with
    bundle (its Bundle#), id, uri, path (decoded), offset, size; problem names
    what went wrong (a failed run, a line it could not parse)."""
    r = run(['perl', ROC_OBJ_LS, '-v', path], text=True, timeout=600)
    if r.returncode != 0:
        return [], 'roc-obj-ls exit %s:\n%s' % (r.returncode, r.stderr)
    entries, bad = [], []
    for line in r.stdout.splitlines():
        if not line.strip() or line.split() == ['Bundle#', 'Entry', 'ID:', 'URI:']:
            continue
        m = LINE.match(line)
        u = URI.match(m.group(3)) if m else None
        if not u:
            bad.append(line)
            continue
        entries.append({'bundle': int(m.group(1)), 'id': m.group(2), 'uri': m.group(3),
                        'path': urllib.parse.unquote_to_bytes(u.group(1)),
                        'offset': int(u.group(2)), 'size': int(u.group(3))})
    if bad:
        return entries, 'lines of roc-obj-ls -v this test cannot read:\n' + '\n'.join(bad[:10])
    if r.stderr:
        return entries, 'roc-obj-ls wrote on stderr:\n' + r.stderr
    return entries, None


def list_json(path):
    """offloadtool list --json <path>: (object or None, problem)."""
    r = run([OT, 'list', '--json', path], text=True, timeout=600)
    if r.returncode != 0:
        return None, 'offloadtool list --json %s: exit %s\n%s' % (path, r.returncode, r.stderr[-3000:])
    try:
        return json.loads(r.stdout), None
    except ValueError as e:
        return None, 'offloadtool list --json %s: not JSON (%s):\n%s' % (path, e, r.stdout[:2000])


def canonical(ids):
    """{id: canonical form} by offloadtool compat canonical (one run)."""
    r = run([OT, 'compat', 'canonical', '--json'] + sorted(set(ids)), text=True)
    try:
        return {x['input']: x['canonical'] for x in json.loads(r.stdout)['results']}
    except (ValueError, KeyError) as e:
        check('compat canonical --json of the IDs roc-obj-ls lists', False, '%s\n%s' % (e, r.stderr))
        return {}


def target_of(entry_id):
    """The target ID a bundle entry ID names ('gfx90a:xnack+'), None for host entries."""
    if entry_id.startswith('host-'):
        return None
    return entry_id.split('--', 1)[1] if '--' in entry_id else None


# ---------------------------------------------------------------------------
# The comparisons

def check_listing(what, so, theirs, listing, problem, chain_head):
    """Our listing of `so` (or of the package holding it) against roc-obj-ls's
    entries. chain_head: the path elements before 'section .hip_fatbin'. With
    offsets (a .so named directly) or without (inside a .deb). Returns our
    entries, paired with theirs (None where missing)."""
    named_directly = len(chain_head) == 1
    if not check('%s: offloadtool list --json runs' % what, problem is None, problem):
        return [None] * len(theirs)
    check('%s: schema %s' % (what, SCHEMA), listing.get('schema') == SCHEMA, listing.get('schema'))
    ours = [e for e in listing.get('entries', []) if isinstance(e, dict)]
    mine = [e for e in ours if e.get('path', [])[:len(chain_head)] == chain_head]
    outside = [e for e in mine if 'section .hip_fatbin' not in e.get('path', [])]
    check('%s: every entry listed is in .hip_fatbin (roc-obj-ls reads nothing else, so it could not vouch '
          'for others)' % what, not outside, json.dumps(outside[:5], indent=1))
    mine = [e for e in mine if 'section .hip_fatbin' in e.get('path', [])]
    check('%s: as many entries as roc-obj-ls (%d)' % (what, len(theirs)), len(mine) == len(theirs),
          'ours %d: %s' % (len(mine), [e.get('id') for e in mine]))
    if named_directly:
        check('%s: "files" names the file and its entry count' % what,
              listing.get('files') == [{'file': chain_head[0], 'entries': len(ours)}], listing.get('files'))
    # Bundles: roc-obj-ls numbers them from 1 in file order; our path names each
    # one by its own label. The grouping and order must be the same.
    labels = {}
    bundle_index = {}
    canon = canonical([t['id'] for t in theirs])
    for i, t in enumerate(theirs):
        bundle_index[i] = sum(1 for u in theirs[:i] if u['bundle'] == t['bundle'])
    paired = []
    for i, t in enumerate(theirs):
        e = mine[i] if i < len(mine) else None
        paired.append(e)
        name = '%s: entry %d (%s)' % (what, i, t['id'])
        if e is None:
            check(name + ': listed', False, 'offloadtool lists only %d entries' % len(mine))
            continue
        check(name + ': id', e.get('id') == t['id'], 'ours %r' % e.get('id'))
        check(name + ': size', e.get('size') == t['size'], 'ours %r, roc-obj-ls %d' % (e.get('size'), t['size']))
        if named_directly:
            check(name + ': offset', e.get('offset') == t['offset'],
                  'ours %r, roc-obj-ls %d' % (e.get('offset'), t['offset']))
            check(name + ': uri', e.get('uri') == t['uri'], 'ours   %r\ntheirs %r' % (e.get('uri'), t['uri']))
        else:
            check(name + ': offset null (not addressable inside the package)', e.get('offset', 0) is None,
                  'ours %r' % e.get('offset'))
            check(name + ': uri null', e.get('uri', '') is None, 'ours %r' % e.get('uri'))
        path = e.get('path', [])
        check(name + ': path %s, section .hip_fatbin, bundle' % ' / '.join(chain_head),
              len(path) == len(chain_head) + 2 and path[-2] == 'section .hip_fatbin'
              and isinstance(path[-1], str) and BUNDLE_LABEL.match(path[-1]) is not None, path)
        label = path[-1] if path else None
        check(name + ': in the same bundle as roc-obj-ls says (Bundle# %d)' % t['bundle'],
              labels.setdefault(label, t['bundle']) == t['bundle'], 'our bundle %r holds entries of more than one '
              'of roc-obj-ls\'s bundles' % label)
        check(name + ': index %d in its bundle' % bundle_index[i], e.get('index') == bundle_index[i],
              'ours %r' % e.get('index'))
        check(name + ': file as given', e.get('file') == chain_head[0], 'ours %r' % e.get('file'))
        want = canon.get(t['id'])
        check(name + ': target (canonical %s)' % want, want is not None and e.get('target') == want,
              'ours %r' % e.get('target'))
        check(name + ': processor %s (the ID\'s target ID; the code object header agrees)' % target_of(t['id']),
              e.get('processor') == target_of(t['id']), 'ours %r' % e.get('processor'))
        check(name + ': not compressed', e.get('compressed') is False, 'ours %r' % e.get('compressed'))
    check('%s: one of our bundles per roc-obj-ls bundle' % what,
          len(set(labels.values())) == len(labels) == len({t['bundle'] for t in theirs}),
          'ours %s, roc-obj-ls %s' % (sorted(labels, key=str), sorted({t['bundle'] for t in theirs})))
    return paired


def check_shared_object(root, pkg, rel, so):
    """One shared library with a .hip_fatbin: roc-obj-ls against offloadtool."""
    what = '%s %s' % (pkg, rel)
    theirs, problem = roc_obj_ls(so)
    check('%s: roc-obj-ls -v lists entries' % what, problem is None and theirs, problem or 'no entries')
    check('%s: roc-obj-ls URIs name the path given' % what, all(t['path'] == so.encode() for t in theirs),
          sorted({t['path'] for t in theirs}))
    listing, problem = list_json(so)
    paired = check_listing(what, so, theirs, listing, problem, [so])

    # Bytes: our offset/size against roc-obj-ls's range (read here), every entry.
    for i, (t, e) in enumerate(zip(theirs, paired)):
        name = '%s: entry %d (%s): bytes at our offset/size are those roc-obj-ls names' % (what, i, t['id'])
        if e is None or not isinstance(e.get('offset'), int) or not isinstance(e.get('size'), int):
            check(name, False, 'no offset/size listed: %r' % (e,))
            continue
        check(name, read_range(so, e['offset'], e['size']) == read_range(so, t['offset'], t['size']),
              'ours offset %d size %d, roc-obj-ls offset %d size %d' % (e['offset'], e['size'], t['offset'], t['size']))

    # roc-obj-extract of the smallest device entry, by OUR uri (roc-obj-ls's
    # when we have none): its file equals the bytes our listing names.
    extracted = None  # (entry index, roc-obj-extract's file)
    device = [i for i, t in enumerate(theirs) if t['size'] > 0]
    if check('%s: a device entry to extract' % what, device, 'roc-obj-ls lists no entry with bytes'):
        i = min(device, key=lambda k: theirs[k]['size'])
        t, e = theirs[i], paired[i]
        uri = e.get('uri') if e and e.get('uri') else t['uri']
        out = harness.Folder(root)
        r = run(['perl', ROC_OBJ_EXTRACT, '-o', out.dir, uri], text=True, timeout=900)
        name = '%s: entry %d (%s): roc-obj-extract %s' % (what, i, t['id'], uri)
        got = out.names()
        if check(name + ' writes one file', r.returncode == 0 and len(got) == 1,
                 'exit %s, files %s\n%s' % (r.returncode, got, r.stderr)):
            want = read_range(so, e['offset'], e['size']) if e and isinstance(e.get('offset'), int) else None
            check(name + ': its file is the bytes at our offset/size', want is not None and out.read(got[0]) == want,
                  'ours %r' % (e,))
            extracted = (i, out.read(got[0]))

    # offloadtool unbundle --extract-dir: one file per entry roc-obj-ls lists, in
    # its order, holding the range it names; the entry above is roc-obj-extract's file.
    x = harness.Folder(root).path('x')
    r = run([OT, 'unbundle', so, '--extract-dir', x, '-v'], text=True, timeout=600)
    rows = [line.split('\t') for line in r.stdout.splitlines()]
    if check('%s: unbundle --extract-dir writes a file per roc-obj-ls entry, in its order' % what,
             r.returncode == 0 and [row[2] for row in rows] == [t['id'] for t in theirs],
             'exit %s, %d files for %d entries\n%s' % (r.returncode, len(rows), len(theirs), r.stderr)):
        check('%s: unbundle --extract-dir: every file holds the range roc-obj-ls names' % what,
              all(harness.read(row[0]) == read_range(so, t['offset'], t['size']) for row, t in zip(rows, theirs)),
              [os.path.basename(row[0]) for row, t in zip(rows, theirs)
               if harness.read(row[0]) != read_range(so, t['offset'], t['size'])])
        if extracted:
            check('%s: entry %d (%s): unbundle --extract-dir\'s file is roc-obj-extract\'s' %
                  (what, extracted[0], theirs[extracted[0]]['id']), harness.read(rows[extracted[0]][0]) == extracted[1],
                  rows[extracted[0]][0])

    # The same file through a folder name with characters URIs treat specially.
    odd_dir = os.path.join(root, 'odd', ODD_FOLDER)
    os.makedirs(odd_dir, exist_ok=True)
    odd = os.path.join(odd_dir, os.path.basename(so))
    os.link(so, odd)
    odd_theirs, problem = roc_obj_ls(odd)
    check('%s via "%s": roc-obj-ls -v lists the same entries' % (what, ODD_FOLDER),
          problem is None and [(t['id'], t['offset'], t['size']) for t in odd_theirs]
          == [(t['id'], t['offset'], t['size']) for t in theirs], problem)
    check('%s via "%s": roc-obj-ls URIs decode to the path' % (what, ODD_FOLDER),
          all(t['path'] == odd.encode() for t in odd_theirs), sorted({t['path'] for t in odd_theirs}))
    odd_listing, problem = list_json(odd)
    if check('%s via "%s": offloadtool list --json runs' % (what, ODD_FOLDER), problem is None, problem):
        ours = [e for e in odd_listing.get('entries', []) if 'section .hip_fatbin' in e.get('path', [])]
        for i, t in enumerate(odd_theirs):
            e = ours[i] if i < len(ours) else {}
            name = '%s via "%s": entry %d (%s)' % (what, ODD_FOLDER, i, t['id'])
            uri = e.get('uri') or ''
            m = URI.match(uri)
            check(name + ': our uri decodes to the file, offset and size',
                  m is not None and urllib.parse.unquote_to_bytes(m.group(1)) == odd.encode()
                  and int(m.group(2)) == t['offset'] and int(m.group(3)) == t['size'], 'ours %r' % uri)
            check(name + ': our uri is roc-obj-ls\'s (URI::Encode: reserved characters kept)', uri == t['uri'],
                  'ours   %r\ntheirs %r' % (uri, t['uri']))
        # roc-obj-extract decodes our URI and finds the file: the host entry (size
        # 0: it opens the file, then has nothing to copy; dd bs=1 is too slow to
        # copy more again).
        host = [i for i, t in enumerate(odd_theirs) if t['size'] == 0]
        if check('%s via "%s": a host entry (size 0) to hand roc-obj-extract' % (what, ODD_FOLDER), host,
                 'roc-obj-ls lists no size-0 entry'):
            e = ours[host[0]] if host[0] < len(ours) else {}
            r = run(['perl', ROC_OBJ_EXTRACT, '-o', harness.Folder(root).dir, e.get('uri') or 'file://(none)'],
                    text=True, timeout=120)
            check('%s via "%s": roc-obj-extract finds the file our uri names' % (what, ODD_FOLDER),
                  r.returncode == 0 and e.get('uri'), 'uri %r: exit %s\n%s' % (e.get('uri'), r.returncode, r.stderr))
    return theirs


def cached_deb(pkg):
    """The one cached .deb of `pkg` (scripts/fetch-rocm-samples), checked to be
    there; None when it is not."""
    debs = sorted(glob.glob(os.path.join(CACHE, pkg + '_*.deb')))
    return debs[0] if check('%s: a cached .deb in %s (scripts/fetch-rocm-samples)' % (pkg, CACHE), len(debs) == 1,
                            debs) else None


def unpacked_librocrand(root, folder):
    """librocrand1's .deb unpacked (dpkg-deb -x) in root/`folder`: (the tree,
    the path of its library, not a link), or None when the .deb is not cached."""
    deb = cached_deb('librocrand1')
    if deb is None:
        return None
    tree = os.path.join(root, folder)
    run(['dpkg-deb', '-x', deb, tree], check=True)
    return tree, next(p for p in glob.glob(os.path.join(tree, 'usr/lib/*/librocrand.so.*')) if not os.path.islink(p))


def check_package(root, pkg):
    deb = cached_deb(pkg)
    if deb is None:
        return
    tree = os.path.join(root, pkg)
    r = run(['dpkg-deb', '-x', deb, tree], text=True)
    if not check('%s: dpkg-deb -x unpacks it' % pkg, r.returncode == 0, r.stderr):
        return
    found = []
    for folder, _, names in sorted(os.walk(tree)):
        for n in sorted(names):
            p = os.path.join(folder, n)
            if os.path.islink(p) or '.so' not in n:
                continue
            sections = elf_sections(p)
            if sections and sections.get('.hip_fatbin', (0, 0))[1] > 0:
                found.append(os.path.relpath(p, tree))
    if not check('%s: holds a shared library with device code (.hip_fatbin)' % pkg, found):
        return
    per_so = {}
    for rel in found:
        per_so[rel] = check_shared_object(root, pkg, rel, os.path.join(tree, rel))

    # The package itself: the same entries, through data.tar.xz, no offsets.
    listing, problem = list_json(deb)
    total = sum(len(v) for v in per_so.values())
    if problem is None:
        check('%s: "files" names the .deb and its entry count (%d)' % (pkg, total),
              listing.get('files') == [{'file': deb, 'entries': total}], listing.get('files'))
    data = [m for m in run(['ar', 't', deb], text=True).stdout.split() if m.startswith('data.tar')]
    check('%s: its data member is data.tar.xz' % pkg, data == ['data.tar.xz'], data)
    for rel, theirs in per_so.items():
        member = None
        for e in (listing or {}).get('entries', []):
            p = e.get('path', [])
            if len(p) > 2 and p[:2] == [deb, 'data.tar.xz'] and os.path.normpath(p[2].lstrip('/')) == rel:
                member = p[2]
                break
        check('%s: the chain %s / data.tar.xz / %s' % (pkg, os.path.basename(deb), rel), member is not None,
              'paths listed: %s' % sorted({tuple(e.get('path', [])[:3]) for e in (listing or {}).get('entries', [])}))
        check_listing('%s (in the .deb)' % rel, deb, theirs, listing or {}, problem,
                      [deb, 'data.tar.xz', member or './' + rel])


def cases(root):
    r = run(['perl', '-MFile::Which', '-MURI::Encode', '-e', '1'], text=True)
    check('Perl has File::Which and URI::Encode (scripts/install-deps: libfile-which-perl liburi-encode-perl)',
          r.returncode == 0, r.stderr)
    for pkg in PACKAGES:
        check_package(root, pkg)


if __name__ == '__main__':
    sys.exit(harness.run_suite('roc-obj', cases,
                               needs=[ROC_OBJ_LS, ROC_OBJ_EXTRACT, 'perl', 'objdump', 'dd', 'dpkg-deb', 'ar']))
