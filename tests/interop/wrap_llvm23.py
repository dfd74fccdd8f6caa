#!/usr/bin/env python3
"""llvm-offload-wrapper as LLVM 23 (offloadtool as llvm-offload-wrapper-23)
against LLVM 23's own, whose module clang 23 compiles: both in scripts/fetch-llvm23's
chroot (suite llvm23). The programs are linked and run here (gcc; the AArch64 and
ppc64le cross compilers and qemu-user for SYCL).

1. HIP and CUDA: the objects of both wrappers linked with the stand-in runtime of
   wrap_fatbin.py (wrap_stub_runtime.c) around hand-written entries and around a host
   object clang 23 compiled from wrap_clang_kernels.cu: the programs print the same
   registrations (GNU ld and lld). 23's one change to these modules
   (no_sanitize_address/no_sanitize_hwaddress on .fatbin_wrapper) changes no byte of
   the object clang 23 compiles (checked here), so none of ours. --relocatable
   changes nothing for them, in 23's output as in ours.
2. SYCL (new in 23): an image registered with __sycl_register_lib(image, size) and
   unregistered with __sycl_unregister_lib from priority-1 structors; the stand-in
   runtime wrap_sycl_stub_runtime.c prints what it receives. Raw bytes, an
   OffloadBinary, an empty file, two inputs (only the first is wrapped); x86-64,
   AArch64 and ppc64le. The sections are LLVM's (.llvm.offloading, .init_array.1,
   .fini_array.1; on Windows .CRT$XCA00001/.CRT$XTA00001).
3. OpenMP --relocatable: the image in .llvm.offloading.relocatable (type, flags,
   alignment, size as in 23's object, ELF and COFF); each object merged with `ld -r`
   into the host's, the section kept, then linked into a program with the
   stand-in libomptarget (wrap_omp_stub_runtime.c): the same registration.
4. COFF (x86_64-pc-windows-msvc and x86_64-w64-windows-gnu): the sections of ours and of
   23's compiled module for HIP, CUDA, SYCL and OpenMP --relocatable, as wrap-objects compares
   19's, and the characteristics of the image and structor sections.
The command line, --help, --version and the errors are llvm-cl-23's."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import OT, check, read, write  # noqa: E402
import wrap_fatbin  # noqa: E402  (its expected registrations and clang's host flags)

S = None  # the work folder, a harness.Folder
B23 = harness.LLVM_BIN
WRAPPER23 = f"{B23}/llvm-offload-wrapper"
CLANG23 = f"{B23}/clang"
ARCHES = wrap_fatbin.ARCHES
HOST_LLD = "/usr/lib/llvm-19/bin/ld.lld"  # gcc links here, with the host's files: not 23's, in the chroot
NEEDS = [WRAPPER23, CLANG23, HOST_LLD] + [f"{B23}/{t}" for t in (
    "llvm-offload-binary", "clang-offload-bundler", "llvm-readelf", "llvm-readobj")] + [
    t for _, cc, runner, _ in ARCHES for t in (cc, runner) if t]
WINDOWS = ["x86_64-pc-windows-msvc", "x86_64-w64-windows-gnu"]
# Sections the compiler adds that the wrapper objects need not have (unwind tables, address significance).
IGNORED = {".text", ".data", ".bss", ".xdata", ".pdata", ".drectve", ".llvm_addrsig", ".eh_frame"}


def ours(name, kind, triple, inputs, extra=()):
    """offloadtool as llvm-offload-wrapper-23: the object `name`.o; its stderr."""
    r = S.run([S.path("llvm-offload-wrapper-23"), f"--kind={kind}", f"--triple={triple}", "-o", f"{name}.o"] +
              list(extra) + inputs)
    check(f"{name}: llvm-offload-wrapper-23 exits 0 silently", r.returncode == 0 and not r.stderr, r.stderr)
    return S.path(f"{name}.o")


def llvm23(name, kind, triple, inputs, extra=()):
    """LLVM 23's llvm-offload-wrapper, its module compiled by clang 23: the object `name`.o."""
    r = S.run([WRAPPER23, f"--kind={kind}", f"--triple={triple}", "-o", f"{name}.bc"] + list(extra) + inputs)
    pic = [] if "windows" in triple else ["-fPIC"]
    r2 = S.run([CLANG23, f"--target={triple}", "-Wno-override-module", "-c"] + pic + [f"{name}.bc", "-o", f"{name}.o"])
    check(f"{name}: LLVM 23's wrapper module compiles", r.returncode == 0 and r2.returncode == 0, r.stderr + r2.stderr)
    return S.path(f"{name}.o")


def native(name, kind, triple, inputs, extra=()):
    """offloadtool's own applet: `offloadtool wrap --kind K --target T` (the same
    objects as the LLVM 23 personality, by its own command line)."""
    r = S.run([OT, "wrap", "--kind", kind, "--target", triple, "-o", f"{name}.o"] + list(extra) + inputs)
    check(f"{name}: offloadtool wrap --kind {kind} exits 0 silently", r.returncode == 0 and not r.stderr, r.stderr)
    return S.path(f"{name}.o")


def elf_sections(path):
    """{name: (type, flags, alignment, size)} from llvm-readelf -S."""
    out = S.run([f"{B23}/llvm-readelf", "-S", "--wide", path]).stdout
    secs = {}
    for m in re.finditer(r"\]\s+(\S+)\s+(\S+)\s+[0-9a-f]{16}\s+[0-9a-f]+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([A-Za-z]*)\s+"
                         r"\d+\s+\d+\s+(\d+)", out):
        secs[m.group(1)] = (m.group(2), m.group(4), int(m.group(5)), int(m.group(3), 16))
    return secs


def coff_sections(path):
    """{name: characteristics} from llvm-readobj --sections."""
    out = S.run([f"{B23}/llvm-readobj", "--sections", path]).stdout
    return dict(re.findall(r"Name: (\S+) \(.*?Characteristics \[ \((0x[0-9A-F]+)\)", out, re.S))


def alloc_names(secs):
    return sorted(n for n, (_, flags, _, _) in secs.items() if "A" in flags and n not in IGNORED)


def run_program(tag, cc, runner, flags, sources, env):
    """Links `sources` with `cc flags`, runs the program (under `runner`); its stdout, or None."""
    exe = S.path(tag)
    r = S.run([cc, "-O1"] + flags + ["-o", exe] + sources)
    check(f"{tag}: links", r.returncode == 0, r.stderr)
    if r.returncode != 0:
        return None
    r = S.run(([runner] if runner else []) + [exe], env=env)
    check(f"{tag}: runs", r.returncode == 0, r.stdout + r.stderr)
    return r.stdout


def same(name, a, b, want=None):
    check(f"{name}: ours registers what LLVM 23's does", a is not None and a == b,
          f"--- ours\n{a}--- LLVM 23\n{b}")
    if want is not None:
        check(f"{name}: the registrations expected", b == want, f"--- LLVM 23\n{b}--- want\n{want}")


def fatbin_cases(linkers):
    triple = "x86_64-unknown-linux-gnu"
    write(S.path("app.fatbin"), bytes(range(256)) * 3 + b"CUDA-FATBIN-END")
    write(S.path("gfx906.co"), b"\x7fELF-amdgpu-gfx906-code-object" * 5)
    r = S.run([f"{B23}/clang-offload-bundler", "-type=o", "-bundle-align=4096",
               "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906", "-input=/dev/null",
               "-input=gfx906.co", "-output=app.hipfb"])
    check("clang-offload-bundler 23 makes the HIP bundle", r.returncode == 0, r.stderr)
    for kind, fatbin in (("cuda", "app.fatbin"), ("hip", "app.hipfb")):
        env = {"WRAP_EXPECT_FATBIN": S.path(fatbin)}
        objs = {"ours": ours(f"ours-{kind}", kind, triple, [fatbin]),
                "llvm23": llvm23(f"llvm23-{kind}", kind, triple, [fatbin])}
        # 23's attributes on .fatbin_wrapper: the object without them is the same.
        text = S.run([f"{B23}/llvm-dis", f"llvm23-{kind}.bc", "-o", "-"]).stdout
        check(f"{kind}: 23's module marks .fatbin_wrapper no_sanitize_address, no_sanitize_hwaddress",
              re.search(r"@\.fatbin_wrapper = .*, no_sanitize_address, no_sanitize_hwaddress, align 8", text), text)
        write(S.path(f"plain-{kind}.ll"), text.replace(", no_sanitize_address, no_sanitize_hwaddress", "").encode())
        r = S.run([CLANG23, "-Wno-override-module", "-c", "-fPIC", f"plain-{kind}.ll", "-o", f"plain-{kind}.o"])
        check(f"{kind}: without those attributes clang 23 compiles the same object",
              r.returncode == 0 and read(S.path(f"plain-{kind}.o")) == read(objs["llvm23"]), r.stderr)
        # --relocatable: nothing changes, in 23's output nor in ours.
        rel23 = llvm23(f"llvm23-{kind}-rel", kind, triple, [fatbin], ["--relocatable"])
        check(f"{kind}: LLVM 23 --relocatable gives the same object", read(rel23) == read(objs["llvm23"]))
        rel = ours(f"ours-{kind}-rel", kind, triple, [fatbin], ["--relocatable"])
        check(f"{kind}: --relocatable gives the same object", read(rel) == read(objs["ours"]))
        defs = [f"-DENTRY_SECTION=\"llvm_offload_entries\"", f"-DPREFIX={kind}", "-DLLVM20",
                f"-DKIND={2 if kind == 'cuda' else 4}"]
        for lname, lflags in linkers:
            outs = {name: run_program(f"{kind}-{name}-{lname}", "gcc", None, lflags + defs,
                                      [os.path.join(HERE, "wrap_host_entries.c"),
                                       os.path.join(HERE, "wrap_stub_runtime.c"), obj], env)
                    for name, obj in objs.items()}
            same(f"{kind} ({lname})", outs["ours"], outs["llvm23"], wrap_fatbin.expected(kind, True))

        # Around the host object clang 23 compiles (its entries, names and stubs).
        host = S.path(f"clang23-{kind}-host.o")
        r = S.run([CLANG23] + wrap_fatbin.CLANG_HOST[kind] + ["-c", os.path.join(HERE, "wrap_clang_kernels.cu"),
                                                             "-o", host])
        check(f"{kind}: clang 23 compiles the host side of wrap_clang_kernels.cu", r.returncode == 0, r.stderr)
        if r.returncode != 0:
            continue
        for lname, lflags in linkers:
            outs = {name: run_program(f"clang23-{kind}-{name}-{lname}", "gcc", None,
                                      lflags + [f"-DPREFIX={kind}"] + (["-DHIP"] if kind == "hip" else []),
                                      [host, os.path.join(HERE, "wrap_clang_host.c"),
                                       os.path.join(HERE, "wrap_stub_runtime.c"), obj], env)
                    for name, obj in objs.items()}
            same(f"{kind} with clang 23's host object ({lname})", outs["ours"], outs["llvm23"],
                 wrap_fatbin.expected_clang(kind))


def sycl_expected(data):
    head = "".join(chr(c) if 0x20 <= c < 0x7f else "." for c in data[:16])
    n = len(data)
    return (f"register_lib call=1 size={n} bytes=ok head={head} same_as_registered=-\n"
            "main registered=yes\n"
            f"unregister_lib call=2 size={n} bytes=ok head={head} same_as_registered=yes\n")


def sycl_cases(linkers):
    write(S.path("raw.bin"), b"RAWIMAGE" + bytes(range(256)) * 3 + b"END")
    write(S.path("empty.bin"), b"")
    write(S.path("spirv.img"), b"\x03\x02\x23\x07 a SPIR-V module stand-in" * 9)
    r = S.run([f"{B23}/llvm-offload-binary", "-o", "obsycl.bin",
               "--image=file=spirv.img,triple=spirv64-unknown-unknown,arch=,kind=sycl"])
    check("llvm-offload-binary 23 makes a SYCL OffloadBinary", r.returncode == 0, r.stderr)
    # Sizes around LLVM's alignment rule (16 above 16 bytes, else [N x i8]'s: 4 on AArch64, else 1).
    write(S.path("small8.bin"), b"RAWIMAGE")
    write(S.path("small16.bin"), b"SIXTEEN BYTES..!")
    write(S.path("small17.bin"), b"SEVENTEEN BYTES..")
    cases = [("raw", ["raw.bin"]), ("offloadbinary", ["obsycl.bin"]), ("empty", ["empty.bin"]),
             ("two-inputs", ["raw.bin", "obsycl.bin"]), ("8-bytes", ["small8.bin"]), ("16-bytes", ["small16.bin"]),
             ("17-bytes", ["small17.bin"])]
    for triple, cc, runner, flags in ARCHES:
        arch = triple.split("-")[0]
        for name, inputs in cases:
            tag = f"sycl-{arch}-{name}"
            objs = {"ours": ours(f"ours-{tag}", "sycl", triple, inputs),
                    "llvm23": llvm23(f"llvm23-{tag}", "sycl", triple, inputs)}
            if len(inputs) == 1 and name != "empty":
                objs["native"] = native(f"native-{tag}", "sycl", triple, inputs)
            else:  # LLVM 23 wraps the first input, empty or not, and ignores the others: the native applet refuses
                r = S.run([OT, "wrap", "--kind", "sycl", "--target", triple, "-o", f"native-{tag}.o"] + inputs)
                said = "device image is empty" if name == "empty" else "exactly one image"
                check(f"{tag}: offloadtool wrap --kind sycl refuses it ({said}), one line, nothing written",
                      r.returncode == 1 and r.stderr.count("\n") == 1 and said in r.stderr
                      and not os.path.exists(S.path(f"native-{tag}.o")), r.stderr)
            secs = {k: elf_sections(v) for k, v in objs.items()}
            check(f"{tag}: the sections of 23's object", alloc_names(secs["ours"]) == alloc_names(secs["llvm23"]),
                  f"ours {alloc_names(secs['ours'])}\nLLVM {alloc_names(secs['llvm23'])}")
            for sec in (".llvm.offloading", ".init_array.1", ".fini_array.1"):
                o, l = secs["ours"].get(sec), secs["llvm23"].get(sec)
                # Type, alignment and size as LLVM's; flags too, but for the M (and entry size) that LLVM
                # gives an image of 4, 8, 16 or 32 bytes (a mergeable constant: nothing to merge it with).
                check(f"{tag}: {sec} as in 23's object",
                      o is not None and l is not None and (o[0], o[2], o[3]) == (l[0], l[2], l[3]) and
                      o[1] == l[1].replace("M", ""), f"ours {o}\nLLVM {l}")
            if name == "raw" and arch == "x86_64":
                ours_rel = ours(f"ours-{tag}-rel", "sycl", triple, inputs, ["--relocatable"])
                check(f"{tag}: --relocatable gives the same object", read(ours_rel) == read(objs["ours"]))
            env = {"WRAP_EXPECT_IMAGE": S.path(inputs[0])}
            for lname, lflags in linkers:
                outs = {k: run_program(f"{tag}-{k}-{lname}", cc, runner, flags + lflags,
                                       [os.path.join(HERE, "wrap_sycl_stub_runtime.c"), obj], env)
                        for k, obj in objs.items()}
                same(f"{tag} ({lname})", outs["ours"], outs["llvm23"], sycl_expected(read(S.path(inputs[0]))))
                if "native" in outs:
                    same(f"{tag} offloadtool wrap ({lname})", outs["native"], outs["llvm23"])


def relocatable_cases(linkers):
    write(S.path("omp.img"), b"\x7fELF an OpenMP device image stand-in" * 11)
    r = S.run([f"{B23}/llvm-offload-binary", "-o", "omp.bin",
               "--image=file=omp.img,triple=x86_64-pc-linux-gnu,arch=generic,kind=openmp"])
    check("llvm-offload-binary 23 makes an OpenMP OffloadBinary", r.returncode == 0, r.stderr)
    triple = "x86_64-unknown-linux-gnu"
    objs = {"ours": ours("ours-omp-rel", "openmp", triple, ["omp.bin"], ["--relocatable"]),
            "llvm23": llvm23("llvm23-omp-rel", "openmp", triple, ["omp.bin"], ["--relocatable"]),
            "native": native("native-omp-rel", "openmp", triple, ["omp.bin"], ["--relocatable"])}
    secs = {k: elf_sections(v) for k, v in objs.items()}
    sec = ".llvm.offloading.relocatable"
    check(f"OpenMP --relocatable: {sec} as in 23's object (type, flags, alignment, size)",
          secs["ours"].get(sec) is not None and secs["ours"].get(sec) == secs["llvm23"].get(sec),
          f"ours {secs['ours'].get(sec)}\nLLVM {secs['llvm23'].get(sec)}")
    check("OpenMP --relocatable: no .llvm.offloading, as in 23's object",
          ".llvm.offloading" not in secs["ours"] and ".llvm.offloading" not in secs["llvm23"])
    check("OpenMP --relocatable: the sections of 23's object",
          alloc_names(secs["ours"]) == alloc_names(secs["llvm23"]),
          f"ours {alloc_names(secs['ours'])}\nLLVM {alloc_names(secs['llvm23'])}")
    plain = ours("ours-omp", "openmp", triple, ["omp.bin"])
    check("OpenMP without --relocatable: .llvm.offloading", ".llvm.offloading" in elf_sections(plain))
    # Merged into the host's object with ld -r, then linked into a program.
    defs = ["-DENTRY_SECTION=\"llvm_offload_entries\"", "-DENTRY_SECTION_ID=llvm_offload_entries"]
    r = S.run(["gcc", "-O1", "-c"] + defs + [os.path.join(HERE, "wrap_omp_stub_runtime.c"), "-o", "omp-host.o"])
    check("the OpenMP host object compiles", r.returncode == 0, r.stderr)
    want = "\n".join(["register_lib images=1 entries=ok", "  image 0 bytes=ok aligned8=yes entries=ok", "main",
                      "unregister_lib images=1 entries=ok", "  image 0 bytes=ok aligned8=yes entries=ok"]) + "\n"
    for lname, lflags in linkers:
        outs = {}
        for k, obj in objs.items():
            merged = S.path(f"omp-rel-{k}-{lname}.o")
            r = S.run(["gcc", "-r", "-nostdlib"] + lflags + ["-o", merged, "omp-host.o", obj])
            check(f"OpenMP --relocatable {k}: ld -r ({lname})", r.returncode == 0, r.stderr)
            if r.returncode != 0:
                continue
            check(f"OpenMP --relocatable {k}: ld -r ({lname}) keeps {sec}",
                  elf_sections(merged).get(sec, ("",))[0] == secs[k][sec][0])
            outs[k] = run_program(f"omp-rel-{k}-{lname}", "gcc", None, lflags, [merged],
                                  {"WRAP_EXPECT_IMAGES": S.path("omp.img")})
        same(f"OpenMP --relocatable ({lname})", outs.get("ours"), outs.get("llvm23"), want)
        same(f"OpenMP --relocatable, offloadtool wrap ({lname})", outs.get("native"), outs.get("llvm23"))


def coff_cases():
    cases = [("cuda", ["app.fatbin"], []), ("hip", ["app.hipfb"], []), ("sycl", ["raw.bin"], []),
             ("sycl", ["small8.bin"], []), ("openmp", ["omp.bin"], ["--relocatable"])]
    for (kind, inputs, extra), triple in ((c, t) for t in WINDOWS for c in cases):
        tag = f"coff-{triple.split('-')[2]}-{kind}-{inputs[0].split('.')[0]}{'-rel' if extra else ''}"
        o = coff_sections(ours(f"ours-{tag}", kind, triple, inputs, extra))
        l = coff_sections(llvm23(f"llvm23-{tag}", kind, triple, inputs, extra))
        # LLVM's .rdata there holds the jump table of the CUDA/HIP registration loop's switch.
        ignored = IGNORED | ({".rdata"} if kind in ("cuda", "hip") else set())
        check(f"{tag}: the sections of 23's object", sorted(set(o) - ignored) == sorted(set(l) - ignored),
              f"ours {sorted(o)}\nLLVM {sorted(l)}")
        for name in l:
            if name.startswith((".llvm.offloading", ".CRT$", ".ctors", ".dtors")):
                check(f"{tag}: {name} characteristics as in 23's object", o.get(name) == l[name],
                      f"ours {o.get(name)} LLVM {l[name]}")


def cases(root):
    global S
    S = harness.Folder(path=root, text=True)
    os.symlink(OT, S.path("llvm-offload-wrapper-23"))
    linkers = harness.gcc_linkers(root, HOST_LLD)
    fatbin_cases(linkers)
    sycl_cases(linkers)
    relocatable_cases(linkers)
    coff_cases()


if __name__ == "__main__":
    sys.exit(harness.run_suite("wrap-llvm-23", cases, needs=NEEDS))
