#!/usr/bin/env python3
"""`offloadtool prune` of a real ROCm library (Debian's librocrand1) to one GPU,
proven by ROCm's own clients:
  * roc-obj-ls lists only the kept entries, each range byte-identical to the
    code object it was in the original, and `offloadtool list` agrees with it;
  * comgr's amd_comgr_lookup_code_object finds the kept code object in each
    pruned bundle for the kept GPU, and nothing for a dropped one;
  * the real HIP runtime (libamdhip64-5) dlopens the pruned library, which runs
    its fat-binary registration;
  * allocated sections keep their addresses, flags and (but .hip_fatbin and the
    relocations) contents; readelf and eu-elflint report nothing the input did not;
  * the file shrank by whole pages, by nearly all the dropped bytes;
  * --in-place writes the same bytes and keeps the mode.
The package comes from scripts/fetch-rocm-samples' cache (never committed).
"""
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'lib'))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import roc_obj_test as roc  # noqa: E402  (its readers of roc-obj-ls and list --json)
from harness import OT, check, run, write  # noqa: E402

COMGR_SELECT = os.environ.get('OT_COMGR_SELECT', '')
KEEP = 'gfx90a:xnack-'


def body(root):
    unpacked = roc.unpacked_librocrand(root, 'tree')
    if unpacked is None:
        return
    lib = unpacked[1]
    orig = os.path.join(root, 'librocrand.so.1')
    shutil.copyfile(lib, orig)
    pruned = os.path.join(root, 'pruned', 'librocrand.so.1')
    os.makedirs(os.path.dirname(pruned))

    before, problem = roc.roc_obj_ls(orig)
    check('roc-obj-ls reads the original', problem is None and before, problem)
    r = run([OT, 'prune', '--keep', KEEP, orig, '-o', pruned], text=True, timeout=600)
    if not check('prune --keep %s writes the pruned library' % KEEP, r.returncode == 0 and not r.stderr, r.stderr):
        return
    after, problem = roc.roc_obj_ls(pruned)
    check('roc-obj-ls reads the pruned library', problem is None and after, problem)

    # What stays: per bundle, the host entry and the kept GPU's code object.
    kept = [e for e in before if e['id'].startswith('host-') or e['id'].endswith('--' + KEEP)]
    check('roc-obj-ls lists exactly the kept entries, bundle by bundle (%d of %d)' % (len(kept), len(before)),
          [(e['bundle'], e['id']) for e in after] == [(e['bundle'], e['id']) for e in kept],
          'after: %s' % [(e['bundle'], e['id']) for e in after])
    same = all(roc.read_range(orig, a['offset'], a['size']) == roc.read_range(pruned, b['offset'], b['size'])
               for a, b in zip(kept, after))
    check('each kept code object is byte-identical to the original one', same and len(kept) == len(after))

    listing, problem = roc.list_json(pruned)
    ours = [(e['id'], e['offset'], e['size']) for e in (listing or {}).get('entries', [])]
    check('offloadtool list agrees with roc-obj-ls on the pruned library',
          problem is None and ours == [(e['id'], e['offset'], e['size']) for e in after], problem or ours)

    # comgr, as the HIP runtime uses it, on each pruned bundle.
    if check('the comgr harness is built (libamd-comgr-dev)', os.path.exists(COMGR_SELECT), COMGR_SELECT):
        for e in after:
            if e['id'].startswith('host-'):
                continue
            bundle = next(x for x in (listing or {}).get('entries', []) if x['offset'] == e['offset'])
            base = int(bundle['path'][-1].split(' at 0x')[1], 16)
            r = run([COMGR_SELECT, 'lookup', pruned, str(base), '0', 'amdgcn-amd-amdhsa--' + KEEP,
                     'amdgcn-amd-amdhsa--gfx906:xnack-'], text=True)
            lines = r.stdout.split('\n')
            check('comgr finds the kept code object of the bundle at 0x%x, and none for gfx906' % base,
                  r.returncode == 0 and lines[0] == 'amdgcn-amd-amdhsa--%s %d %d' % (KEEP, e['offset'] - base, e['size'])
                  and lines[1].endswith(' none'), r.stdout + r.stderr)

    # The real HIP runtime loads it (its constructors register the fat binaries).
    harness.dlopen_loader(root)
    for what, path in (('the original', orig), ('the pruned library', pruned)):
        r = run([os.path.join(root, 'loader'), path], text=True, timeout=120)
        check('libamdhip64 (HIP runtime) dlopens %s' % what, r.returncode == 0 and r.stdout == 'loaded\n',
              r.stdout + r.stderr)

    a, b = harness.elf64_sections(orig), harness.elf64_sections(pruned)
    key = ('name', 'type', 'flags', 'addr')
    moved = [x['name'] for x, y in zip(a, b) if x['flags'] & 2 and [x[k] for k in key] != [y[k] for k in key]]
    check('every allocated section keeps its address and flags', len(a) == len(b) and not moved, moved)
    changed = [x['name'] for x, y in zip(a, b)
               if x['flags'] & 2 and x['name'] not in ('.hip_fatbin', '.rela.dyn', '.dynsym', '.hipFatBinSegment')
               and (x['size'] != y['size']
                    or roc.read_range(orig, x['offset'], x['size']) != roc.read_range(pruned, y['offset'], y['size']))]
    check('host sections keep their bytes (code, data, unwind tables)', not changed, changed)
    said_orig, said_pruned = harness.elf_readers_say(orig), harness.elf_readers_say(pruned)
    check('readelf, llvm-readelf and eu-elflint report nothing new', said_orig == said_pruned,
          '%s\n---\n%s' % (said_orig, said_pruned))

    dropped = sum(e['size'] for e in before) - sum(e['size'] for e in after)
    saved = os.path.getsize(orig) - os.path.getsize(pruned)
    bundles = len({e['bundle'] for e in before})
    check('the file shrank by whole pages, by nearly the %d bytes dropped (saved %d)' % (dropped, saved),
          saved % 4096 == 0 and dropped - 3 * 4096 * bundles <= saved <= dropped + 4096 * (bundles + len(before)))

    in_place = os.path.join(root, 'in-place.so')
    shutil.copyfile(orig, in_place)
    os.chmod(in_place, 0o751)
    r = run([OT, 'prune', '--keep', KEEP, '--in-place', in_place], text=True, timeout=600)
    check('--in-place writes the same bytes as -o and keeps the mode',
          r.returncode == 0 and harness.read(in_place) == harness.read(pruned)
          and os.stat(in_place).st_mode & 0o777 == 0o751, r.stderr)


if __name__ == '__main__':
    sys.exit(harness.run_suite('prune-real', body, needs=[roc.ROC_OBJ_LS, 'perl', 'dpkg-deb', 'readelf', 'eu-elflint',
                                                          'cc']))
