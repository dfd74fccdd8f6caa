"""`offloadtool compat select` against ROCm's code object manager (comgr).

amd_comgr_lookup_code_object is how the HIP runtime picks the entry of an
offload bundle a GPU loads. tests/real/comgr_select.c ($OT_COMGR_SELECT, built
against Debian 12's libamd-comgr-dev, comgr 5.2) asks comgr one ISA per call
(comgr hands each code object to the first matching ISA of a list). For every
bundle below and every ISA tried, compat select must pick the same entry
(same offset and size) or, like comgr, none.

Bundles: each bundle of the .hip_fatbin of librocrand.so.1.1 from Debian's
librocrand1 (cached by scripts/fetch-rocm-samples in $OT_SAMPLES_CACHE), and
hand-made ones holding code objects llc 19 writes (so compat select, which
checks each code object's ELF header against its ID, accepts them): one
processor with xnack any / on / off, sramecc combinations, the older 'hip-'
kind, the same entries in the other order, and generic targets.

ISAs: every processor comgr knows (amd_comgr_get_isa_name), each bare and
with every setting of the features it supports (the features a processor
supports: `offloadtool compat canonical`); a real GPU names all of them, the
bare name is a query with the features left "any". Then processors comgr 5.2
does not know (gfx94x, gfx11xx, gfx12xx), in the same forms.

Where the two differ in a way we know and mean, the difference is recorded
(a passing check whose name says what differs and why, printed on every
run): DIFFERENCES below. Any other difference fails.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import OT, check, run  # noqa: E402
import roc_obj_test as roc  # noqa: E402  (the package cache)

COMGR_SELECT = os.environ.get('OT_COMGR_SELECT', '')
LLC = harness.llvm('llc')
ISA_PREFIX = 'amdgcn-amd-amdhsa--'
UNKNOWN_TO_COMGR = ['gfx940', 'gfx942', 'gfx1100', 'gfx1101', 'gfx1103', 'gfx1150', 'gfx1200', 'gfx1201']
GENERIC = re.compile(r'^gfx[0-9]+(-[0-9]+)*-generic$')
V4 = 'hipv4-amdgcn-amd-amdhsa--'
HOST = 'host-x86_64-unknown-linux-gnu'


def processor_of(target):
    return target.split(':')[0]


# The differences we know and mean: (name, predicate(query, ours, comgr) -> bool).
# ours / comgr: the selected entry (a dict with id, offset, size) or None.
def _generic_selected(q, ours, comgr):
    return comgr is None and ours is not None and GENERIC.match(processor_of(ours['id'].split('--', 1)[1]))


def _exact_over_first(q, ours, comgr):
    # Same processor, comgr's entry comes first in the bundle and leaves a
    # feature "any" that ours names exactly as the GPU has it.
    return (ours is not None and comgr is not None and comgr['offset'] < ours['offset']
            and processor_of(ours['id'].split('--', 1)[1]) == processor_of(comgr['id'].split('--', 1)[1])
            and len(ours['id'].split(':')) > len(comgr['id'].split(':')))


def _unknown_processor_exact_only(q, ours, comgr):
    # comgr 5.2 has no feature table for a processor it does not know: it then
    # loads an entry only when its target ID is spelled exactly as the GPU's.
    return (comgr is None and ours is not None and processor_of(q) in UNKNOWN_TO_COMGR
            and ours['id'].split('--', 1)[1] != q)


DIFFERENCES = [
    ('generic target: comgr 5.2 does not know generic targets (code object v6, LLVM 19) and loads nothing; '
     'compat select loads the generic entry that covers the processor', _generic_selected),
    ('feature order: comgr takes the first compatible entry in file order (a feature left "any"); compat select '
     'prefers the entry naming the GPU\'s feature settings exactly, wherever it lies', _exact_over_first),
    ('processor unknown to comgr 5.2: comgr loads an entry only when its target ID is the GPU\'s, spelled exactly '
     '(a feature the entry leaves "any" does not match one the GPU names); compat select applies the feature rules',
     _unknown_processor_exact_only),
]


def supported_forms(processors):
    """{processor: [target IDs a GPU of it can name]}: bare, and every setting of
    the features it supports (by offloadtool compat canonical)."""
    probes = [p + f for p in processors for f in (':xnack+', ':sramecc+')]
    r = run([OT, 'compat', 'canonical', '--json'] + probes, text=True)
    ok = {x['input'] for x in json.loads(r.stdout)['results'] if x['canonical']}
    forms = {}
    for p in processors:
        feats = [f for f in ('sramecc', 'xnack') if p + ':' + f + '+' in ok]
        variants = [p]
        for f in feats:
            variants += [p + ':' + f + s for s in '+-']
        if len(feats) == 2:
            variants += [p + ':sramecc' + a + ':xnack' + b for a in '+-' for b in '+-']
        forms[p] = variants
    return forms


def code_object(folder, target):
    """An AMDGPU code object llc 19 writes for a target ID (features: -mattr)."""
    proc, *feats = target.split(':')
    mattr = ','.join(('+' if f.endswith('+') else '-') + f[:-1] for f in feats)
    name = target.replace(':', '_') + '.co'
    version = '6' if GENERIC.match(proc) else '5'
    run([LLC, '-mtriple=amdgcn-amd-amdhsa', '-mcpu=' + proc, '-mattr=' + mattr,
         '--amdhsa-code-object-version=' + version, '-filetype=obj', 'e.ll', '-o', name], cwd=folder.dir, check=True)
    return folder.read(name)


def hand_made(root):
    """{name: bundle bytes} of the hand-made bundles."""
    f = harness.Folder(root)
    f.put('e.ll', b'define void @f() { ret void }\n')
    cache = {}

    def co(t):
        if t not in cache:
            cache[t] = code_object(f, t)
        return cache[t]
    bundles = {
        'gfx90a-any-first': [(HOST, b''), (V4 + 'gfx90a', co('gfx90a')), (V4 + 'gfx90a:xnack+', co('gfx90a:xnack+')),
                             (V4 + 'gfx90a:xnack-', co('gfx90a:xnack-'))],
        'gfx90a-exact-first': [(HOST, b''), (V4 + 'gfx90a:xnack+', co('gfx90a:xnack+')), (V4 + 'gfx90a', co('gfx90a'))],
        'sramecc': [(HOST, b''), (V4 + 'gfx906:sramecc+', co('gfx906:sramecc+')),
                    (V4 + 'gfx906:sramecc-:xnack-', co('gfx906:sramecc-:xnack-')),
                    (V4 + 'gfx908:sramecc+:xnack+', co('gfx908:sramecc+:xnack+')), (V4 + 'gfx1030', co('gfx1030')),
                    (V4 + 'gfx803', co('gfx803'))],
        'hip-kind': [(HOST, b''), ('hip-amdgcn-amd-amdhsa--gfx906', co('gfx906')),
                     ('hip-amdgcn-amd-amdhsa--gfx90a:xnack-', co('gfx90a:xnack-'))],
        'generic': [(HOST, b''), (V4 + 'gfx9-generic', co('gfx9-generic')),
                    (V4 + 'gfx10-3-generic', co('gfx10-3-generic')), (V4 + 'gfx11-generic', co('gfx11-generic')),
                    (V4 + 'gfx1100', co('gfx1100')), (V4 + 'gfx942:xnack-', co('gfx942:xnack-'))],
    }
    return {name: harness.binary_bundle(entries) for name, entries in bundles.items()}


def librocrand_bundles(root):
    """[(name, path, bundle offset, bundle size)] of each bundle of
    librocrand.so.1.1's .hip_fatbin (found by compat select's listing)."""
    unpacked = roc.unpacked_librocrand(root, 'librocrand1')
    if unpacked is None:
        return []
    so = unpacked[1]
    r = run([OT, 'compat', 'select', '--json', so, '--target', 'gfx906:sramecc-:xnack-'], text=True)
    got = json.loads(r.stdout) if r.stdout else {}
    spans = {}
    for e in got.get('entries', []):
        m = re.search(r'bundle (?:\d+ )?at 0x([0-9a-f]+), entry', e['location'])
        start = int(m.group(1), 16)
        spans[start] = max(spans.get(start, start), e['offset'] + e['size'])
    check('librocrand.so.1.1: compat select lists its .hip_fatbin bundles', spans, r.stderr)
    return [('librocrand.so.1.1 bundle at 0x%x' % s, so, s, end - s) for s, end in sorted(spans.items())]


def ours_for(path, base, target):
    """compat select's entry for target: {id, offset (from `base`), size}, None
    for none, or an error text."""
    r = run([OT, 'compat', 'select', '--json', path, '--target', target], text=True)
    if r.returncode not in (0, 1):
        return 'compat select exit %s: %s' % (r.returncode, r.stderr)
    got = json.loads(r.stdout)
    if got['selected'] is None:
        return None
    e = [x for x in got['entries'] if x['index'] == got['selected'] and x['verdict'] == 'selected'][0]
    return {'id': e['id'], 'offset': e['offset'] - base, 'size': e['size']}


def comgr_for(path, base, size, isas, entries_at):
    """comgr's choice per ISA: {isa: entry dict | None | error text}."""
    r = run([COMGR_SELECT, 'lookup', path, str(base), str(size)] + isas, text=True)
    if r.returncode != 0:
        return {isa: 'comgr_select exit %s: %s' % (r.returncode, r.stderr) for isa in isas}
    out = {}
    for line in r.stdout.splitlines():
        isa, *rest = line.split(' ')
        if rest == ['none']:
            out[isa] = None
        elif len(rest) == 2 and rest[0].isdigit():
            off, sz = int(rest[0]), int(rest[1])
            out[isa] = {'id': entries_at.get((off, sz), '(no entry at offset %d size %d)' % (off, sz)),
                        'offset': off, 'size': sz}
        else:
            out[isa] = 'comgr: ' + ' '.join(rest)
    return out


def entries_of(path, base):
    """{(offset from base, size): id} of the entries compat select lists."""
    r = run([OT, 'compat', 'select', '--json', path, '--target', 'gfx906'], text=True)
    return {(e['offset'] - base, e['size']): e['id'] for e in json.loads(r.stdout)['entries']}


def describe(x):
    return 'none' if x is None else x if isinstance(x, str) else '%s (offset %d, size %d)' % (x['id'], x['offset'], x['size'])


def cases(root):
    r = run([COMGR_SELECT, 'isas'], text=True)
    isas = r.stdout.split()
    if not check('comgr lists the ISAs it knows', r.returncode == 0 and len(isas) >= 30, (isas, r.stderr)):
        return
    check('every comgr ISA name is amdgcn-amd-amdhsa--<processor>', all(i.startswith(ISA_PREFIX) for i in isas), isas)
    known = [i[len(ISA_PREFIX):] for i in isas]
    unknown = [p for p in UNKNOWN_TO_COMGR if p not in known]
    forms = supported_forms(known + unknown)
    check('compat canonical knows the features of every comgr processor', all(forms.values()), forms)

    bundles = librocrand_bundles(root)
    folder = harness.Folder(root)
    for name, data in hand_made(root).items():
        bundles.append((name, folder.put(name + '.hipfb', data), 0, len(data)))

    notes = []
    for name, path, base, size in bundles:
        entries_at = entries_of(path, base)
        for group, procs in (('known to comgr', known), ('unknown to comgr 5.2', unknown)):
            targets = [t for p in procs for t in forms[p]]
            theirs = comgr_for(path, base, size, [ISA_PREFIX + t for t in targets], entries_at)
            # compat select is given the ISA name as comgr (and the HIP runtime) write it.
            jobs = [(t, (lambda t=t: ours_for(path, base, ISA_PREFIX + t))) for t in targets]
            results = dict(zip(targets, harness_map(jobs)))
            for t in targets:
                ours, comgr = results[t], theirs.get(ISA_PREFIX + t, 'comgr printed nothing')
                label = '%s, %s (%s): ' % (name, t, group)
                if isinstance(ours, str) or isinstance(comgr, str):
                    check(label + 'both answer', False, 'ours: %s\ncomgr: %s' % (describe(ours), describe(comgr)))
                    continue
                if ours == comgr:
                    check(label + 'the same entry as comgr: ' + describe(ours), True)
                    continue
                why = [d for d, pred in DIFFERENCES if pred(t, ours, comgr)]
                detail = 'ours %s, comgr %s' % (describe(ours), describe(comgr))
                if why:
                    notes.append(label + detail + ': ' + why[0])
                    check(label + 'recorded difference: ' + detail, True)
                else:
                    check(label + 'the same entry as comgr', False, detail)
    for n in notes:
        print('NOTE', n)
    print('%d recorded differences (DIFFERENCES in %s)' % (len(notes), os.path.basename(__file__)))


def harness_map(jobs):
    """The results of (name, fn) jobs, two at a time, in order."""
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return list(pool.map(lambda j: j[1](), jobs))


if __name__ == '__main__':
    sys.exit(harness.run_suite('comgr-select', cases, needs=[COMGR_SELECT or 'OT_COMGR_SELECT', LLC, 'dpkg-deb']))
