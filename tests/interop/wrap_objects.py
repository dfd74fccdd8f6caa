#!/usr/bin/env python3
"""Object-level checks of `offloadtool wrap` output that need no runtime:

* COFF (x86_64-pc-windows-msvc, x86_64-w64-windows-gnu): llvm-readobj and
  llvm-objdump -dr without warnings; the section names LLVM 19 gives the same
  wrapper module (llc on the saved clang-linker-wrapper output); Windows x64
  calls and their IMAGE_REL_AMD64 relocations; MinGW objects link into a DLL
  with ld.lld.
* AArch64 and ppc64le ELF: the relocations each stub must carry.
* Bad input: one clear error, exit 1, no output file and no temp file left.
* The clang-offload-wrapper personality fails like LLVM 14 does."""
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import harness  # noqa: E402
from harness import LLVM14_WRAPPER as W14, LLVM_BIN as LLVM19, OT, REFERENCE as OBSERVED, check, read, write  # noqa: E402,E501

S = None  # the work folder, a harness.Folder
CLANG = f"{LLVM19}/clang"
NEEDS = [CLANG, W14] + [f"{LLVM19}/{t}" for t in ("clang-offload-bundler", "llvm-readobj", "llvm-objdump", "llc",
                                                   "ld.lld")]


def wrap(args):
    return S.run([OT, "wrap"] + args)


def section_names_coff(path):
    out = S.run([f"{LLVM19}/llvm-readobj", "--sections", path]).stdout
    return re.findall(r"Name: (\S+) \(", out)


IGNORED = {".text", ".data", ".bss", ".xdata", ".pdata", ".drectve"}

RUNTIME = {"openmp": ["__tgt_register_lib", "__tgt_unregister_lib", "atexit"],
           "cuda": ["__cudaRegisterFatBinary", "__cudaRegisterFatBinaryEnd", "__cudaUnregisterFatBinary", "atexit",
                    "__cudaRegisterFunction", "__cudaRegisterVar"],
           "hip": ["__hipRegisterFatBinary", "__hipUnregisterFatBinary", "atexit", "__hipRegisterFunction",
                   "__hipRegisterVar", "__hipRegisterSurface", "__hipRegisterTexture"]}
ELF_RELOCS = {
    "aarch64-unknown-linux-gnu": ["R_AARCH64_ADR_PREL_PG_HI21\t.omp_offloading.descriptor",
                                  "R_AARCH64_ADD_ABS_LO12_NC\t.omp_offloading.descriptor",
                                  "R_AARCH64_CALL26\t__tgt_register_lib", "R_AARCH64_CALL26\tatexit",
                                  "R_AARCH64_ADR_GOT_PAGE\t__tgt_register_image_info",
                                  "R_AARCH64_LD64_GOT_LO12_NC\t__tgt_register_image_info",
                                  "R_AARCH64_ABS64\t.omp_offloading.device_image+"],
    "powerpc64le-unknown-linux-gnu": ["R_PPC64_REL16_HA\t.TOC.", "R_PPC64_REL16_LO\t.TOC.+0x4",
                                      "R_PPC64_TOC16_HA\t.omp_offloading.descriptor",
                                      "R_PPC64_TOC16_LO\t.omp_offloading.descriptor",
                                      "R_PPC64_REL24\t__tgt_register_lib", "R_PPC64_REL24\tatexit",
                                      "R_PPC64_GOT16_HA\t__tgt_register_image_info",
                                      "R_PPC64_GOT16_LO_DS\t__tgt_register_image_info",
                                      "R_PPC64_ADDR64\t.omp_offloading.device_image+"],
}
PROG = "offloadtool wrap"
BAD = [
    (["--target=x86_64-linux-gnu", "-o", "out.o", "missing.img"], f"{PROG}: error: 'missing.img': No such file or directory"),
    (["--target=x86_64-linux-gnu", "-o", "out.o", "empty.img"], f"{PROG}: error: empty.img: device image is empty"),
    (["--target=foo-bar-baz", "-o", "out.o", "a.img"], f"{PROG}: error: 'foo-bar-baz': unsupported target triple"),
    (["--target=i386-pc-linux-gnu", "-o", "out.o", "a.img"],
     f"{PROG}: error: 'i386-pc-linux-gnu': no wrapper code generator for this host (supported: x86_64 ELF and COFF, "
     "aarch64 ELF, powerpc64le ELF)"),
    (["--target=x86_64-apple-darwin", "-o", "out.o", "a.img"],
     f"{PROG}: error: 'x86_64-apple-darwin': no wrapper code generator for this host (supported: x86_64 ELF and "
     "COFF, aarch64 ELF, powerpc64le ELF)"),
    (["--target=x86_64-linux-gnu", "--offload-arch=gfx906", "-o", "out.o", "a.img", "b.img"],
     f"{PROG}: error: 1 --offload-arch values for 2 images: give one per image or none"),
    (["--kind=cuda", "--target=x86_64-linux-gnu", "-o", "out.o", "a.img", "b.img"],
     f"{PROG}: error: b.img: CUDA wraps exactly one fat binary; 2 files were given"),
    (["--kind=hip", "--target=x86_64-linux-gnu", "-o", "out.o", "a.img"],
     f"{PROG}: error: a.img: a HIP device image needs an --offload-arch to be bundled (or give one ready offload bundle)"),
]


def cases(root):
    global S
    S = harness.Folder(path=root, text=True)
    write(S.path("a.img"), b"\x7fELF first image" * 3)
    write(S.path("b.img"), b"second image")
    write(S.path("app.fatbin"), b"FATBIN" * 20)
    write(S.path("empty.img"), b"")
    S.run([f"{LLVM19}/clang-offload-bundler", "-type=o", "-bundle-align=4096",
           "-targets=host-x86_64-unknown-windows,hip-amdgcn-amd-amdhsa--gfx906", "-input=/dev/null",
           "-input=a.img", "-output=app.hipfb"], check=True)

    # ---------------------------------------------------------------------------
    # COFF
    # ---------------------------------------------------------------------------
    for triple, mingw in (("x86_64-pc-windows-msvc", False), ("x86_64-w64-windows-gnu", True)):
        stub = S.path(f"stub-{mingw}.c")
        names = sorted({n for v in RUNTIME.values() for n in v} | {"__tgt_register_image_info", "__cudaRegisterSurface",
                                                                   "__cudaRegisterTexture", "__cudaRegisterManagedVar"})
        write(stub, "".join(f"void {n}(void) {{}}\n" for n in names if n != "atexit") +
              "int atexit(void (*f)(void)) { (void)f; return 0; }\n"
              "int _DllMainCRTStartup(void) { return 1; }\n")
        stub_obj = S.path(f"stub-{mingw}.o")
        stub_built = S.run([CLANG, f"--target={triple}", "-ffreestanding", "-c", stub, "-o", stub_obj]).returncode == 0
        wraps = [("openmp-llvm19", ["--kind=openmp", "a.img", "b.img"], "openmp"),
                 ("openmp-llvm14", ["--kind=openmp", "--scheme=llvm14", "--offload-arch=gfx906", "--offload-arch=sm_80",
                                    "a.img", "b.img"], "openmp"),
                 ("cuda", ["--kind=cuda", "app.fatbin"], "cuda"),
                 ("cuda-llvm20", ["--kind=cuda", "--entries=llvm20", "app.fatbin"], "cuda")]
        wraps.append(("hip", ["--kind=hip", "app.hipfb"], "hip"))
        for name, args, kind in wraps:
            tag = f"{triple}-{name}"
            obj = S.path(f"{tag}.obj")
            r = wrap([f"--target={triple}", "-o", obj] + args)
            check(f"{tag}: wrap exits 0", r.returncode == 0 and not r.stderr, r.stderr)
            if r.returncode != 0:
                continue
            r2 = wrap([f"--target={triple}", "-o", obj + ".2"] + args)
            check(f"{tag}: same bytes twice", r2.returncode == 0 and read(obj) == read(obj + ".2"))
            check(f"{tag}: COFF AMD64 header, no timestamp", read(obj)[:2] == b"\x64\x86" and read(obj)[4:8] == bytes(4))
            harness.check_reader_clean(tag, [f"{LLVM19}/llvm-readobj", "--file-headers", "--sections", "--symbols", "--relocations",
                                             "--coff-directives", obj])
            dis = harness.check_reader_clean(tag, [f"{LLVM19}/llvm-objdump", "-dr", obj])
            for fn in RUNTIME[kind]:
                if fn == "atexit" and name == "openmp-llvm14":
                    continue  # LLVM 14's scheme unregisters from a destructor table instead
                check(f"{tag}: calls {fn} through a REL32 relocation",
                      re.search(r"IMAGE_REL_AMD64_REL32\s+" + re.escape(fn) + r"\n", dis) is not None, dis[-3000:])
            check(f"{tag}: Windows x64 frame and first argument register",
                  "subq\t$0x20, %rsp" in dis and "%rcx" in dis and "%rdi" not in dis.split("globals_reg")[0], dis[:1500])
            ctor = ".CRT$XCA00001" if name == "openmp-llvm14" else ".CRT$XCA00101"
            if mingw:
                ctor = ".ctors.65534" if name == "openmp-llvm14" else ".ctors.65434"
            secs = section_names_coff(obj)
            check(f"{tag}: constructor table {ctor}", ctor in secs, secs)
            # Same sections as LLVM 19 gives the module clang-linker-wrapper prints (data elided).
            ref_ll = os.path.join(OBSERVED, f"llvm19-wrapped-{kind}-x86_64-unknown-windows-gnu.ll")
            if name in ("openmp-llvm19", "cuda", "hip") and os.path.exists(ref_ll):
                text = "".join(line for line in open(ref_ll) if not line.startswith(" \""))
                text = text.replace('c"<DATA>"', "zeroinitializer").replace("x86_64-unknown-windows-gnu", triple)
                write(S.path("ref.ll"), text.encode())
                r = S.run([f"{LLVM19}/llc", "-filetype=obj", "ref.ll", "-o", "ref.obj"])
                check(f"{tag}: llc compiles the reference module", r.returncode == 0, r.stderr)
                if r.returncode == 0:
                    ref = sorted(set(section_names_coff(S.path("ref.obj"))) - IGNORED)
                    ours = sorted(set(secs) - IGNORED)
                    check(f"{tag}: the same sections as LLVM 19's wrapper module", ours == ref, f"ours {ours}\nref  {ref}")
            if mingw and stub_built:
                r = S.run([f"{LLVM19}/ld.lld", "-m", "i386pep", "-shared", "-o", f"{tag}.dll", obj, stub_obj])
                check(f"{tag}: links into a DLL with ld.lld (MinGW)", r.returncode == 0 and not r.stderr, r.stderr)

    # ---------------------------------------------------------------------------
    # AArch64 and ppc64le relocations
    # ---------------------------------------------------------------------------
    for triple, relocs in ELF_RELOCS.items():
        obj = S.path(f"{triple}.o")
        r = wrap([f"--target={triple}", "--offload-arch=gfx906", "--offload-arch=sm_80", "-o", obj, "a.img", "b.img"])
        check(f"{triple}: wrap exits 0", r.returncode == 0, r.stderr)
        if r.returncode != 0:
            continue
        dis = harness.check_reader_clean(triple, [f"{LLVM19}/llvm-objdump", "-dr", obj])
        rel = harness.check_reader_clean(triple, [f"{LLVM19}/llvm-objdump", "-r", obj])
        for want in relocs:
            rtype, sym = want.split("\t")
            check(f"{triple}: has {want}", re.search(re.escape(rtype) + r"\s+" + re.escape(sym), dis + rel) is not None,
                  rel[-2000:])
        if triple.startswith("powerpc64le"):
            out = harness.check_reader_clean(triple, [f"{LLVM19}/llvm-readelf", "-s", "--wide", obj])
            check(f"{triple}: functions have an ELFv2 local entry point 8 bytes in",
                  len(re.findall(r"FUNC\s+LOCAL\s+DEFAULT\s+\[<other: 0x60>\]", out)) == 2, out)
            hdr = harness.check_reader_clean(triple, [f"{LLVM19}/llvm-readelf", "-h", obj])
            check(f"{triple}: ELFv2 e_flags", re.search(r"Flags:\s+0x2", hdr) is not None, hdr)

    # ---------------------------------------------------------------------------
    # Bad input: one clear error line, exit 1, nothing written
    # ---------------------------------------------------------------------------
    for args, want in BAD:
        before = set(S.names())
        r = wrap(args)
        after = set(S.names())
        check(f"bad input {args}: exit 1 with one line", r.returncode == 1 and r.stderr == want + "\n" and not r.stdout,
              f"rc={r.returncode}\n{r.stderr}\nwant {want}")
        check(f"bad input {args}: no output or temp file", after == before, sorted(after - before))
    r = wrap(["--kind=opencl", "--target=x86_64-linux-gnu", "-o", "out.o", "a.img"])
    check("unknown kind: exit 1, names the choices", r.returncode == 1 and "openmp" in r.stderr and "sycl" in r.stderr
          and r.stderr.count("\n") == 1 and not os.path.exists(S.path("out.o")), r.stderr)
    for kind, extra in (("hip", []), ("openmp", ["--scheme=llvm14"])):
        before = set(S.names())
        r = wrap([f"--kind={kind}", "--relocatable", "--target=x86_64-linux-gnu", "-o", "out.o", "a.img"] + extra)
        check(f"--relocatable with --kind={kind} {' '.join(extra)}: exit 1, one line saying where it applies, "
              "no output or temp file",
              r.returncode == 1 and r.stderr == "offloadtool wrap: error: --relocatable applies to OpenMP images in "
              ".llvm.offloading (--kind openmp, --scheme llvm19)\n" and set(S.names()) == before, r.stderr)

    # The personality against LLVM 14's own clang-offload-wrapper, both run as ./clang-offload-wrapper.
    for d, target in (("ref", W14), ("ours", OT)):
        os.makedirs(S.path(d))
        os.symlink(target, os.path.join(S.path(d), "clang-offload-wrapper"))
        for f in ("a.img", "empty.img"):
            shutil.copy(S.path(f), S.path(d))
    for args in (["-target=x86_64-pc-linux-gnu", "-o", "x.o", "missing.img"],
                 ["-target=foo", "-o", "x.o", "a.img"],
                 ["-o", "x.o", "a.img"],
                 ["-target=x86_64-pc-linux-gnu", "-o", "x.o"],
                 ["--version"]):
        ref = S.run(["./clang-offload-wrapper"] + args, cwd=S.path("ref"))
        ours = S.run(["./clang-offload-wrapper"] + args, cwd=S.path("ours"))
        ours.stdout = harness.without_own_version_line(ours.stdout.encode()).decode()
        check(f"personality {args}: same exit code and messages as LLVM 14",
              (ref.returncode, ref.stdout, ref.stderr) == (ours.returncode, ours.stdout, ours.stderr),
              f"ref  {ref.returncode} {ref.stdout!r} {ref.stderr!r}\nours {ours.returncode} {ours.stdout!r} {ours.stderr!r}")
        check(f"personality {args}: no output on failure", ref.returncode == 0 or not os.path.exists(
            os.path.join(S.path("ours"), "x.o")))


if __name__ == "__main__":
    sys.exit(harness.run_suite("wrap-objects", cases, needs=NEEDS))
