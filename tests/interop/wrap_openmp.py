#!/usr/bin/env python3
"""OpenMP wrapper objects from `offloadtool wrap` and the clang-offload-wrapper
personality.

1. Real runtime (x86-64): a program compiled by clang 19 with
   -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -c; its device image is
   extracted with clang-offload-packager and linked into a shared object as
   clang-linker-wrapper would; the program is linked with OUR wrapper object
   and LLVM 19's libomptarget (GNU ld and lld) and its target regions must run
   on the host device with the right result. Both schemes, several images with
   --offload-arch, an input that already is an OffloadBinary, the personality.
2. Stand-in runtime (x86-64, and AArch64/ppc64le under qemu):
   checks the descriptor, every image's bytes, the entry bounds and the
   __tgt_register_image_info records; without a definition of that weak
   function the program still links and runs.
3. The symbols of the LLVM 14 scheme match what clang-offload-wrapper 14 + llc
   produce for the same inputs."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import harness  # noqa: E402
from harness import LLD as LLD19, LLVM14_WRAPPER as W14, LLVM_BIN as LLVM19, OT, check, llvm14, read, write  # noqa: E402,E501

HERE = os.path.dirname(os.path.abspath(__file__))
S = None  # the work folder, a harness.Folder
CLANG = f"{LLVM19}/clang"
LIBDIR = "/usr/lib/llvm-19/lib"
RUN_ENV = {"LD_LIBRARY_PATH": LIBDIR, "OMP_TARGET_OFFLOAD": "MANDATORY"}
ARCHES = [
    ("x86_64-unknown-linux-gnu", "gcc", None, []),
    ("aarch64-unknown-linux-gnu", "aarch64-linux-gnu-gcc", "qemu-aarch64", ["-static"]),
    ("powerpc64le-unknown-linux-gnu", "powerpc64le-linux-gnu-gcc", "qemu-ppc64le", ["-static"]),
]
NEEDS = [CLANG, LLD19, f"{LIBDIR}/libomptarget.so", W14, llvm14("llc")] + [
    f"{LLVM19}/{t}" for t in ("clang-offload-packager", "llvm-readelf", "llvm-objdump", "llvm-nm")] + [
    t for _, cc, runner, _ in ARCHES for t in (cc, runner) if t]
images = ["img0.bin", "img1.bin", "img2.bin"]
archs = ["gfx906", "gfx90a:sramecc+:xnack-", "sm_70"]


def wrap(args):
    return S.run([OT, "wrap"] + args)


def expected(n, info_defined, with_arch):
    lines = []
    if info_defined and with_arch:
        lines += [f"register_image_info version=1 number={i} count={n} arch={archs[i]} opts=null before_lib=yes"
                  for i in range(n)]
    body = [f"  image {i} bytes=ok aligned8=yes entries=ok" for i in range(n)]
    return "\n".join(lines + [f"register_lib images={n} entries=ok"] + body + ["main"] +
                     [f"unregister_lib images={n} entries=ok"] + body) + "\n"


def cases(root):
    global S
    S = harness.Folder(path=root, text=True)
    LINKERS = harness.gcc_linkers(root)

    # ---------------------------------------------------------------------------
    # 1. clang 19 + libomptarget 19
    # ---------------------------------------------------------------------------
    src = os.path.join(HERE, "wrap_openmp_target.c")
    r = S.run([CLANG, "-O1", "-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", "-c", src, "-o", "host.o"])
    check("clang 19 compiles the OpenMP program", r.returncode == 0, r.stderr)
    r = S.run([f"{LLVM19}/clang-offload-packager", "host.o", "--image=file=dev.o,triple=x86_64-pc-linux-gnu"])
    check("clang-offload-packager extracts the device image", r.returncode == 0 and os.path.exists(S.path("dev.o")),
          r.stderr)
    # The device link clang-linker-wrapper runs for a host-offloading image.
    r = S.run([CLANG, "--target=x86_64-pc-linux-gnu", "-O2", "-Wl,--no-undefined", "dev.o", "-Wl,-Bsymbolic",
               "-shared", "-lomp", "-lomptarget", f"-L{LIBDIR}", "-o", "dev.so"])
    check("the device image links into a shared object", r.returncode == 0, r.stderr)
    write(S.path("other.img"), b"an image for another device: never loaded")
    # The same device shared object as an OffloadBinary made by clang-offload-packager.
    r = S.run([f"{LLVM19}/clang-offload-packager", "-o", "dev.bin",
               "--image=file=dev.so,triple=x86_64-pc-linux-gnu,arch=x86-64,kind=openmp"])
    check("clang-offload-packager packs the device shared object", r.returncode == 0, r.stderr)

    wraps = [
        ("llvm19", ["--scheme=llvm19", "dev.so"]),
        ("llvm14", ["--scheme=llvm14", "dev.so"]),
        ("llvm19-offloadbinary", ["dev.bin"]),
        ("llvm14-multi-arch", ["--scheme=llvm14", "--offload-arch=gfx90a:xnack+", "--offload-arch=x86-64",
                               "other.img", "dev.so"]),
        ("llvm19-multi-arch", ["--offload-arch=gfx90a:xnack+", "--offload-arch=x86-64", "other.img", "dev.so"]),
    ]
    for name, args in wraps:
        obj = S.path(f"omp-{name}.o")
        r = wrap(["--target=x86_64-pc-linux-gnu", "-o", obj] + args)
        check(f"{name}: wrap exits 0 silently", r.returncode == 0 and not r.stderr and not r.stdout, r.stderr)
        if r.returncode != 0:
            continue
        harness.check_reader_clean(name, [f"{LLVM19}/llvm-readelf", "-a", "--wide", obj])
        harness.check_reader_clean(name, [f"{LLVM19}/llvm-objdump", "-dr", obj])
        if "multi-arch" in name:
            out = harness.check_reader_clean(name, [f"{LLVM19}/llvm-readelf", "-p", ".offload_arch_list", obj])
            check(f"{name}: .offload_arch_list holds the target IDs",
                  re.findall(r"\]\s+(\S+)", out) == ["gfx90a:xnack+", "x86-64"], out)
        for lname, lflags in LINKERS:
            exe = S.path(f"omp-{name}-{lname}")
            r = S.run(["gcc"] + lflags + ["host.o", obj, "-o", exe, f"-L{LIBDIR}", "-lomp", "-lomptarget",
                                          f"-Wl,-rpath,{LIBDIR}"])
            check(f"{name}: links with {lname} and libomptarget 19", r.returncode == 0, r.stderr)
            if r.returncode != 0:
                continue
            r = S.run([exe], env=RUN_ENV)
            check(f"{name} ({lname}): target regions run on the host device",
                  r.returncode == 0 and r.stdout == "sum=97920 initial_device=0\n",
                  f"rc={r.returncode}\n{r.stdout}{r.stderr[-2000:]}")

    # The personality, installed under LLVM's name.
    link = S.path("clang-offload-wrapper")
    os.symlink(OT, link)
    r = S.run([link, "-target=x86_64-pc-linux-gnu", "-o", "pers.o", "--offload-arch=x86-64", "dev.so"])
    check("clang-offload-wrapper personality exits 0", r.returncode == 0 and not r.stderr, r.stderr)
    r = S.run(["gcc", "host.o", "pers.o", "-o", "pers", f"-L{LIBDIR}", "-lomp", "-lomptarget",
               f"-Wl,-rpath,{LIBDIR}"])
    check("personality object links", r.returncode == 0, r.stderr)
    r = S.run([S.path("pers")], env=RUN_ENV)
    check("personality object: target regions run", r.stdout == "sum=97920 initial_device=0\n", r.stdout + r.stderr)
    r = S.run([link, "--help"])
    check("personality --help says it writes an object, not bitcode",
          r.returncode == 0 and "writes a host object file" in r.stdout and "not LLVM bitcode" in r.stdout, r.stdout)

    # Same symbols as clang-offload-wrapper 14 + llc 14 for the same inputs.
    r1 = S.run([W14, "-target=x86_64-pc-linux-gnu", "-o", "ref14.bc", "other.img", "dev.so"])
    r2 = S.run([llvm14("llc"), "-filetype=obj", "-relocation-model=pic", "ref14.bc", "-o", "ref14.o"])
    r3 = wrap(["--scheme=llvm14", "--target=x86_64-pc-linux-gnu", "-o", "ours14.o", "other.img", "dev.so"])
    ok = r1.returncode == 0 and r2.returncode == 0 and r3.returncode == 0
    check("reference LLVM 14 wrapper object built", ok, r1.stderr + r2.stderr + r3.stderr)
    if ok:
        def syms(path):
            out = S.run([f"{LLVM19}/llvm-nm", path]).stdout
            return sorted(line.split()[-1] + ":" + line.split()[-2] for line in out.splitlines())
        check("LLVM 14 scheme: the same symbols and kinds as clang-offload-wrapper 14",
              syms(S.path("ours14.o")) == syms(S.path("ref14.o")),
              f"ours {syms(S.path('ours14.o'))}\nref  {syms(S.path('ref14.o'))}")
        def sections(path):
            out = S.run([f"{LLVM19}/llvm-readelf", "-S", "--wide", path]).stdout
            names = re.findall(r"\]\s+(\S+)\s+(\S+)", out)
            return sorted(n for n in names if not n[0].startswith((".rela", ".eh_frame", ".text", ".strtab",
                                                                   ".symtab")) and n[0] != "NULL")
        check("LLVM 14 scheme: the same data sections as clang-offload-wrapper 14 (.text.startup aside)",
              sections(S.path("ours14.o")) == sections(S.path("ref14.o")),
              f"ours {sections(S.path('ours14.o'))}\nref  {sections(S.path('ref14.o'))}")

    # ---------------------------------------------------------------------------
    # 2. Stand-in runtime on every code generator
    # ---------------------------------------------------------------------------
    write(S.path("img0.bin"), b"\x01first device image\x00" * 9)
    write(S.path("img1.bin"), b"second device image, a little longer\x00" * 11)
    write(S.path("img2.bin"), b"3")

    for triple, cc, runner, flags in ARCHES:
        arch = triple.split("-")[0]
        for scheme in ("llvm14", "llvm19"):
            for entries in ("llvm19", "llvm20"):
                for with_arch in (False, True):
                    tag = f"{arch}-{scheme}-{entries}{'-arch' if with_arch else ''}"
                    obj = S.path(f"{tag}.o")
                    args = ["--target", triple, f"--scheme={scheme}", f"--entries={entries}"]
                    if with_arch:
                        args += [f"--offload-arch={a}" for a in archs]
                    r = wrap(args + ["-o", obj] + images)
                    check(f"{tag}: wrap exits 0", r.returncode == 0 and not r.stderr, r.stderr)
                    if r.returncode != 0:
                        continue
                    r2 = wrap(args + ["-o", obj + ".2"] + images)
                    check(f"{tag}: same inputs give the same bytes", r2.returncode == 0 and read(obj) == read(obj + ".2"))
                    harness.check_reader_clean(tag, [f"{LLVM19}/llvm-readelf", "-a", "--wide", obj])
                    dis = harness.check_reader_clean(tag, [f"{LLVM19}/llvm-objdump", "-dr", obj])
                    check(f"{tag}: disassembly has no unknown instructions", "<unknown>" not in dis, dis[-2000:])
                    section = "llvm_offload_entries" if entries == "llvm20" else "omp_offloading_entries"
                    for info_defined in (False, True) if with_arch else (False,):
                        for lname, lflags in LINKERS:
                            exe = S.path(f"{tag}-{lname}-{info_defined}")
                            defs = [f"-DENTRY_SECTION=\"{section}\"", f"-DENTRY_SECTION_ID={section}"]
                            if info_defined:
                                defs.append("-DWITH_IMAGE_INFO")
                            r = S.run([cc] + flags + lflags + defs + ["-o", exe, os.path.join(HERE, "wrap_omp_stub_runtime.c"),
                                                                      obj])
                            check(f"{tag}: links with {lname}", r.returncode == 0, r.stderr)
                            if r.returncode != 0:
                                continue
                            r = S.run(([runner] if runner else []) + [exe],
                                      env={"WRAP_EXPECT_IMAGES": ":".join(S.path(i) for i in images)})
                            want = expected(len(images), info_defined, with_arch)
                            check(f"{tag} ({lname}, image_info {'defined' if info_defined else 'absent'}): registration",
                                  r.returncode == 0 and r.stdout == want,
                                  f"rc={r.returncode}\n--- got\n{r.stdout}{r.stderr}--- want\n{want}")


if __name__ == "__main__":
    sys.exit(harness.run_suite("wrap-openmp", cases, needs=NEEDS))
