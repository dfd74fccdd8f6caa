"""Windows PE images (DLLs, EXEs): list, size, extract, compat and prune.

The images are made here with Debian's LLVM (of the release under test): HIP
objects by clang for x86_64-pc-windows-msvc (and aarch64), CUDA registration
by LLVM's own llvm-offload-wrapper (release 22) around tests/data/nvidia's
fatbin, linked by lld-link into DLLs and EXEs with a stand-in runtime (no
ROCm or CUDA for Windows is installed). The references:
  * device code: the section's bytes as llvm-objcopy --dump-section writes
    them, read by LLVM's clang-offload-bundler (-list, -unbundle) -- for a
    pruned image at the place each registration record's pointer names;
  * the image: llvm-readobj --sections --file-headers --coff-basereloc and
    llvm-objdump -p read it without a warning; every section keeps its
    VirtualAddress and VirtualSize, SizeOfImage and .reloc stay as they were;
  * CheckSum: lld-link /release sets it, and the test's spec implementation
    (checked first on lld-link's own images) agrees with the pruned image's;
  * hostile images: one error line naming the file, exit 1, no output.
"""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import harness  # noqa: E402
from harness import OT, check  # noqa: E402

LLD_LINK = harness.llvm('lld-link')
READOBJ = harness.llvm('llvm-readobj')
OBJCOPY = harness.llvm('llvm-objcopy')
OBJDUMP = harness.llvm('llvm-objdump')
ARCHS = ['gfx906', 'gfx90a', 'gfx1030']
# HIP declarations without ROCm. hipLaunchKernel takes its dim3 arguments by
# pointer here: by value, clang 19 and 22 fail to compile the host-side launch
# function clang emits for each kernel (its __device_stub__) for the MSVC ABI
# ("Cannot emit physreg copy instruction"). These tests never launch a kernel.
PRELUDE = b'''#define __global__ __attribute__((global))
struct dim3 { unsigned x, y, z; };
typedef struct ihipStream_t *hipStream_t;
extern "C" int hipLaunchKernel(const void *f, dim3 *g, dim3 *b, void **args, unsigned long long shm, hipStream_t s);
'''
RUNTIME = b'''
void **__hipRegisterFatBinary(void *w) { static void *h; h = w; return &h; }
void __hipRegisterFunction(void **h, const void *f, char *d, const char *n, int t, void *a, void *b, void *c, void *e,
                           int *s) {}
void __hipUnregisterFatBinary(void **h) {}
int __hipPopCallConfiguration(void *g, void *b, unsigned long long *s, void *st) { return 0; }
int hipLaunchKernel(const void *f, void *g, void *b, void **a, unsigned long long s, void *st) { return 0; }
void **__cudaRegisterFatBinary(void *w) { static void *h; h = w; return &h; }
void __cudaRegisterFatBinaryEnd(void **h) {}
void __cudaRegisterFunction(void **h, const void *f, char *d, const char *n, int t, void *a, void *b, void *c,
                            void *e, int *s) {}
void __cudaRegisterVar(void **h, char *v, char *d, const char *n, int e, unsigned long long s, int c, int g) {}
void __cudaRegisterManagedVar(void **h, void **v, char *d, const char *n, unsigned long long s, unsigned a) {}
void __cudaUnregisterFatBinary(void **h) {}
int atexit(void (*f)(void)) { return 0; }
int entry(void) { return 0; }
/* The offload entry table's bounds, which the CUDA wrapper's registration walks (here: none). */
char __start_llvm_offload_entries[1], __stop_llvm_offload_entries[1];
'''


def readobj(path, *flags):
    r = harness.run([READOBJ] + list(flags) + [path], text=True)
    return r.returncode, r.stdout, r.stderr


def sections(path):
    """[{Name, VirtualSize, VirtualAddress, RawDataSize, PointerToRawData}] from llvm-readobj --sections."""
    rc, out, err = readobj(path, '--sections')
    if rc != 0:
        raise RuntimeError(err)
    secs, cur = [], None
    for line in out.splitlines():
        t = line.strip()
        if t.startswith('Name:'):
            cur = {'Name': t.split()[1]}
            secs.append(cur)
        elif cur is not None and ':' in t:
            k, v = t.split(':', 1)
            if k in ('VirtualSize', 'VirtualAddress', 'RawDataSize', 'PointerToRawData'):
                cur[k] = int(v.strip(), 0)
    return secs


def file_header(path, field):
    rc, out, _ = readobj(path, '--file-headers')
    for line in out.splitlines():
        if line.strip().startswith(field + ':'):
            return int(line.split(':', 1)[1].strip(), 0)
    raise RuntimeError(f'{field} not in llvm-readobj --file-headers {path}')


def dump_section(path, name, out):
    harness.run([OBJCOPY, f'--dump-section={name}={out}', path, out + '.copy'], check=True)
    return harness.read(out)


# clang 23's bundles (made by clang-linker-wrapper) say hip-, older ones hipv4-.
HIPK = 'hip' if harness.RELEASE == '23' else 'hipv4'


def llvm_list(path):
    """The IDs LLVM's bundler lists for the bundle at the start of `path`. 19
    and 22 read that bundle only; 23 reads the bundles after it too and prints,
    after each, every ID found so far: its first lines, as many as the first
    bundle's entry count (at offset 24), are the first bundle's."""
    r = harness.run([harness.LLVM_BUNDLER, '-list', '-type=bc', f'-input={path}'], text=True)
    if r.returncode != 0:
        return ['<error: %s>' % r.stderr.strip()]
    ids = r.stdout.split()
    if harness.RELEASE == '23':
        ids = ids[:struct.unpack_from('<Q', harness.read(path), 24)[0]]
    return sorted(ids)


def pe_checksum(data, at):
    """The PE CheckSum (Microsoft PE/COFF specification): 16-bit words, carries folded, plus the length."""
    buf = bytearray(data)
    buf[at:at + 4] = b'\0\0\0\0'
    if len(buf) % 2:
        buf.append(0)
    s = 0
    for (w,) in struct.iter_unpack('<H', bytes(buf)):
        s += w
        s = (s & 0xffff) + (s >> 16)
    s = (s & 0xffff) + (s >> 16)
    return (s + len(data)) & 0xffffffff


def checksum_offset(data):
    return struct.unpack_from('<I', data, 0x3c)[0] + 24 + 64


def records(path, secname, magic):
    """(slot index, pointer) of each registration record in section `secname`."""
    data = dump_section(path, secname, path + '.records')
    out = []
    for i in range(0, len(data) - 23, 24):
        m, _, ptr = struct.unpack_from('<IIQ', data, i)
        if m == magic:
            out.append((i // 24, ptr))
    return out


def build(root, triple, machine, mingw=False):
    """Two HIP translation units (two bundles in .hip_fat), the stand-in runtime, a DLL and an EXE. MinGW:
    with DWARF, linked by ld.lld as GNU ld's i386pep (its images keep a COFF symbol and string table, and the
    .debug_* sections' long names in it, after the device code)."""
    os.makedirs(root, exist_ok=True)
    d = harness.Folder(root)
    objs = []
    for n, archs in (('a', ARCHS), ('b', ARCHS[1:])):
        src = d.path(f'{n}.hip')
        harness.write(src, PRELUDE + f'extern "C" __global__ void k{n}(int *p) {{ p[0] = 1; }}\n'.encode())
        harness.run([harness.CLANGXX, '-x', 'hip', f'--target={triple}'] + [f'--offload-arch={a}' for a in archs] +
                    ['-nogpuinc', '-nogpulib', '-c', src, '-o', d.path(f'{n}.obj')] + (['-g'] if mingw else []),
                    check=True)
        objs.append(d.path(f'{n}.obj'))
    harness.write(d.path('rt.c'), RUNTIME)
    harness.run([harness.CLANG, f'--target={triple}', '-c', d.path('rt.c'), '-o', d.path('rt.obj')] +
                (['-g'] if mingw else []), check=True)
    if mingw:
        for out, extra in (('k.dll', ['--shared']), ('k.exe', ['--subsystem', 'console'])):
            harness.run([harness.LLD, '-m', 'i386pep', '-e', 'entry', '-o', d.path(out)] + extra + objs +
                        [d.path('rt.obj')], check=True)
        return d
    common = ['/nodefaultlib', f'/machine:{machine}'] + objs + [d.path('rt.obj')]
    harness.run([LLD_LINK, '/dll', '/noentry', '/release', '/export:__device_stub__ka', '/out:' + d.path('k.dll')] +
                common, check=True)
    harness.run([LLD_LINK, '/entry:entry', '/subsystem:console', '/out:' + d.path('k.exe')] + common, check=True)
    # The device code merged into .rdata: found through the registration records.
    harness.run([LLD_LINK, '/dll', '/noentry', '/merge:.hip_fatbin=.rdata', '/out:' + d.path('merged.dll')] + common,
                check=True)
    return d


def check_reading(what, d, name):
    path = d.path(name)
    ref = dump_section(path, '.hip_fat', d.path(name + '.hip_fat'))
    r = harness.run([OT, 'list', '--json', name], cwd=d.dir, text=True)
    check(f'{what}: list reads the image', r.returncode == 0, r.stderr)
    if r.returncode != 0:
        return
    entries = json.loads(r.stdout)['entries']
    first = [e for e in entries if e['path'][1] == 'section .hip_fat' and e['path'][2].startswith('bundle 0')]
    check(f'{what}: the first bundle of .hip_fat holds the IDs LLVM\'s bundler lists from the dumped section',
          sorted(e['id'] for e in first) == llvm_list(d.path(name + '.hip_fat')), (first, ref[:16]))
    check(f'{what}: both translation units\' bundles are listed (5 device entries and 2 host entries)',
          len(entries) == 7, [e['path'] for e in entries])
    out = d.path(name + '.x')
    r = harness.run([OT, 'unbundle', '--extract-dir', out, name], cwd=d.dir, text=True)
    check(f'{what}: unbundle --extract-dir', r.returncode == 0, r.stderr)
    sec = d.path(name + '.hip_fat')
    for a in ARCHS:
        ref_out = d.path(f'{name}.llvm.{a}')
        harness.run([harness.LLVM_BUNDLER, '-unbundle', '-type=bc', f'-input={sec}',
                     f'-targets={HIPK}-amdgcn-amd-amdhsa--{a}', f'-output={ref_out}'], check=True)
        stem = os.path.splitext(name)[0]
        ours = os.path.join(out, f'{stem}-{HIPK}-amdgcn-amd-amdhsa--{a}{stem}.bc')  # the first bundle's
        check(f'{what}: the extracted {a} code object of the first bundle has the bytes LLVM unbundles',
              os.path.exists(ours) and harness.same_file(ours, ref_out), sorted(os.listdir(out)))
    r = harness.run([OT, 'size', '--json', '--bytes', name], cwd=d.dir, text=True)
    check(f'{what}: size counts the entries list names', r.returncode == 0 and
          json.loads(r.stdout)['file_bytes'] == sum(e['size'] for e in entries), r.stderr)
    r = harness.run([OT, 'compat', 'select', '--target', 'gfx90a:xnack-', name], cwd=d.dir, text=True)
    check(f'{what}: compat select picks the gfx90a entry', r.returncode == 0 and 'gfx90a' in r.stdout.splitlines()[0],
          r.stdout + r.stderr)


def check_bundler(what, d, name):
    """As clang-offload-bundler, a linked image is an object without bundle sections, as LLVM reads it."""
    ours = d.path('clang-offload-bundler')
    if not os.path.exists(ours):
        os.symlink(OT, ours)
    for args in (['-list', '-type=o', f'-input={name}'],
                 ['-unbundle', '-type=o', f'-input={name}', '-targets=hipv4-amdgcn-amd-amdhsa--gfx90a', '-output=u.bin']):
        a = harness.run([harness.LLVM_BUNDLER] + args, cwd=d.dir, text=True)
        b = harness.run([ours] + args, cwd=d.dir, text=True)
        check(f'{what}: clang-offload-bundler {args[0]} -type=o answers as LLVM\'s',
              (a.returncode, a.stdout, a.stderr.split(': ', 1)[-1]) == (b.returncode, b.stdout, b.stderr.split(': ', 1)[-1]),
              (a.returncode, a.stdout, a.stderr, b.returncode, b.stdout, b.stderr))


def check_prune(what, d, name):
    path = d.path(name)
    out = d.path('p-' + name)
    r = harness.run([OT, 'prune', '--keep', 'gfx90a', '--json', name, '-o', out], cwd=d.dir, text=True)
    check(f'{what}: prune --keep gfx90a', r.returncode == 0, r.stderr)
    if r.returncode != 0:
        return
    rc, _, err = readobj(out, '--sections', '--file-headers', '--coff-basereloc')
    check(f'{what}: llvm-readobj reads the pruned image without a warning', rc == 0 and not err.strip(), err)
    r2 = harness.run([OBJDUMP, '-p', out], text=True)
    check(f'{what}: llvm-objdump -p reads it without a warning', r2.returncode == 0 and not r2.stderr.strip(), r2.stderr)
    before, after = sections(path), sections(out)
    check(f'{what}: every section keeps its name, VirtualAddress and VirtualSize',
          [(s['Name'], s['VirtualAddress'], s['VirtualSize']) for s in before] ==
          [(s['Name'], s['VirtualAddress'], s['VirtualSize']) for s in after])
    check(f'{what}: SizeOfImage stays', file_header(path, 'SizeOfImage') == file_header(out, 'SizeOfImage'))
    check(f'{what}: .reloc keeps its bytes', dump_section(path, '.reloc', path + '.reloc') ==
          dump_section(out, '.reloc', out + '.reloc'))
    fa = file_header(path, 'FileAlignment')
    check(f'{what}: raw data stays aligned to FileAlignment and the file shrank',
          all(s['PointerToRawData'] % fa == 0 and s['RawDataSize'] % fa == 0 for s in after) and
          os.path.getsize(out) < os.path.getsize(path), after)
    others = [s['Name'] for s in before if s['Name'] not in ('.hip_fat', '.hipFatB')]
    check(f'{what}: every other section keeps its bytes',
          all(dump_section(path, n, path + '.s') == dump_section(out, n, out + '.s') for n in others), others)
    # Each registration record points at a bundle holding only the kept targets, as LLVM's bundler reads it.
    base = file_header(out, 'ImageBase')
    hip = next(s for s in after if s['Name'] == '.hip_fat')
    packed = dump_section(out, '.hip_fat', out + '.hip_fat')
    lists = []
    for _, ptr in records(out, '.hipFatB', 0x48495046):
        off = ptr - base - hip['VirtualAddress']
        harness.write(d.path('rec.bin'), packed[off:])
        lists.append(llvm_list(d.path('rec.bin')))
    want = [i for i in llvm_list(d.path(name + '.hip_fat')) if i.startswith('host-') or i.endswith('--gfx90a')]
    check(f'{what}: each record points at a bundle LLVM lists as only the kept gfx90a and the host entry',
          len(lists) == 2 and all(l == want for l in lists), lists)
    cs = file_header(path, 'CheckSum')
    data = harness.read(out)
    if cs:
        check(f'{what}: the test\'s CheckSum agrees with lld-link\'s on the input',
              pe_checksum(harness.read(path), checksum_offset(harness.read(path))) == cs)
        check(f'{what}: CheckSum was computed again', file_header(out, 'CheckSum') == pe_checksum(data, checksum_offset(data)))
    r = harness.run([OT, 'list', '--json', 'p-' + name], cwd=d.dir, text=True)
    check(f'{what}: offloadtool lists only the kept entries', r.returncode == 0 and
          sorted({e['id'] for e in json.loads(r.stdout)['entries']}) == sorted(want), r.stdout[-500:] + r.stderr)


def check_signed(d):
    """A certificate table (as signing appends it): refused, or stripped with --strip-signature."""
    data = bytearray(harness.read(d.path('k.dll')))
    cert = struct.pack('<IHH', 24, 0x200, 2) + b'\x30' * 16  # WIN_CERTIFICATE, PKCS#7 stand-in
    at = len(data)
    opt = struct.unpack_from('<I', data, 0x3c)[0] + 24
    struct.pack_into('<II', data, opt + 112 + 8 * 4, at, len(cert))
    harness.write(d.path('signed.dll'), bytes(data) + cert)
    r = harness.run([OT, 'prune', '--keep', 'gfx90a', 'signed.dll', '-o', 's.dll'], cwd=d.dir, text=True)
    check('signed image: refused without --strip-signature, nothing written',
          r.returncode == 1 and 'Authenticode' in r.stderr and '--strip-signature' in r.stderr and
          len(r.stderr.splitlines()) == 1 and not os.path.exists(d.path('s.dll')), r.stderr)
    r = harness.run([OT, 'prune', '--keep', 'gfx90a', '--strip-signature', '--json', 'signed.dll', '-o', 's.dll'],
                    cwd=d.dir, text=True)
    ok = r.returncode == 0
    check('signed image: --strip-signature prunes and says the signature was removed',
          ok and any('signature' in n for n in json.loads(r.stdout)['notes']), r.stdout + r.stderr)
    if ok:
        rc, out, err = readobj(d.path('s.dll'), '--file-headers')
        check('signed image: the pruned image has no certificate table and ends where its sections do',
              rc == 0 and 'CertificateTableRVA: 0x0' in out.replace('  ', ' ').replace('\n', ' ') or
              harness.read(d.path('s.dll')) == harness.read(d.path('p-k.dll')), err)


def check_cuda(root):
    """CUDA: LLVM 22's llvm-offload-wrapper registers a fatbin; prune keeps what sm_80 loads."""
    d = harness.Folder(root)
    wrapper = '/usr/lib/llvm-22/bin/llvm-offload-wrapper'
    fatbin = os.path.join(harness.DATA, 'nvidia', 'arch-specific.fatbin')
    harness.run([wrapper, '--kind=cuda', '--triple=x86_64-pc-windows-msvc', fatbin, '-o', d.path('w.bc')], check=True)
    harness.run(['/usr/lib/llvm-22/bin/llc', '-filetype=obj', d.path('w.bc'), '-o', d.path('w.obj')], check=True)
    harness.write(d.path('rt.c'), RUNTIME)
    harness.run([harness.CLANG, '--target=x86_64-pc-windows-msvc', '-c', d.path('rt.c'), '-o', d.path('rt.obj')],
                check=True)
    harness.run([LLD_LINK, '/dll', '/noentry', '/nodefaultlib', '/out:' + d.path('c.dll'), d.path('w.obj'),
                 d.path('rt.obj')], check=True)
    names = [s['Name'] for s in sections(d.path('c.dll'))]
    check('CUDA DLL: lld-link keeps 8 characters (.nv_fatb, .nvFatBi)', '.nv_fatb' in names and '.nvFatBi' in names,
          names)
    r = harness.run([OT, 'list', '--json', 'c.dll'], cwd=d.dir, text=True)
    ids = [e['id'] for e in json.loads(r.stdout)['entries']] if r.returncode == 0 else r.stderr
    r0 = harness.run([OT, 'list', '--json', fatbin], text=True)
    check('CUDA DLL: list gives the wrapped fatbin\'s entries',
          r.returncode == 0 and ids == [e['id'] for e in json.loads(r0.stdout)['entries']], ids)
    r = harness.run([OT, 'prune', '--keep', 'sm_80', 'c.dll', '-o', 'pc.dll'], cwd=d.dir, text=True)
    check('CUDA DLL: prune --keep sm_80', r.returncode == 0, r.stderr)
    if r.returncode == 0:
        r = harness.run([OT, 'list', '--json', 'pc.dll'], cwd=d.dir, text=True)
        got = sorted(e['id'] for e in json.loads(r.stdout)['entries']) if r.returncode == 0 else r.stderr
        check('CUDA DLL: the pruned fatbin holds what an sm_80 GPU loads (its cubin)', got == ['sm_80'], got)
        packed = dump_section(d.path('pc.dll'), '.nv_fatb', d.path('pc.nv'))
        base = file_header(d.path('pc.dll'), 'ImageBase')
        va = next(s for s in sections(d.path('pc.dll')) if s['Name'] == '.nv_fatb')['VirtualAddress']
        recs = records(d.path('pc.dll'), '.nvFatBi', 0x466243B1)
        check('CUDA DLL: the record points at the fatbin\'s magic',
              len(recs) == 1 and packed[recs[0][1] - base - va:][:4] == struct.pack('<I', 0xBA55ED50), recs)


WINE = '/usr/lib/wine/wine64'  # Debian's wine64 (the `wine` package's /usr/bin/wine is not needed)
KERNEL32_DEF = b"""LIBRARY kernel32.dll
EXPORTS
CreateFileA
WriteFile
CloseHandle
ExitProcess
"""
# The stand-in runtime DLL: each registration writes the fat binary its record
# points at (as far as its own header says) to registered-<n>.bin.
HIPRT = b'''
__declspec(dllimport) void *__stdcall CreateFileA(const char *, unsigned long, unsigned long, void *, unsigned long,
                                                 unsigned long, void *);
__declspec(dllimport) int __stdcall WriteFile(void *, const void *, unsigned long, unsigned long *, void *);
__declspec(dllimport) int __stdcall CloseHandle(void *);
static int count;
static void save(const unsigned char *p, unsigned long long n) {
  char name[] = "registered-0.bin";
  unsigned long done;
  name[11] = (char)('0' + count++);
  void *h = CreateFileA(name, 0x40000000 /* GENERIC_WRITE */, 0, 0, 2 /* CREATE_ALWAYS */, 0x80, 0);
  WriteFile(h, p, (unsigned long)n, &done, 0);
  CloseHandle(h);
}
struct wrapper { unsigned magic, version; const unsigned char *binary; void *unused; };
__declspec(dllexport) void **__hipRegisterFatBinary(struct wrapper *w) {
  static void *h;
  const unsigned char *b = w->binary;  /* "__CLANG_OFFLOAD_BUNDLE__", u64 n, n x {u64 offset, u64 size, u64 idlen, id} */
  unsigned long long n = *(const unsigned long long *)(b + 24), end = 0, at = 32;
  for (unsigned long long i = 0; i < n; ++i) {
    unsigned long long off = *(const unsigned long long *)(b + at), size = *(const unsigned long long *)(b + at + 8);
    at += 24 + *(const unsigned long long *)(b + at + 16);
    if (off + size > end) end = off + size;
  }
  save(b, end);
  return &h;
}
__declspec(dllexport) void __hipRegisterFunction(void **h, const void *f, char *d, const char *n, int t, void *a,
                                                 void *b, void *c, void *e, int *s) {}
__declspec(dllexport) void __hipUnregisterFatBinary(void **h) {}
__declspec(dllexport) int __hipPopCallConfiguration(void *g, void *b, unsigned long long *s, void *st) { return 0; }
__declspec(dllexport) int hipLaunchKernel(const void *f, void *g, void *b, void **a, unsigned long long s, void *st) {
  return 0;
}
'''
# The program: runs the .CRT$XCU initializers (the registration) as the MSVC
# CRT would, between its .CRT$XCA and .CRT$XCZ markers, then exits.
CRT = b'''
__declspec(dllimport) void __stdcall ExitProcess(unsigned);
typedef void (*init)(void);
__attribute__((section(".CRT$XCA"), used)) init xc_a = 0;
__attribute__((section(".CRT$XCZ"), used)) init xc_z = 0;
int atexit(void (*f)(void)) { return 0; }
void entry(void) {
  for (init *p = &xc_a + 1; p < &xc_z; ++p)
    if (*p) (*p)();
  ExitProcess(0);
}
'''


def wine_app(root, hiprt=HIPRT):
    """A folder holding app.exe (the two translation units, /dynamicbase, this file's CRT) and the stand-in
    runtime hiprt.dll built from `hiprt`, and the environment that runs it under wine."""
    d = harness.Folder(root)
    harness.write(d.path('kernel32.def'), KERNEL32_DEF)
    harness.run([harness.llvm('llvm-dlltool'), '-d', d.path('kernel32.def'), '-l', d.path('kernel32.lib'), '-m',
                 'i386:x86-64'], check=True)
    for name, src in (('hiprt', hiprt), ('crt', CRT)):
        harness.write(d.path(name + '.c'), src)
        harness.run([harness.CLANG, '--target=x86_64-pc-windows-msvc', '-O1', '-c', d.path(name + '.c'), '-o',
                     d.path(name + '.obj')], check=True)
    harness.run([LLD_LINK, '/dll', '/noentry', '/nodefaultlib', '/out:' + d.path('hiprt.dll'),
                 '/implib:' + d.path('hiprt.lib'), d.path('hiprt.obj'), d.path('kernel32.lib')], check=True)
    objs = []
    for n, archs in (('a', ARCHS), ('b', ARCHS[1:])):
        harness.write(d.path(f'{n}.hip'), PRELUDE + f'extern "C" __global__ void k{n}(int *p) {{ p[0] = 1; }}\n'.encode())
        harness.run([harness.CLANGXX, '-x', 'hip', '--target=x86_64-pc-windows-msvc'] +
                    [f'--offload-arch={a}' for a in archs] + ['-nogpuinc', '-nogpulib', '-c', d.path(f'{n}.hip'), '-o',
                                                              d.path(f'{n}.obj')], check=True)
        objs.append(d.path(f'{n}.obj'))
    # /dynamicbase with a base the loader will not grant as is: wine applies .reloc, records included.
    harness.run([LLD_LINK, '/entry:entry', '/subsystem:console', '/nodefaultlib', '/dynamicbase',
                 '/out:' + d.path('app.exe')] + objs + [d.path('crt.obj'), d.path('hiprt.lib'), d.path('kernel32.lib')],
                check=True)
    return d, {'WINEPREFIX': d.path('prefix'), 'WINEDEBUG': '-all', 'WINEDLLOVERRIDES': 'mscoree,mshtml='}


def check_wine(root):
    """Windows' loader (wine) runs a pruned EXE: what its registration hands the runtime holds only the kept targets."""
    d, env = wine_app(root)
    r = harness.run([OT, 'prune', '--keep', 'gfx90a', 'app.exe', '-o', 'slim.exe'], cwd=d.dir, text=True)
    check('wine: prune --keep gfx90a app.exe', r.returncode == 0, r.stderr)
    seen = {}
    for exe in ('app.exe', 'slim.exe'):
        run_dir = harness.Folder(root)
        for f in ('hiprt.dll', exe):
            harness.write(run_dir.path(f), harness.read(d.path(f)))
        r = harness.run([WINE, exe], cwd=run_dir.dir, env=env, text=True, timeout=300)
        got = sorted(f for f in os.listdir(run_dir.dir) if f.startswith('registered-'))
        check(f'wine runs {exe} and its two registrations reach the runtime', r.returncode == 0 and len(got) == 2,
              (r.returncode, got, r.stderr[-1000:]))
        seen[exe] = [llvm_list(run_dir.path(f)) for f in got]
    host = [i for i in seen['app.exe'][0] if i.startswith('host-')] if seen.get('app.exe') else []
    check('wine: app.exe registers every target (LLVM\'s bundler lists what the runtime got)',
          seen.get('app.exe') == [sorted(host + [f'{HIPK}-amdgcn-amd-amdhsa--{a}' for a in ARCHS]),
                                  sorted(host + [f'{HIPK}-amdgcn-amd-amdhsa--{a}' for a in ARCHS[1:]])], seen)
    check('wine: slim.exe registers only gfx90a, from both translation units',
          seen.get('slim.exe') == [sorted(host + [f'{HIPK}-amdgcn-amd-amdhsa--gfx90a'])] * 2, seen)


def check_hostile(d):
    good = harness.read(d.path('k.dll'))
    pe = struct.unpack_from('<I', good, 0x3c)[0]
    opt = pe + 24
    nsec = struct.unpack_from('<H', good, pe + 6)[0]
    table = opt + struct.unpack_from('<H', good, pe + 20)[0]
    last = table + 40 * (nsec - 1)

    def patched(edits, extra=b''):
        b = bytearray(good)
        for off, fmt, v in edits:
            struct.pack_into(fmt, b, off, v)
        return bytes(b) + extra
    reloc = next(s for s in sections(d.path('k.dll')) if s['Name'] == '.reloc')
    # (what, bytes, the error's words, whether list reads what is wrong: it reads no relocations)
    cases = [
        ('raw data past the end', patched([(last + 16, '<I', 0x100000)]), 'extends past the end of the file'),
        ('a section outside SizeOfImage', patched([(last + 12, '<I', 0x7fff0000)]), 'lies outside the image'),
        ('a relocation block that overflows', patched([(reloc['PointerToRawData'] + 4, '<I', 0x7ffffff0)]),
         'overflows the table'),
        ('a certificate table past the end', patched([(opt + 112 + 32, '<I', len(good)), (opt + 112 + 36, '<I', 0x1000)]),
         'certificate table'),
        ('e_lfanew past the end', patched([(0x3c, '<I', len(good) + 8)]), None),
        ('too many data directories', patched([(opt + 108, '<I', 0x1000)]), 'data directories do not fit'),
    ]
    for name, data, want in cases:
        harness.write(d.path('bad.dll'), data)
        runs = [['prune', '--keep', 'gfx90a', 'bad.dll', '-o', 'bad-out.dll']]
        if 'relocation' not in name:
            runs.append(['list', 'bad.dll'])
        for args in runs:
            r = harness.run([OT] + args, cwd=d.dir, text=True, timeout=30)
            ok = r.returncode == 1 and len(r.stderr.splitlines()) == 1 and 'bad.dll' in r.stderr and \
                (want is None or want in r.stderr) and not os.path.exists(d.path('bad-out.dll'))
            check(f'hostile PE ({name}): {args[0]} fails in one line naming the file, nothing written', ok, r.stderr)
    # What prune refuses to move, and why: (what, bytes, prune's words, extra options, list's words or None: it reads it)
    secs = sections(d.path('k.dll'))
    rec = next(s for s in secs if s['Name'] == '.hipFatB')['PointerToRawData']
    base = file_header(d.path('k.dll'), 'ImageBase')
    ptr = struct.unpack_from('<Q', good, rec + 8)[0]
    text_va = next(s for s in secs if s['Name'] == '.text')['VirtualAddress']
    hip_va = next(s for s in secs if s['Name'] == '.hip_fat')['VirtualAddress']
    refusals = [
        ('a record into the middle of a bundle', patched([(rec + 8, '<Q', ptr + 8)]),
         'points into the middle of a bundle', [], None),
        ('a record outside the device code', patched([(rec + 8, '<Q', base + text_va)]),
         'outside the device code sections', [], 'points at neither an offload bundle nor an NVIDIA fatbin'),
        ('a base relocation inside .hip_fat', patched([(reloc['PointerToRawData'], '<I', hip_va)]),
         'inside .hip_fat: not pruned', [], None),
        ('an i386 machine', patched([(pe + 4, '<H', 0x14c)]), 'only PE32+ images for x86_64 and ARM64 are pruned', [],
         None),
        ('a certificate table that does not end the file',
         patched([(opt + 112 + 32, '<I', 0x400), (opt + 112 + 36, '<I', 0x10)]), 'does not end the file',
         ['--strip-signature'], None),
    ]
    for name, data, want, extra, list_want in refusals:
        harness.write(d.path('bad.dll'), data)
        r = harness.run([OT, 'prune', '--keep', 'gfx90a', 'bad.dll', '-o', 'bad-out.dll'] + extra, cwd=d.dir, text=True,
                        timeout=30)
        ok = r.returncode == 1 and len(r.stderr.splitlines()) == 1 and r.stderr.startswith(
            'offloadtool prune: error: bad.dll: ') and want in r.stderr and not os.path.exists(d.path('bad-out.dll')) \
            and not [f for f in os.listdir(d.dir) if f.startswith('bad-out.dll')]
        check(f'PE prune refuses {name}: one line saying so, no output or temp left', ok, r.stderr)
        if list_want:
            r = harness.run([OT, 'list', 'bad.dll'], cwd=d.dir, text=True, timeout=30)
            check(f'PE list of {name}: one line saying so', r.returncode == 1 and len(r.stderr.splitlines()) == 1 and
                  list_want in r.stderr, r.stderr)


def cases(root):
    d = build(root, 'x86_64-pc-windows-msvc', 'x64')
    for name in ('k.dll', 'k.exe'):
        check_reading(name, d, name)
        check_bundler(name, d, name)
        check_prune(name, d, name)
    # merged: no .hip_fat section; the records lead to the bundles in .rdata.
    names = [s['Name'] for s in sections(d.path('merged.dll'))]
    r = harness.run([OT, 'list', '--json', 'merged.dll'], cwd=d.dir, text=True)
    entries = json.loads(r.stdout)['entries'] if r.returncode == 0 else []
    check('merged.dll: with .hip_fatbin merged into .rdata, the records still find both bundles',
          '.hip_fat' not in names and len(entries) == 7 and all(e['path'][1].startswith('section .rdata, registered')
                                                                for e in entries), (names, r.stderr))
    check_signed(d)
    check_hostile(d)
    check_wine(root)
    if harness.RELEASE == '22':
        check_cuda(root)
    # MinGW: long section names from the string table, DWARF after the device code.
    m = build(os.path.join(root, 'mingw'), 'x86_64-w64-windows-gnu', None, mingw=True)
    for name in ('k.dll', 'k.exe'):
        check_reading(f'mingw {name}', m, name)
        check_prune(f'mingw {name}', m, name)
        names = [s['Name'] for s in sections(m.path('p-' + name))]
        check(f'mingw {name}: the .debug_* sections keep their long names', '.debug_info' in names, names)
        r = harness.run([harness.llvm('llvm-dwarfdump'), '--verify', m.path('p-' + name)], text=True)
        check(f'mingw {name}: llvm-dwarfdump --verify passes on the pruned image', r.returncode == 0, r.stdout[-1000:])
        nm = [harness.run([harness.llvm('llvm-nm'), p], text=True).stdout for p in (m.path(name), m.path('p-' + name))]
        check(f'mingw {name}: llvm-nm reads the same symbol table', nm[0] == nm[1] and nm[0], nm[1][:300])
    # ARM64: the same reading and pruning.
    a = build(os.path.join(root, 'arm64'), 'aarch64-pc-windows-msvc', 'arm64')
    check_reading('arm64 k.dll', a, 'k.dll')
    check_prune('arm64 k.dll', a, 'k.dll')


if __name__ == '__main__':
    sys.exit(harness.run_suite('pe-image', cases, needs=[harness.CLANGXX, LLD_LINK, harness.LLD, WINE, READOBJ, OBJCOPY, OBJDUMP,
                                                        harness.LLVM_BUNDLER]))
