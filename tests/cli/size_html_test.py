"""size --html: the page of real installs, looked at in a real browser.

Debian's chromium (scripts/install-deps), headless, loads the page of two
installs the test caches hold -- CUDA 11.8's libraries (scripts/fetch-cuda-samples)
and rocBLAS 6.4 with its Tensile files (scripts/fetch-rocblas-samples) -- and
  * --dump-dom: the page's script ran to its end (body data-state="done", no
    data-error), every treemap rect carries its path, target, bytes and share,
    and the legend holds a colour per GPU;
  * --screenshot (PNG read with Debian's python3-pil): the treemap is drawn (not
    blank), and each GPU's colour covers about its share of the bytes: within
    TOLERANCE (10% of it + 0.5 percentage point) for every GPU of at least 2%,
    and present for every GPU of at least 0.5%;
  * the data embedded in the page is the object `size --json --per-file
    --per-bundle` prints,
    and its figures are the references': per target, the bytes of each CUDA
    library's fatbin entries as the fatbin headers say (tests/real/cuda_test.py
    reads them; cuobjdump agrees there), the sizes of librocblas.so's bundle
    entries as ROCm's roc-obj-ls lists them, each Tensile code object and per-GPU
    file with the GPU its name carries and its size, the trees' bytes as os.walk
    sums them;
  * what the page says `prune --keep T` drops (#keep=T): per GPU, the entries,
    bytes and per-GPU files `prune --keep T --dry-run` reports dropped; for
    rocBLAS (whole files go) within 1% of the install of what the files lose.
Also: the page bytes are the same at every run and on standard output; a
file name holding "</script><!--<script>" is carried safely; a failed input
leaves no page. Nothing is skipped: no chromium, no cache, no pass.
"""
import html.parser
import json
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, os.path.join(HERE, '..', 'real'))
import harness  # noqa: E402
from harness import OT, check, run  # noqa: E402
import cuda_test  # noqa: E402  (fatbin_headers: the fatbin headers, read in Python)
import roc_obj_test  # noqa: E402  (roc_obj_ls: ROCm's roc-obj-ls)
import rocblas_test  # noqa: E402  (gpu_of: the GPU a Tensile file name carries)

try:
    from PIL import Image  # Debian's python3-pil (scripts/install-deps)
except ImportError:  # a Python of another prefix (pyenv) of the same version
    sys.path.append('/usr/lib/python3/dist-packages')
    from PIL import Image  # noqa: E402

CHROMIUM = shutil.which('chromium') or 'chromium'
CUDA = os.path.join(cuda_test.CACHE, 'unpacked')
CUDA_LIBS = ['libcublas11', 'libcufft10', 'libcurand10', 'libcusparse11']
ROCBLAS = os.path.join(rocblas_test.CACHE, 'unpacked', 'librocblas4', 'usr')
WIDTH, HEIGHT = 1200, 900
# A GPU's share of the treemap's coloured pixels against its share of the bytes:
# within 10% of it plus half a percentage point (frames, labels and the edges of
# small rectangles take pixels from the colours; measured: within 0.3 points).
TOLERANCE = (0.10, 0.005)


class Dom(html.parser.HTMLParser):
    """The elements of --dump-dom's output: (tag, attributes) in order."""

    def __init__(self, text):
        super().__init__()
        self.elements = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def first(self, tag, **want):
        return next((a for t, a in self.elements if t == tag and all(a.get(k) == v for k, v in want.items())), {})


def browser(root, page, hash_=''):
    """chromium's DOM after the scripts ran, and its screenshot (a PIL image)."""
    url = 'file://' + os.path.abspath(page) + hash_
    common = [CHROMIUM, '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
              '--force-device-scale-factor=1', '--force-color-profile=srgb', '--user-data-dir=' + os.path.join(root, 'chromium'),
              '--window-size=%d,%d' % (WIDTH, HEIGHT)]
    r = run(common + ['--dump-dom', url], text=True, timeout=300)
    dom = Dom(r.stdout) if r.returncode == 0 else None
    shot = os.path.join(root, os.path.basename(page) + '.png')
    r2 = run(common + ['--screenshot=' + shot, url], text=True, timeout=300)
    image = Image.open(shot).convert('RGB') if r2.returncode == 0 and os.path.exists(shot) else None
    check('%s%s: chromium loads it and takes the screenshot' % (os.path.basename(page), hash_),
          dom is not None and image is not None, r.stderr[-2000:] + r2.stderr[-2000:])
    return dom, image, shot


def embedded(page):
    text = harness.read(page).decode('utf-8')
    m = re.search(r'<script type="application/json" id="size-data">(.*?)</script>', text, re.S)
    return json.loads(m.group(1)) if m else None


def gpu_of_target(t):
    """The GPU a row's target is for, as the page colours it."""
    return t if t.startswith('host') or '--' not in t else t.rsplit('--', 1)[1]


def byte_shares(data):
    """Bytes per colour the page draws: per GPU (device code and per-GPU files),
    'host' (the rest of the files with device code), 'other' (files without)."""
    out = {}

    def add(k, n):
        out[k] = out.get(k, 0) + n
    for f in data['files']:
        device = 0
        for r in f['targets']:
            add('host' if r['target'].startswith('host') else gpu_of_target(r['target']), r['file_bytes'])
            device += r['file_bytes']
        add('host', max(0, f['bytes'] - device))
    for t in data.get('trees', []):
        for p in t['per_gpu']:
            add(p['target'], p['bytes'])
        for o in t['other']:
            add('other', o['bytes'])
    return {k: v for k, v in out.items() if v}


def check_page(root, what, inputs, cwd):
    """Writes the page of `inputs`, checks it in the browser; its data."""
    page = os.path.join(root, what + '.html')
    r = run([OT, 'size', '--html', '-o', page] + inputs, cwd=cwd, text=True, timeout=600)
    if not check('%s: size --html -o page.html: exit 0, nothing said' % what, r.returncode == 0 and not r.stderr, r.stderr):
        return None
    j = run([OT, 'size', '--json', '--per-file', '--per-bundle'] + inputs, cwd=cwd, text=True, timeout=600)
    data = embedded(page)
    check('%s: the data in the page is what size --json --per-file --per-bundle prints' % what,
          j.returncode == 0 and data is not None and data == json.loads(j.stdout), j.stderr)
    if data is None:
        return None
    r = run([OT, 'size', '--html'] + inputs, cwd=cwd, timeout=600)
    again = os.path.join(root, what + '-again.html')
    run([OT, 'size', '--html', '-o', again] + inputs, cwd=cwd, timeout=600)
    check('%s: the same page bytes on standard output and at a second run' % what,
          r.returncode == 0 and r.stdout == harness.read(page) == harness.read(again))
    text = harness.read(page).decode('utf-8')
    check('%s: self-contained: no URL the browser would fetch' % what,
          not re.search(r'\b(?:src|href)\s*=|@import|url\(|https?://(?!www\.w3\.org/2000/svg")', text),
          re.findall(r'.{30}(?:src|href)\s*=.{30}|https?://\S+', text)[:5])

    dom, image, shot = browser(root, page)
    if dom is None or image is None:
        return data
    body = dom.first('body')
    check('%s: the script ran to its end (data-state="done", no error)' % what,
          body.get('data-state') == 'done' and 'data-error' not in body, body)
    rects = [a for t, a in dom.elements if t == 'rect' and 'data-path' in a]
    bad = [a for a in rects if not (a.get('data-bytes', '').isdigit() and 'data-target' in a and 'data-what' in a
                                    and re.fullmatch(r'[01]\.\d{4}', a.get('data-share', '')))]
    shares = byte_shares(data)
    total = sum(shares.values())
    drawn = sum(int(a['data-bytes']) for a in rects if a.get('data-bytes', '').isdigit())
    check('%s: %d treemap rects, each with data-path, data-target, data-what, data-bytes, data-share' % (what, len(rects)),
          len(rects) > 10 and not bad, bad[:3])
    check('%s: the rects hold the bytes shown (%d), all but what is under half a pixel (0.5%%)' % (what, total),
          body.get('data-total') == str(total) and total * 0.995 <= drawn <= total, (body.get('data-total'), drawn))
    legend = {a['data-target']: a['data-color'] for t, a in dom.elements if t == 'li' and 'data-color' in a}
    colours = {'host': '#9a9a9a', 'other': '#d3d3d3'}
    want_legend = {k for k in shares if k not in ('host', 'other')}
    check('%s: the legend has a colour per GPU (%d), distinct' % (what, len(want_legend)),
          want_legend <= set(legend) and len(set(legend[k] for k in want_legend)) == len(want_legend),
          (sorted(want_legend - set(legend)), legend))
    colours.update({k: legend[k] for k in want_legend if k in legend})

    # The screenshot: the treemap's box, as the page measured it.
    box = [int(v) for v in dom.first('svg').get('data-box', '0,0,0,0').split(',')]
    x, y, w, h = box
    check('%s: the treemap lies in the screenshot (%s)' % (what, box),
          w >= 800 and h >= 500 and x + w <= image.width and y + h <= image.height, image.size)
    area = image.crop((x, y, x + w, y + h))
    counts = {'#%02x%02x%02x' % c: n for n, c in area.getcolors(w * h)}
    white = counts.get('#ffffff', 0)
    check('%s: the treemap is drawn: at most 5%% of its box white (%d of %d pixels)' % (what, white, w * h),
          white <= 0.05 * w * h)
    coloured = sum(counts.get(colours[k], 0) for k in shares)
    rows, wrong, missing = [], [], []
    for k in sorted(shares, key=lambda k: -shares[k]):
        want = shares[k] / total
        got = counts.get(colours[k], 0) / coloured if coloured else 0
        rows.append('%-16s %s bytes %6.2f%%  pixels %6.2f%%' % (k, colours[k], 100 * want, 100 * got))
        if want >= 0.02 and abs(got - want) > TOLERANCE[0] * want + TOLERANCE[1]:
            wrong.append(k)
        if want >= 0.005 and not counts.get(colours[k]):
            missing.append(k)
    print('%s: %s\n    %s' % (what, shot, '\n    '.join(rows)))
    check('%s: each GPU of 2%% or more covers its share of the bytes, within 10%% + 0.5 point' % what, not wrong,
          '%s\n%s' % (wrong, '\n'.join(rows)))
    check('%s: every colour of 0.5%% or more is in the treemap' % what, not missing, missing)
    return data


def check_saving(root, what, inputs, cwd, keep, data, shrink):
    """The page's #keep=T figures against prune --keep T --dry-run's report:
    per GPU the entries and bytes dropped (exactly), and, with `shrink`, what
    the files lose on disk (within 1% of the install: linked files shrink by
    whole pages; CUDA's .nv_fatbin is pruned in place)."""
    page = os.path.join(root, what + '.html')
    dom, _, _ = browser(root, page, '#keep=' + keep)
    body = dom.first('body') if dom else {}
    saved, want, errors = 0, {}, ''
    for i in inputs:  # prune takes one input at a time
        r = run([OT, 'prune', '--keep', keep, '--dry-run', '--json', i], cwd=cwd, text=True, timeout=600)
        report = json.loads(r.stdout) if r.returncode == 0 else {}
        saved += report.get('saved', 0)
        errors += r.stderr
        for d in report.get('dropped', []):
            w = want.setdefault(d['target'], [0, 0, 0, 0])
            for n, k in enumerate(('entries', 'bytes', 'per_gpu_files', 'per_gpu_bytes')):
                w[n] += d[k]
    got = json.loads(body.get('data-dropped', '{}'))
    check('%s: #keep=%s: the entries, bytes and per-GPU files the page drops per GPU are prune --dry-run\'s (%d GPUs)'
          % (what, keep, len(want)), body.get('data-keep') == keep and not errors and len(want) >= 5 and got == want,
          '%s\npage  %s\nprune %s' % (errors, sorted(got.items()), sorted(want.items())))
    page_says = int(body.get('data-saving', -1))
    total = int(body.get('data-total', 0))
    print('%s: prune --keep %s saves %d bytes on disk; the page says %d of %d drop' % (what, keep, saved, page_says, total))
    if shrink:
        check('%s: what the page drops for #keep=%s is within 1%% of the install (%d bytes) of what prune saves'
              % (what, keep, total), abs(page_says - saved) <= 0.01 * total, (page_says, saved))


def cuda_install(root):
    if not check('CUDA 11.8 libraries unpacked in %s (scripts/fetch-cuda-samples)' % CUDA,
                 all(os.path.isdir(os.path.join(CUDA, n)) for n in CUDA_LIBS)):
        return
    data = check_page(root, 'cuda', CUDA_LIBS, CUDA)
    if not data:
        return
    # The reference: each library's fatbin headers, read in Python.
    bad, n = [], 0
    for f in data['files']:
        want = {}
        for e in cuda_test.fatbin_headers(os.path.join(CUDA, f['file'])):
            want[e['target']] = want.get(e['target'], 0) + e['size']
        got = {r['target']: r['file_bytes'] for r in f['targets']}
        n += len(want)
        if got != want or f['bytes'] != os.path.getsize(os.path.join(CUDA, f['file'])):
            bad.append((f['file'], got, want))
    check('CUDA: per file and target, the bytes are the fatbin headers\' (%d files, %d rows)' % (len(data['files']), n),
          len(data['files']) >= 4 and not bad, bad[:2])
    check_trees('CUDA', data, CUDA)
    check_saving(root, 'cuda', CUDA_LIBS, CUDA, 'sm_86', data, False)


def check_trees(what, data, cwd):
    """Each tree's files, per-GPU files and other files add up to what os.walk finds."""
    for t in data['trees']:
        top = os.path.join(cwd, t['tree'])
        seen, size = set(), 0
        for d, _, fs in os.walk(top):
            for name in fs:
                st = os.lstat(os.path.join(d, name))
                if os.path.islink(os.path.join(d, name)) or (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
                size += st.st_size
        mine = [f for f in data['files'] if f['file'].startswith(t['tree'] + '/')]
        parts = sum(f['bytes'] for f in mine) + sum(p['bytes'] for p in t['per_gpu']) + sum(o['bytes'] for o in t['other'])
        files = len(mine) + len(t['per_gpu']) + sum(o['files'] for o in t['other'])
        check('%s %s: %d files, %d bytes as os.walk finds them; files, per_gpu and other add up to them'
              % (what, t['tree'], len(seen), size), (t['files'], t['bytes']) == (len(seen), size) == (files, parts),
              ((t['files'], t['bytes']), (files, parts)))


def rocblas_install(root):
    if not check('rocBLAS 6.4 unpacked in %s (scripts/fetch-rocblas-samples)' % ROCBLAS, os.path.isdir(ROCBLAS)):
        return
    cwd = os.path.dirname(ROCBLAS)
    data = check_page(root, 'rocblas', ['usr'], cwd)
    if not data:
        return
    check_trees('rocBLAS', data, cwd)
    files = {f['file']: f for f in data['files']}
    # librocblas.so: roc-obj-ls's entries, their sizes summed per entry ID.
    so = 'usr/lib/x86_64-linux-gnu/librocblas.so.4.4'
    entries, problem = roc_obj_test.roc_obj_ls(os.path.join(cwd, so))
    want = {}
    for e in entries:
        want[e['id']] = want.get(e['id'], 0) + e['size']
    got = {r['target']: r['file_bytes'] for r in files.get(so, {}).get('targets', [])}
    check('rocBLAS: librocblas.so per target is roc-obj-ls\'s bytes per entry ID (%d IDs)' % len(want),
          problem is None and len(want) >= 10 and got == want, problem or (got, want))
    # Tensile's code objects and per-GPU files: the GPU their names carry, their sizes.
    library = 'usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library'
    bad, n = [], 0
    per_gpu = {p['file']: p for t in data['trees'] for p in t['per_gpu']}
    for name in sorted(os.listdir(os.path.join(cwd, library))):
        gpu, path = rocblas_test.gpu_of(name), library + '/' + name
        size = os.path.getsize(os.path.join(cwd, path))
        if gpu is None:
            continue
        n += 1
        if name.endswith('.dat'):
            ok = path in per_gpu and (per_gpu[path]['target'], per_gpu[path]['bytes']) == (gpu, size)
        else:
            rows = files.get(path, {}).get('targets', [])
            ok = files.get(path, {}).get('bytes') == size and [r['target'] for r in rows] == [gpu] \
                and rows[0]['file_bytes'] == size
        if not ok:
            bad.append((name, files.get(path), per_gpu.get(path)))
    check('rocBLAS: each of %d Tensile files is its named GPU\'s, with its size' % n, n >= 200 and not bad, bad[:3])
    check_saving(root, 'rocblas', ['usr'], cwd, 'gfx1100', data, True)


def small_cases(root):
    """A file name that would end the script element, failures, a single file."""
    inst = os.path.join(root, 'inst')
    hostile = 'x</script><!--<script>.co'  # a folder "x<" and a file "script><!--<script>.co"
    os.makedirs(os.path.join(inst, 'x<'))
    shutil.copy(os.path.join(harness.DATA, 'contents', 'gfx90a.co'), os.path.join(inst, hostile))
    shutil.copy(os.path.join(harness.DATA, 'contents', 'gfx906.co'), os.path.join(inst, 'gfx906.co'))
    harness.write(os.path.join(inst, 'README'), b'no device code\n')
    r = run([OT, 'size', '--html', '-o', 'small.html', 'inst'], cwd=root, text=True)
    text = harness.read(os.path.join(root, 'small.html')).decode() if r.returncode == 0 else ''
    check('a file named %r: the page holds no "</script" nor "<!--" but its own' % hostile,
          r.returncode == 0 and text.count('</script') == 2 and text.count('<!--') == 1, r.stderr)
    data = embedded(os.path.join(root, 'small.html'))
    names = [f['file'] for f in (data or {}).get('files', [])]
    check('its data keeps the name', names == ['inst/gfx906.co', 'inst/' + hostile], names)
    dom, _, _ = browser(root, os.path.join(root, 'small.html'))
    if dom:
        paths = sorted({a['data-path'] for t, a in dom.elements if t == 'rect' and 'data-path' in a})
        check('the script ran; the rects name both files and the other file\'s folder',
              dom.first('body').get('data-state') == 'done'
              and paths == ['inst', 'inst/gfx906.co', 'inst/' + hostile], (dom.first('body'), paths))

    # The directory named with a trailing slash: its files' paths are "inst/...", its top folder "inst/".
    r = run([OT, 'size', '--html', '-o', 'slash.html', 'inst/'], cwd=root, text=True)
    dom, _, _ = browser(root, os.path.join(root, 'slash.html')) if r.returncode == 0 else (None, None, None)
    if dom:
        paths = sorted({a['data-path'] for t, a in dom.elements if t == 'rect' and 'data-path' in a})
        texts = [a for t, a in dom.elements if t == 'text']
        check('size --html inst/: the script ran; the rects name both files and the other file\'s folder',
              dom.first('body').get('data-state') == 'done'
              and paths == ['inst/', 'inst/gfx906.co', 'inst/' + hostile], (dom.first('body'), paths, len(texts)))

    # Files given alone, and standard input (its size unknown: bytes null, no host part).
    co = [os.path.join('inst', 'gfx906.co'), os.path.join('inst', hostile)]
    r = run([OT, 'size', '--html', '-o', 'files.html'] + co, cwd=root, text=True)
    r2 = run([OT, 'size', '--html', '-o', 'stdin.html', '-'], cwd=root, stdin=harness.read(os.path.join(root, co[0])))
    for page, want in (('files.html', [(c, os.path.getsize(os.path.join(root, c))) for c in co]),
                       ('stdin.html', [('-', os.path.getsize(os.path.join(root, co[0])))])):
        dom = browser(root, os.path.join(root, page))[0] if r.returncode == r2.returncode == 0 else None
        got = sorted((a['data-path'], int(a['data-bytes'])) for t, a in (dom.elements if dom else [])
                     if t == 'rect' and 'data-path' in a)
        check('size --html %s: the script ran; a rect per file with its size' % page,
              dom is not None and dom.first('body').get('data-state') == 'done' and got == sorted(want),
              (r.stderr, r2.stderr, got, want))
    check('standard input: its bytes are null', [f['bytes'] for f in embedded(os.path.join(root, 'stdin.html'))['files']]
          == [None])

    r = run([OT, 'size', '--html', '-o', 'fail.html', 'inst', 'missing.co'], cwd=root, text=True)
    left = [n for n in os.listdir(root) if 'fail' in n]
    check('an input that fails: exit 1, one line on stderr, no page and no temp file',
          r.returncode == 1 and r.stderr.count('\n') == 1 and 'missing.co' in r.stderr and not left, (r.stderr, left))
    r = run([OT, 'size', '--html', '--json', 'inst'], cwd=root, text=True)
    check('--html with --json: a usage error', r.returncode != 0 and not r.stdout and '--json' in r.stderr, r.stderr)


def cases(root):
    small_cases(root)
    cuda_install(root)
    rocblas_install(root)


if __name__ == '__main__':
    sys.exit(harness.run_suite('size-html', cases, needs=[CHROMIUM]))
