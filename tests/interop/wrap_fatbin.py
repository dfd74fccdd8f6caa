#!/usr/bin/env python3
"""CUDA and HIP wrapper objects from `offloadtool wrap`, linked into a program
with a stand-in runtime (wrap_stub_runtime.c) that checks every registration
call: magic, version, the fat binary's bytes, every entry and the handle.
Runs for x86-64 (GNU ld and lld) and, with the Debian cross compilers and
qemu-user (needed: missing, the suite fails), for AArch64 and ppc64le under qemu.
The llvm-offload-wrapper personality (as llvm-offload-wrapper-22) against LLVM
22's own llvm-offload-wrapper compiled by clang-22: the same program prints the
same registrations with either object; as llvm-offload-wrapper-19 it registers
19's entries. Both again around a host object clang 22 compiled from
wrap_clang_kernels.cu as CUDA and as HIP (kernels, device, constant and
managed variables, a surface and a texture; wrap_clang_host.c names what each
entry must point at): the two programs print exactly the same."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import harness  # noqa: E402
from harness import LLD as LLD19, LLVM_BIN as LLVM19, OT, check, read, write  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
S = None  # the work folder, a harness.Folder

ARCHES = [
    # host triple, C compiler, runner, extra flags
    ("x86_64-unknown-linux-gnu", "gcc", None, []),
    ("aarch64-unknown-linux-gnu", "aarch64-linux-gnu-gcc", "qemu-aarch64", ["-static"]),
    ("powerpc64le-unknown-linux-gnu", "powerpc64le-linux-gnu-gcc", "qemu-ppc64le", ["-static"]),
]
LLVM22 = "/usr/lib/llvm-22/bin"
NEEDS = [f"{LLVM22}/llvm-offload-wrapper", f"{LLVM22}/clang", LLD19, f"{LLVM19}/clang-offload-bundler", f"{LLVM19}/llvm-readelf", f"{LLVM19}/llvm-objdump",
         f"{LLVM19}/llvm-objcopy"] + [t for _, cc, runner, _ in ARCHES for t in (cc, runner) if t]


def wrap(args):
    return S.run([OT, "wrap"] + args)


def expected(kind, llvm20):
    cuda = kind == "cuda"
    magic = "0x466243b1" if cuda else "0x48495046"
    lines = [f"RegisterFatBinary magic={magic} version=1 bytes=ok reserved=null aligned8=yes",
             "RegisterFunction h=ok name=kernel_a addr=ok same_name=yes limit=-1 nulls=ok",
             "RegisterVar h=ok name=var_x addr=ok same_name=yes extern=0 size=16 constant=0 global=0",
             "RegisterVar h=ok name=const_y addr=ok same_name=yes extern=1 size=4 constant=1 global=0"]
    if llvm20:
        lines.append("RegisterManagedVar h=ok name=managed_m addr=ok aux=ok size=4 align=16")
    if not cuda:  # LLVM (19 and 22) registers no surfaces or textures for CUDA
        lines.append("RegisterSurface h=ok name=surf_s addr=ok same_name=yes type=7 extern=1")
        lines.append("RegisterTexture h=ok name=tex_t addr=ok same_name=yes type=9 normalized=1 extern=0")
    lines.append("RegisterFunction h=ok name=kernel_b addr=ok same_name=yes limit=-1 nulls=ok")
    if cuda:
        lines.append("RegisterFatBinaryEnd h=ok")
    lines += ["main", "UnregisterFatBinary h=ok"]
    return "\n".join(lines) + "\n"


# clang 22 compiles the host side of CUDA and HIP without a CUDA or ROCm
# installation (the CUDA path named so that /usr/local/cuda is never found).
CLANG_HOST = {
    "cuda": ["-x", "cuda", "--offload-new-driver", "-fgpu-rdc", "--cuda-host-only", "-nocudainc", "-nocudalib",
             "--cuda-path=/nonexistent"],
    "hip": ["-x", "hip", "--offload-new-driver", "-fgpu-rdc", "--cuda-host-only", "-nogpuinc", "-nogpulib"],
}


def expected_clang(kind):
    """What the stand-in runtime prints for wrap_clang_kernels.cu: in the order
    of clang's entries, kernels, then variables; the managed variable only for
    HIP (clang ignores the attribute in CUDA); surfaces and textures only for
    HIP (LLVM 22's CUDA module does not register them)."""
    cuda = kind == "cuda"
    magic = "0x466243b1" if cuda else "0x48495046"
    lines = [f"RegisterFatBinary magic={magic} version=1 bytes=ok reserved=null aligned8=yes",
             "RegisterFunction h=ok name=_Z8kernel_aPii addr=ok same_name=yes limit=-1 nulls=ok",
             "RegisterFunction h=ok name=kernel_b addr=ok same_name=yes limit=-1 nulls=ok",
             "RegisterVar h=ok name=var_x addr=ok same_name=yes extern=0 size=16 constant=0 global=0",
             "RegisterVar h=ok name=const_y addr=ok same_name=yes extern=0 size=4 constant=1 global=0"]
    if cuda:
        lines.append("RegisterFatBinaryEnd h=ok")
    else:
        lines += ["RegisterManagedVar h=ok name=managed_m addr=ok aux=ok size=4 align=4",
                  "RegisterSurface h=ok name=surf_s addr=ok same_name=yes type=2 extern=0",
                  "RegisterTexture h=ok name=tex_t addr=ok same_name=yes type=2 normalized=1 extern=0"]
    lines += ["main", "UnregisterFatBinary h=ok"]
    return "\n".join(lines) + "\n"


def cases(root):
    global S
    S = harness.Folder(path=root, text=True)
    linkers = harness.gcc_linkers(root)

    # Inputs: a CUDA fat binary stand-in, and HIP device images bundled by
    # offloadtool (checked against clang-offload-bundler's bytes for the same inputs).
    write(S.path("app.fatbin"), bytes(range(256)) * 3 + b"CUDA-FATBIN-END")
    write(S.path("gfx906.co"), b"\x7fELF-amdgpu-gfx906-code-object" * 5)
    write(S.path("gfx90a.co"), b"\x7fELF-amdgpu-gfx90a-code-object" * 7)

    for triple, cc, runner, flags in ARCHES:
        arch = triple.split("-")[0]
        llvm_host = "x86_64-unknown-linux" if arch == "x86_64" else f"{arch}-unknown-linux"
        r = S.run([f"{LLVM19}/clang-offload-bundler", "-type=o", "-bundle-align=4096",
                   f"-targets=host-{llvm_host},hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa--gfx90a",
                   "-input=/dev/null", "-input=gfx906.co", "-input=gfx90a.co", f"-output=ref-{arch}.hipfb"])
        check(f"{arch}: clang-offload-bundler makes the reference HIP bundle", r.returncode == 0, r.stderr)
        for kind in ("cuda", "hip"):
            for llvm20 in (False, True):
                tag = f"{arch}-{kind}-{'llvm20' if llvm20 else 'llvm19'}"
                obj = S.path(f"{tag}.o")
                args = ["--kind", kind, "--target", triple]
                if llvm20:
                    args += ["--entries", "llvm20"]
                if kind == "cuda":
                    args += ["app.fatbin"]
                    fatbin = S.path("app.fatbin")
                else:
                    args += ["--offload-arch", "gfx906", "--offload-arch", "gfx90a", "gfx906.co", "gfx90a.co"]
                    fatbin = S.path(f"ref-{arch}.hipfb")
                r = wrap(args + ["-o", obj])
                check(f"{tag}: wrap exits 0", r.returncode == 0 and not r.stderr, r.stderr)
                if r.returncode != 0:
                    continue
                r2 = wrap(args + ["-o", obj + ".again"])
                check(f"{tag}: same inputs give the same bytes", r2.returncode == 0 and read(obj) == read(obj + ".again"))
                harness.check_reader_clean(tag, [f"{LLVM19}/llvm-readelf", "-a", "--wide", obj])
                dis = harness.check_reader_clean(tag, [f"{LLVM19}/llvm-objdump", "-dr", obj])
                check(f"{tag}: disassembly has no unknown instructions", "<unknown>" not in dis and "(bad)" not in dis,
                      dis[-3000:])
                section = "llvm_offload_entries" if llvm20 else f"{kind}_offloading_entries"
                defs = [f"-DENTRY_SECTION=\"{section}\"", f"-DPREFIX={kind}"]
                if llvm20:
                    defs += ["-DLLVM20", f"-DKIND={2 if kind == 'cuda' else 4}"]
                for lname, lflags in linkers:
                    exe = S.path(f"{tag}-{lname}")
                    r = S.run([cc, "-O1"] + flags + lflags + defs + ["-o", exe, os.path.join(HERE, "wrap_host_entries.c"),
                                                                      os.path.join(HERE, "wrap_stub_runtime.c"), obj])
                    check(f"{tag}: links with {lname}", r.returncode == 0, r.stderr)
                    if r.returncode != 0:
                        continue
                    r = S.run(([runner] if runner else []) + [exe], env={"WRAP_EXPECT_FATBIN": fatbin})
                    want = expected(kind, llvm20)
                    check(f"{tag} ({lname}): every registration call is right", r.returncode == 0 and r.stdout == want,
                          f"rc={r.returncode}\n--- got\n{r.stdout}{r.stderr}--- want\n{want}")

    # A ready HIP bundle (clang-offload-bundler's) is wrapped as is.
    if os.path.exists(S.path("ref-x86_64.hipfb")):
        obj = S.path("ready-hip.o")
        r = wrap(["--kind=hip", "--target=x86_64-unknown-linux-gnu", "-o", obj, "ref-x86_64.hipfb"])
        check("ready HIP bundle: wrap exits 0", r.returncode == 0, r.stderr)
        exe = S.path("ready-hip")
        r = S.run(["gcc", "-DENTRY_SECTION=\"hip_offloading_entries\"", "-DPREFIX=hip", "-o", exe,
                   os.path.join(HERE, "wrap_host_entries.c"), os.path.join(HERE, "wrap_stub_runtime.c"), obj])
        check("ready HIP bundle: links", r.returncode == 0, r.stderr)
        r = S.run([exe], env={"WRAP_EXPECT_FATBIN": S.path("ref-x86_64.hipfb")})
        check("ready HIP bundle: registered bytes are the bundle", r.stdout == expected("hip", False), r.stdout)

    # Device images bundled and compressed here: the same bytes as clang-offload-bundler -compress.
    r = S.run([f"{LLVM19}/clang-offload-bundler", "-compress", "-type=o", "-bundle-align=4096",
               "-targets=host-x86_64-unknown-linux,hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa--gfx90a",
               "-input=/dev/null", "-input=gfx906.co", "-input=gfx90a.co", "-output=ref-z.hipfb"])
    check("clang-offload-bundler makes the compressed reference bundle", r.returncode == 0, r.stderr)
    obj = S.path("hip-z.o")
    r = wrap(["--kind=hip", "--compress", "--target=x86_64-unknown-linux-gnu", "--offload-arch=gfx906",
              "--offload-arch=gfx90a", "-o", obj, "gfx906.co", "gfx90a.co"])
    check("compressed HIP bundle: wrap exits 0", r.returncode == 0, r.stderr)
    r = S.run([f"{LLVM19}/llvm-objcopy", "-O", "binary", "--only-section=.hip_fatbin", obj, "hip-z.bin"])
    check("compressed HIP bundle: the same bytes as clang-offload-bundler -compress",
          r.returncode == 0 and read(S.path("hip-z.bin")) == read(S.path("ref-z.hipfb")), r.stderr)
    exe = S.path("hip-z")
    r = S.run(["gcc", "-DENTRY_SECTION=\"hip_offloading_entries\"", "-DPREFIX=hip", "-o", exe,
               os.path.join(HERE, "wrap_host_entries.c"), os.path.join(HERE, "wrap_stub_runtime.c"), obj])
    check("compressed HIP bundle: links", r.returncode == 0, r.stderr)
    r = S.run([exe], env={"WRAP_EXPECT_FATBIN": S.path("ref-z.hipfb")})
    check("compressed HIP bundle: registered", r.stdout == expected("hip", False), r.stdout + r.stderr)

    # llvm-offload-wrapper: ours against LLVM 22's (its bitcode compiled by
    # clang-22), the same program and stand-in runtime linked with each.
    if not os.path.exists(S.path("ref-x86_64.hipfb")):
        return
    for release in ("22", "19"):
        os.symlink(OT, S.path(f"llvm-offload-wrapper-{release}"))
    triple = "x86_64-unknown-linux-gnu"
    for kind, fatbin in (("cuda", "app.fatbin"), ("hip", "ref-x86_64.hipfb")):
        kind_no = 2 if kind == "cuda" else 4
        objs = {}
        r = S.run([f"{LLVM22}/llvm-offload-wrapper", f"--kind={kind}", f"--triple={triple}", "-o", f"ref22-{kind}.bc",
                   fatbin])
        r2 = S.run([f"{LLVM22}/clang", "-c", "-fPIC", f"ref22-{kind}.bc", "-o", f"ref22-{kind}.o"])
        check(f"{kind}: LLVM 22's llvm-offload-wrapper module compiles", r.returncode == 0 and r2.returncode == 0,
              r.stderr + r2.stderr)
        objs["llvm22"] = (S.path(f"ref22-{kind}.o"), True)
        for release in ("22", "19"):
            obj = S.path(f"low{release}-{kind}.o")
            r = S.run([S.path(f"llvm-offload-wrapper-{release}"), f"--kind={kind}", f"--triple={triple}", "-o", obj,
                       fatbin])
            check(f"{kind}: llvm-offload-wrapper-{release} exits 0 silently", r.returncode == 0 and not r.stderr,
                  r.stderr)
            objs[f"ours{release}"] = (obj, release == "22")
        outs = {}
        for name, (obj, v1) in objs.items():
            section = "llvm_offload_entries" if v1 else f"{kind}_offloading_entries"
            defs = [f"-DENTRY_SECTION=\"{section}\"", f"-DPREFIX={kind}"]
            if v1:
                defs += ["-DLLVM20", f"-DKIND={kind_no}"]
            exe = S.path(f"low-{name}-{kind}")
            r = S.run(["gcc", "-O1"] + defs + ["-o", exe, os.path.join(HERE, "wrap_host_entries.c"),
                                               os.path.join(HERE, "wrap_stub_runtime.c"), obj])
            check(f"{kind} {name}: links", r.returncode == 0, r.stderr)
            if r.returncode != 0:
                continue
            r = S.run([exe], env={"WRAP_EXPECT_FATBIN": S.path(fatbin)})
            outs[name] = r.stdout
            want = expected(kind, v1)
            check(f"{kind} {name}: every registration call is right", r.returncode == 0 and r.stdout == want,
                  f"rc={r.returncode}\n--- got\n{r.stdout}{r.stderr}--- want\n{want}")
        check(f"{kind}: llvm-offload-wrapper-22's object registers what LLVM 22's does",
              outs.get("ours22") is not None and outs.get("ours22") == outs.get("llvm22"),
              f"--- ours\n{outs.get('ours22')}--- LLVM 22\n{outs.get('llvm22')}")

        # The same two wrapper objects around a host object clang 22 compiled
        # itself (its entries, names and stubs, not hand-written ones).
        host = S.path(f"clang22-{kind}-host.o")
        r = S.run([f"{LLVM22}/clang"] + CLANG_HOST[kind] + ["-c", os.path.join(HERE, "wrap_clang_kernels.cu"),
                                                             "-o", host])
        check(f"{kind}: clang 22 compiles the host side of wrap_clang_kernels.cu", r.returncode == 0, r.stderr)
        if r.returncode != 0:
            continue
        for lname, lflags in linkers:
            clang_outs = {}
            for name in ("llvm22", "ours22"):
                exe = S.path(f"clang22-{kind}-{name}-{lname}")
                r = S.run(["gcc", "-O1", f"-DPREFIX={kind}"] + (["-DHIP"] if kind == "hip" else []) + lflags +
                          ["-o", exe, host, os.path.join(HERE, "wrap_clang_host.c"),
                           os.path.join(HERE, "wrap_stub_runtime.c"), objs[name][0]])
                check(f"{kind} {name}: links with clang 22's host object ({lname})", r.returncode == 0, r.stderr)
                if r.returncode != 0:
                    continue
                r = S.run([exe], env={"WRAP_EXPECT_FATBIN": S.path(fatbin)})
                clang_outs[name] = r.stdout
                want = expected_clang(kind)
                check(f"{kind} {name} ({lname}): registers clang 22's kernels and variables",
                      r.returncode == 0 and r.stdout == want,
                      f"rc={r.returncode}\n--- got\n{r.stdout}{r.stderr}--- want\n{want}")
            check(f"{kind} ({lname}): with clang 22's host object, llvm-offload-wrapper-22's program prints what "
                  "LLVM 22's does",
                  clang_outs.get("ours22") is not None and clang_outs.get("ours22") == clang_outs.get("llvm22"),
                  f"--- ours\n{clang_outs.get('ours22')}--- LLVM 22\n{clang_outs.get('llvm22')}")


if __name__ == "__main__":
    sys.exit(harness.run_suite("wrap-fatbin", cases, needs=NEEDS))
