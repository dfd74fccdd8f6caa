#!/usr/bin/env python3
"""OpenMP wrapper objects from `offloadtool wrap`, the clang-offload-wrapper
personality and the llvm-offload-wrapper personality, for the suite's release
(OT_LLVM_RELEASE: 19, and 22 in the second registration, wrap-openmp-22).

1. Real runtime (x86-64): a program compiled by clang 19 (22) with
   -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -c; its device image is
   extracted with clang-offload-packager and linked into a shared object as
   clang-linker-wrapper would; the program is linked with OUR wrapper object
   and LLVM 19's (22's) libomptarget (GNU ld and lld) and its target regions must
   run on the host device with the right result. Both schemes, several images with
   --offload-arch, an input that already is an OffloadBinary, both personalities,
   each with the release's default entry ABI. As 22, LLVM's own llvm-offload-wrapper
   output compiled by clang-22 runs first (the reference flow). offloadtool as
   the release's packager packs LLVM's bytes, and that OffloadBinary wrapped
   by our llvm-offload-wrapper runs too. clang 22 needs
   its omp.h from libomp-22-dev, unpacked by scripts/fetch-libomp22 (missing:
   the suite fails); the library itself is libomp5-19's libomp.so.5.
Parts 2 and 3 are release-independent (explicit --entries, LLVM 14 references)
and run in the release-19 registration only; the 22 run says so.
2. Stand-in runtime (x86-64, and AArch64/ppc64le under qemu):
   checks the descriptor, every image's bytes, the entry bounds and the
   __tgt_register_image_info records; without a definition of that weak
   function the program still links and runs.
3. The symbols of the LLVM 14 scheme match what clang-offload-wrapper 14 + llc
   produce for the same inputs.
As wrap-openmp-23, part 1 with clang 23, LLVM 23's packager (an OffloadBinary
of version 2), LLVM 23's llvm-offload-wrapper first (the reference flow) and
libomptarget 23, Debian sid's in scripts/fetch-llvm23's chroot: clang 23 links
(GNU ld and lld) and the programs run there (harness.in_llvm23_chroot)."""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import harness  # noqa: E402
from harness import LLD as LLD19, LLVM14_WRAPPER as W14, LLVM_BIN as LLVM19, OT, check, llvm14, read, write  # noqa: E402,E501

HERE = os.path.dirname(os.path.abspath(__file__))
S = None  # the work folder, a harness.Folder
R = harness.RELEASE
R23 = R == "23"
CLANG = f"{LLVM19}/clang"  # LLVM19: the suite release's tools (22 in wrap-openmp-22)
LIBDIR = f"/usr/lib/llvm-{R}/lib"  # libomptarget
# libomp.so: libomp5-19's, also 22's (scripts/fetch-libomp22); 23's is libomp-23-dev's, in the chroot
OMPLIB = LIBDIR if R23 else "/usr/lib/llvm-19/lib"
HOST_VIEW = harness.LLVM23_ROOT if R23 else ""  # where the libraries are seen from here
LINK_CC = CLANG if R23 else "gcc"  # 23: programs against sid's glibc and libomptarget 23
OMP22_INCLUDE = harness.OMP22_INCLUDE
CFLAGS = ["-isystem", OMP22_INCLUDE] if R == "22" else []
PACKAGER = f"{LLVM19}/clang-offload-packager" if R == "19" else f"{LLVM19}/llvm-offload-binary"
LIBS = [f"-L{LIBDIR}", f"-L{OMPLIB}", "-lomp", "-lomptarget", f"-Wl,-rpath,{LIBDIR}", f"-Wl,-rpath,{OMPLIB}"]
RUN_ENV = {"LD_LIBRARY_PATH": f"{LIBDIR}:{OMPLIB}", "OMP_TARGET_OFFLOAD": "MANDATORY"}
ARCHES = [
    ("x86_64-unknown-linux-gnu", "gcc", None, []),
    ("aarch64-unknown-linux-gnu", "aarch64-linux-gnu-gcc", "qemu-aarch64", ["-static"]),
    ("powerpc64le-unknown-linux-gnu", "powerpc64le-linux-gnu-gcc", "qemu-ppc64le", ["-static"]),
]
NEEDS = [CLANG, LLD19, PACKAGER, f"{HOST_VIEW}{LIBDIR}/libomptarget.so", f"{HOST_VIEW}{OMPLIB}/libomp.so", W14,
         llvm14("llc")] + [
    f"{LLVM19}/{t}" for t in ("llvm-readelf", "llvm-objdump", "llvm-nm")] + [
    t for _, cc, runner, _ in ARCHES for t in (cc, runner) if t] + (
    [os.path.join(OMP22_INCLUDE, "omp.h")] if R == "22" else []) + (
    [f"{LLVM19}/llvm-offload-wrapper"] if R != "19" else [])
RUN_OK = "sum=97920 initial_device=0\n"
images = ["img0.bin", "img1.bin", "img2.bin"]
archs = ["gfx906", "gfx90a:sramecc+:xnack-", "sm_70"]


def run_exe(exe, env):
    if R23:
        return harness.in_llvm23_chroot([exe], S.dir, env=env, text=True)
    return S.run([exe], env=env)


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
    # 1. clang + libomptarget of the suite's release (19 or 22)
    # ---------------------------------------------------------------------------
    src = os.path.join(HERE, "wrap_openmp_target.c")
    r = S.run([CLANG, "-O1", "-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu"] + CFLAGS +
              ["-c", src, "-o", "host.o"])
    check(f"clang {R} compiles the OpenMP program", r.returncode == 0, r.stderr)
    r = S.run([PACKAGER, "host.o", "--image=file=dev.o,triple=x86_64-pc-linux-gnu"])
    check("the packager extracts the device image", r.returncode == 0 and os.path.exists(S.path("dev.o")),
          r.stderr)
    # The device link clang-linker-wrapper runs for a host-offloading image.
    r = S.run([CLANG, "--target=x86_64-pc-linux-gnu", "-O2", "-Wl,--no-undefined", "dev.o", "-Wl,-Bsymbolic",
               "-shared", "-o", "dev.so"] + LIBS)
    check("the device image links into a shared object", r.returncode == 0, r.stderr)
    write(S.path("other.img"), b"an image for another device: never loaded")
    # The same device shared object as an OffloadBinary made by the packager.
    r = S.run([PACKAGER, "-o", "dev.bin",
               "--image=file=dev.so,triple=x86_64-pc-linux-gnu,arch=x86-64,kind=openmp"])
    check("the packager packs the device shared object", r.returncode == 0, r.stderr)
    # offloadtool as the release's packager (23: version 2) packs the same bytes: a program packed and wrapped
    # by offloadtool alone runs below.
    our_packager = S.path(os.path.basename(PACKAGER))
    os.symlink(OT, our_packager)
    r = S.run([our_packager, "-o", "dev-ours.bin",
               "--image=file=dev.so,triple=x86_64-pc-linux-gnu,arch=x86-64,kind=openmp"])
    check("offloadtool's packager packs the device shared object into LLVM's bytes",
          r.returncode == 0 and read(S.path("dev-ours.bin")) == read(S.path("dev.bin")), r.stderr)

    def runs(name, obj, want=RUN_OK):
        """Links host.o with the wrapper object `obj` and the release's libomptarget; runs it."""
        exe = S.path(f"run-{name}")
        # clang reads a .bc input as bitcode: the object goes to the linker as it is
        r = S.run([LINK_CC, "host.o", "-Wl," + obj if R23 and obj.endswith(".bc") else obj, "-o", exe] + LIBS)
        check(f"{name}: links with libomptarget {R}", r.returncode == 0, r.stderr)
        if r.returncode == 0:
            r = run_exe(exe, RUN_ENV)
            check(f"{name}: target regions run on the host device", r.returncode == 0 and r.stdout == want,
                  f"rc={r.returncode}\n{r.stdout}{r.stderr[-2000:]}")

    if R != "19":
        # The reference flow: LLVM 22's (23's) own llvm-offload-wrapper, compiled by clang-22 (23).
        for name, inp in ((f"llvm{R}-wrapper-offloadbinary", "dev.bin"), (f"llvm{R}-wrapper-raw", "dev.so")):
            r = S.run([f"{LLVM19}/llvm-offload-wrapper", "--kind=openmp", "--triple=x86_64-pc-linux-gnu",
                       "-o", f"{name}.bc", inp])
            r2 = S.run([CLANG, "-c", f"{name}.bc", "-o", f"{name}.o"])
            check(f"{name}: LLVM {R}'s wrapper module compiles", r.returncode == 0 and r2.returncode == 0,
                  r.stderr + r2.stderr)
            runs(name, S.path(f"{name}.o"))

    # The llvm-offload-wrapper personality: an OffloadBinary (image = its inner
    # image) and the raw shared object (image = the whole input).
    low = S.path("llvm-offload-wrapper")
    os.symlink(OT, low)
    for name, inp in (("llvm-offload-wrapper-offloadbinary", "dev.bin"), ("llvm-offload-wrapper-raw", "dev.so"),
                      ("llvm-offload-wrapper-our-offloadbinary", "dev-ours.bin")):
        r = S.run([low, "--kind=openmp", "--triple=x86_64-pc-linux-gnu", "-o", f"{name}.o", inp])
        check(f"{name}: exits 0 silently", r.returncode == 0 and not r.stderr and not r.stdout, r.stderr)
        runs(name, S.path(f"{name}.o"))
    # Several inputs, one image each; the default triple is the host's.
    r = S.run([low, "--kind=openmp", "-o", "low-multi.o", "other.img", "dev.bin"])
    check("llvm-offload-wrapper: several inputs", r.returncode == 0 and not r.stderr, r.stderr)
    runs("llvm-offload-wrapper-multi", S.path("low-multi.o"))
    # -o x.bc: one note on stderr, the file is an object all the same.
    r = S.run([low, "--kind=openmp", "-o", "low.bc", "dev.bin"])
    check("llvm-offload-wrapper -o low.bc: one note line that it is an object",
          r.returncode == 0 and r.stderr.count("\n") == 1 and "note:" in r.stderr and "object" in r.stderr, r.stderr)
    runs("llvm-offload-wrapper-bc-name", S.path("low.bc"))
    # -o - is a file named '-', as in LLVM 22.
    r = S.run([low, "--kind=openmp", "-o", "-", "dev.bin"])
    check("llvm-offload-wrapper -o -: a file named '-', nothing on stdout",
          r.returncode == 0 and not r.stdout and read(S.path("-"))[:4] == b"\x7fELF", r.stderr)

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
            r = S.run([LINK_CC] + lflags + ["host.o", obj, "-o", exe] + LIBS)
            check(f"{name}: links with {lname} and libomptarget {R}", r.returncode == 0, r.stderr)
            if r.returncode != 0:
                continue
            r = run_exe(exe, RUN_ENV)
            check(f"{name} ({lname}): target regions run on the host device",
                  r.returncode == 0 and r.stdout == RUN_OK,
                  f"rc={r.returncode}\n{r.stdout}{r.stderr[-2000:]}")

    # The personality, installed under LLVM's name.
    link = S.path("clang-offload-wrapper")
    os.symlink(OT, link)
    r = S.run([link, "-target=x86_64-pc-linux-gnu", "-o", "pers.o", "--offload-arch=x86-64", "dev.so"])
    check("clang-offload-wrapper personality exits 0", r.returncode == 0 and not r.stderr, r.stderr)
    runs("clang-offload-wrapper personality", S.path("pers.o"))
    r = S.run([link, "--help"])
    check("personality --help says it writes an object, not bitcode",
          r.returncode == 0 and "writes a host object file" in r.stdout and "not LLVM bitcode" in r.stdout, r.stdout)

    if R != "19":
        print(f"parts 2 and 3 (stand-in runtimes, LLVM 14 symbols) are release-independent: "
              f"run by the release-19 registration (wrap-openmp), not as {R}")
        return
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
    sys.exit(harness.run_suite("wrap-openmp" + ("" if R == "19" else "-" + R), cases, needs=NEEDS))
