#!/usr/bin/env python3
"""Object bundles (-type=o with an object host) against LLVM 19.

For every target: compile a small C file with clang 19, bundle it with two
device inputs through `$OFFLOADTOOL clang-offload-bundler` and through LLVM's
clang-offload-bundler, then check that
  * -list is the same whichever tool lists whichever fat object,
  * unbundling either fat object with either tool gives the device inputs back
    byte for byte,
  * the host unbundled (stripped) by us has the same sections, contents,
    symbols, relocations and groups as the one LLVM's bundler gives (offsets
    and rebuilt string tables aside), and bundling then stripping gives back
    the exact bytes clang wrote,
  * llvm-readelf / llvm-readobj / llvm-objdump print no warnings for our fat
    and stripped objects,
  * both link into an executable with a main (ld.lld 19 / lld-link 19, and GNU
    ld where it supports the target), without the bundle sections.
Needs OFFLOADTOOL; LLVM_BIN defaults to /usr/lib/llvm-19/bin. Standard library only.
As object-bundle-23 (LLVM 23, in scripts/fetch-llvm23's chroot), whose
object layouts are 22's (docs/llvm23.md), for fewer targets (a 64- and a
32-bit little-endian ELF, a 64- and a 32-bit big-endian one, COFF x86_64) and
hosts (GCC's, a relinked one, an empty device input; not the hosts of 65,000
sections, 100 of the 120 seconds the whole suite takes): each LLVM 23 run
starts a chroot.
"""
import hashlib
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import harness  # noqa: E402
from harness import OT, check, first_line_difference as first_diff, read, run  # noqa: E402

LLVM = harness.LLVM_BIN
BUNDLER = harness.LLVM_BUNDLER
PREFIX = "__CLANG_OFFLOAD_BUNDLE__"
DEVICE = "hip-amdgcn-amd-amdhsa--gfx906"

HOST_C = """static int counter;
int helper(int x) { return x * 3 + counter++; }
const char *msg = "hello";
int main(void) { return helper(2); }
"""
COMDAT_CPP = """inline int twice(int x) { return 2 * x; }
int use(int y) { return twice(y) + 1; }
static int data[100];
int *get() { return data; }
extern "C" int main() { return use(1); }
"""

# (triple, GNU ld emulation or None)
ELF_TARGETS = [
    ("x86_64-unknown-linux-gnu", "elf_x86_64"),
    ("aarch64-unknown-linux-gnu", None),
    ("powerpc64-unknown-linux-gnu", None),
    ("powerpc64le-unknown-linux-gnu", None),
    ("s390x-unknown-linux-gnu", None),
    ("i386-unknown-linux-gnu", "elf_i386"),
    ("armv7-unknown-linux-gnueabihf", None),
    ("mips-unknown-linux-gnu", None),
    ("mipsel-unknown-linux-gnu", None),
]
# Release 23's subset (the docstring).
R23_TARGETS = {"x86_64-unknown-linux-gnu", "i386-unknown-linux-gnu", "s390x-unknown-linux-gnu",
               "mips-unknown-linux-gnu", "x86_64-pc-windows-msvc"}
COFF_TARGETS = [
    ("x86_64-pc-windows-msvc", "i386pep"),
    ("i686-pc-windows-msvc", None),
    ("aarch64-pc-windows-msvc", None),
]

def bundle(tool, triple, host, inputs, out):
    targets = ",".join([f"host-{triple}", f"openmp-{triple}", DEVICE])
    args = tool + ["-type=o", f"-targets={targets}", f"-input={host}"] + [f"-input={i}" for i in inputs]
    return run(args + [f"-output={out}"])


def unbundle(tool, triple, fat, outs):
    targets = ",".join([f"host-{triple}", f"openmp-{triple}", DEVICE])
    return run(tool + ["-type=o", "-unbundle", f"-targets={targets}", f"-input={fat}"] +
               [f"-output={o}" for o in outs])


def listing(tool, fat):
    r = run(tool + ["-type=o", "-list", f"-input={fat}"])
    return r.returncode, r.stdout, r.stderr


# --- normalised views of an object --------------------------------------------

STRING_TABLES = {".strtab", ".shstrtab"}
# symbols are compared by llvm-readelf -s, with their names; the raw table
# holds name offsets into a string table LLVM rebuilds. With extended section
# numbering section 0 has a size, and objdump dumps the file's first bytes.
NOT_COMPARED_RAW = STRING_TABLES | {".symtab", ""}


def elf_view(path):
    """Sections (without offsets; string tables without sizes), symbols,
    relocations, groups, address-significance tables and the contents of every
    section except the string tables."""
    out = []
    secs = run([f"{LLVM}/llvm-readelf", "-S", "-W", path], text=True).stdout
    for line in secs.splitlines():
        m = re.match(r"\s*\[\s*(\d+)\]\s+(\S*)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+(.*)$", line)
        if m:
            name, typ, addr, _off, size, rest = m.group(2), m.group(3), m.group(4), m.group(5), m.group(6), m.group(7)
            if name in STRING_TABLES:
                size = "-"
            out.append(f"section {m.group(1)} {name} {typ} {addr} {size} {rest}")
        elif line.startswith("There are"):
            out.append(re.sub(r", starting at offset 0x[0-9a-f]+", "", line))
    for flag in ("-s", "-r", "-g", "--addrsig"):
        text = run([f"{LLVM}/llvm-readelf", flag, "-W", path], text=True).stdout
        text = re.sub(r"at offset 0x[0-9a-f]+", "at offset X", text)
        out.append(text)
    out.append(contents(path))
    return "\n".join(out)


def coff_view(path):
    text = run([f"{LLVM}/llvm-readobj", "-S", "-r", "--symbols", path], text=True).stdout
    text = re.sub(r"File: .*", "", text)
    text = re.sub(r"(?m)^(\s+Name: \S+) \([0-9A-F ]+\)$", r"\1", text)  # the raw name field: "/4" etc.
    text = re.sub(r"(PointerToRawData|PointerToRelocations|PointerToLineNumbers): 0x[0-9A-F]+", r"\1: X", text)
    text = re.sub(r"(VirtualSize|VirtualAddress): 0x[0-9A-F]+", r"\1: X", text)  # objcopy sets these
    # LLVM's objcopy gives added sections virtual addresses, which objdump prints
    return text + "\n" + re.sub(r"(?m)^ [0-9a-f]{4,} ", " ADDR ", contents(path))


def contents(path):
    """llvm-objdump -s, without the string tables and sections without data."""
    text = run([f"{LLVM}/llvm-objdump", "-s", path], text=True).stdout
    blocks = re.split(r"(?m)^Contents of section ", text)
    kept = [b for b in blocks[1:] if b.split(":", 1)[0] not in NOT_COMPARED_RAW]
    return "".join(kept)


_VIEWS = {}


def view(path, coff):
    """The view of the object at `path`: a function of its bytes (no path or
    offset in it), so files with the same bytes share one (a case compares the
    host it stripped with LLVM's and with clang's, often the same bytes)."""
    key = (hashlib.sha256(read(path)).hexdigest(), coff)
    if key not in _VIEWS:
        _VIEWS[key] = coff_view(path) if coff else elf_view(path)
    return _VIEWS[key]


def warnings(path, coff):
    """Everything the LLVM readers print on stderr for the object."""
    readers = ([[f"{LLVM}/llvm-readobj", "--all"]] if coff else
               [[f"{LLVM}/llvm-readelf", "-a", "-W"], [f"{LLVM}/llvm-readobj", "--all"]])
    readers.append([f"{LLVM}/llvm-objdump", "-h", "-r", "-t", "-s"])
    key = ("warnings", hashlib.sha256(read(path)).hexdigest(), coff)  # as view(): one run for the same bytes
    if key not in _VIEWS:
        found = (harness.reader_warnings(cmd + [path])[0] for cmd in readers)
        _VIEWS[key] = "\n".join(m for m in found if m).replace(path, "<object>")
    return _VIEWS[key].replace("<object>", path)


# --- linking --------------------------------------------------------------------

def link_elf(obj, emulation, exe):
    results = [("ld.lld-19", run([f"{LLVM}/ld.lld", "-e", "main", obj, "-o", exe], text=True))]
    if emulation:
        results.append(("GNU ld", run(["ld", "-m", emulation, "-e", "main", obj, "-o", exe + ".gnu"], text=True)))
    return results


def link_coff(obj, emulation, exe):
    results = [("lld-link-19", run([f"{LLVM}/lld-link", "/entry:main", "/subsystem:console", "/nodefaultlib",
                                     f"/out:{exe}", obj], text=True))]
    if emulation:
        gnu = run(["ld", "-V"], text=True).stdout
        if emulation in gnu:
            results.append(("GNU ld", run(["ld", "-m", emulation, "-e", "main", obj, "-o", exe + ".gnu"], text=True)))
    return results


def no_bundle_sections(exe):
    text = run([f"{LLVM}/llvm-objdump", "-h", exe], text=True).stdout
    return PREFIX not in text


# --- one target -------------------------------------------------------------------

def target_case(work, triple, emulation, coff, source="h.c", compiler="clang", host=None):
    ours_tool = [OT, "clang-offload-bundler"]
    llvm_tool = [BUNDLER]
    tag = triple if host is None else f"{triple} ({os.path.basename(host)})"
    d = os.path.join(work, re.sub(r"[^A-Za-z0-9_.-]", "_", tag))
    os.makedirs(d)
    p = lambda n: os.path.join(d, n)
    if host is None:
        host = p("h.o")
        r = run([f"{LLVM}/{compiler}", f"--target={triple}", "-c", "-O1", os.path.join(work, source), "-o", host],
                text=True)
        if r.returncode != 0:
            check(f"{tag}: clang compiles the host", False, r.stderr)
            return
    devs = [os.path.join(work, "d1"), os.path.join(work, "d2")]

    r = bundle(ours_tool, triple, host, devs, p("ours.o"))
    check(f"{tag}: our bundler writes a fat object", r.returncode == 0, r.stderr.decode())
    r2 = bundle(llvm_tool, triple, host, devs, p("llvm.o"))
    check(f"{tag}: LLVM's bundler writes a fat object", r2.returncode == 0, r2.stderr.decode())
    if r.returncode != 0 or r2.returncode != 0:
        return

    # -list, every tool on every fat object
    want = listing(llvm_tool, p("llvm.o"))
    want_ids = [f"host-{triple}-", f"openmp-{triple}-", DEVICE]
    check(f"{tag}: LLVM lists LLVM's fat object", want[0] == 0 and want[1].decode().split() == want_ids, str(want))
    for tool, tname in ((ours_tool, "we"), (llvm_tool, "LLVM")):
        for fat in ("ours.o", "llvm.o"):
            got = listing(tool, p(fat))
            check(f"{tag}: {tname} list {fat} like LLVM lists its own", got == want, f"{got} vs {want}")

    # unbundling, every tool on every fat object
    for tool, tname in ((ours_tool, "ours"), (llvm_tool, "llvm")):
        for fat in ("ours.o", "llvm.o"):
            outs = [p(f"{tname}-from-{fat}-host.o"), p(f"{tname}-from-{fat}-d1"), p(f"{tname}-from-{fat}-d2")]
            r = unbundle(tool, triple, p(fat), outs)
            ok = r.returncode == 0
            check(f"{tag}: {tname} unbundles {fat}", ok, r.stderr.decode())
            if ok:
                check(f"{tag}: {tname} unbundles {fat}: device bytes", read(outs[1]) == read(devs[0]) and
                      read(outs[2]) == read(devs[1]))

    # stripped hosts
    h_ours_ours = p("ours-from-ours.o-host.o")
    h_llvm_ours = p("llvm-from-ours.o-host.o")
    h_ours_llvm = p("ours-from-llvm.o-host.o")
    h_llvm_llvm = p("llvm-from-llvm.o-host.o")
    if all(os.path.exists(f) for f in (h_ours_ours, h_llvm_ours, h_ours_llvm, h_llvm_llvm)):
        check(f"{tag}: bundling then unbundling gives clang's host bytes back", read(h_ours_ours) == read(host))
        for got, ref, what in ((h_ours_ours, h_llvm_ours, "our fat object"),
                               (h_ours_llvm, h_llvm_llvm, "LLVM's fat object"),
                               (h_ours_ours, host, "the original host")):
            a, b = view(got, coff), view(ref, coff)
            check(f"{tag}: host from {what}: same sections, contents, symbols, relocations as LLVM's", a == b,
                  first_diff(a, b))

    # the fat objects themselves: the same sections and contents as LLVM's
    a, b = view(p("ours.o"), coff), view(p("llvm.o"), coff)
    if coff:
        # Characteristics are compared by the unit test and bundler-diff; here only layout-free views.
        strip_chars = lambda t: re.sub(r"Characteristics \[ \(0x[0-9A-F]+\)[^\]]*\]", "Characteristics", t, flags=re.S)
        # LLVM's objcopy gives .bss file data; ours keeps it without.
        a, b = strip_chars(a), strip_chars(b)
        bss = lambda t: re.sub(r"(?m)^\.bss:?\n( [0-9a-f]{4} .*\n)*", "", t)
        a, b = bss(a), bss(b)
    check(f"{tag}: fat object has the same sections and contents as LLVM's", a == b, first_diff(a, b))

    for f in ("ours.o", h_ours_ours, h_ours_llvm):
        w = warnings(p(f) if not os.path.isabs(f) else f, coff)
        check(f"{tag}: no reader warnings for {os.path.basename(f)}", not w, w)

    for f in ("ours.o", h_ours_ours):
        path = p(f) if not os.path.isabs(f) else f
        exe = path + (".exe" if coff else ".out")
        for linker, r in (link_coff if coff else link_elf)(path, emulation, exe):
            check(f"{tag}: {linker} links {os.path.basename(path)} with a main", r.returncode == 0 and not r.stderr,
                  r.stderr)
            out = exe if linker.startswith("ld.lld") or linker.startswith("lld-link") else exe + ".gnu"
            if r.returncode == 0:
                check(f"{tag}: {linker} drops the bundle sections", no_bundle_sections(out))


def many_sections_host(work, triple, name):
    """An object with more than 0xff00 sections: a COFF bigobj, or an ELF file
    using the extended e_shnum / e_shstrndx forms."""
    lines = []
    for i in range(65300):
        lines.append(f'.section .text$f{i},"xr"' if "windows" in triple else f'.section .text.f{i},"ax",@progbits')
        lines.append(f"f{i}:\n ret")
    lines.append('.section .text,"xr"' if "windows" in triple else '.text')
    lines.append(".globl main\nmain:\n ret")
    src = os.path.join(work, name + ".s")
    harness.write(src, "\n".join(lines) + "\n")
    obj = os.path.join(work, name)
    r = run([f"{LLVM}/clang", f"--target={triple}", "-c", src, "-o", obj], text=True)
    check(f"{triple}: clang assembles {len(lines) // 2} sections", r.returncode == 0, r.stderr)
    return obj if r.returncode == 0 else None


def relinked_case(work):
    """ld.lld -r / ld -r of a fat C++ object gives the bundle sections section
    symbols among the others, and keeps a COMDAT group and .llvm_addrsig: the
    host we strip must match LLVM's."""
    triple = "x86_64-unknown-linux-gnu"
    d = os.path.join(work, "relinked")
    os.makedirs(d)
    p = lambda n: os.path.join(d, n)
    r = run([f"{LLVM}/clang++", f"--target={triple}", "-c", "-O0", os.path.join(work, "cx.cpp"), "-o", p("cx.o")])
    check("relinked: clang++ compiles", r.returncode == 0, r.stderr.decode())
    r = bundle([OT, "clang-offload-bundler"], triple, p("cx.o"), [os.path.join(work, "d1"), os.path.join(work, "d2")],
               p("fat.o"))
    check("relinked: our bundler writes a fat object", r.returncode == 0, r.stderr.decode())
    linkers = [("ld.lld", [f"{LLVM}/ld.lld", "-r"]), ("GNU ld", ["ld", "-r"])]
    for name, cmd in linkers:
        rel = p(f"rel-{name.replace(' ', '')}.o")
        r = run(cmd + [p("fat.o"), "-o", rel], text=True)
        check(f"relinked: {name} -r links our fat object", r.returncode == 0, r.stderr)
        if r.returncode != 0:
            continue
        syms = run([f"{LLVM}/llvm-readelf", "-s", rel], text=True).stdout
        check(f"relinked: {name} -r made section symbols for the bundles", f"SECTION LOCAL  DEFAULT" in syms and
              PREFIX in syms, syms)
        outs = [p(f"{name}-{k}") for k in ("ours-host.o", "ours-d1", "ours-d2", "llvm-host.o", "llvm-d1", "llvm-d2")]
        r1 = unbundle([OT, "clang-offload-bundler"], triple, rel, outs[:3])
        r2 = unbundle([BUNDLER], triple, rel, outs[3:])
        check(f"relinked: both unbundle the {name} -r object", r1.returncode == 0 and r2.returncode == 0,
              r1.stderr.decode() + r2.stderr.decode())
        if r1.returncode == 0 and r2.returncode == 0:
            check(f"relinked: {name} -r devices", read(outs[1]) == read(outs[4]) and read(outs[2]) == read(outs[5]))
            a, b = elf_view(outs[0]), elf_view(outs[3])
            check(f"relinked: {name} -r host matches LLVM's (renumbered symbols, groups, relocations, addrsig)",
                  a == b, first_diff(a, b))
            w = warnings(outs[0], False)
            check(f"relinked: {name} -r host: no reader warnings", not w, w)
            r = run([f"{LLVM}/ld.lld", "-e", "main", outs[0], "-o", outs[0] + ".out"], text=True)
            check(f"relinked: {name} -r host links", r.returncode == 0, r.stderr)


def empty_device_case(work):
    """An empty device input becomes an empty section and comes back empty."""
    triple = "x86_64-unknown-linux-gnu"
    d = os.path.join(work, "empty")
    os.makedirs(d)
    p = lambda n: os.path.join(d, n)
    run([f"{LLVM}/clang", f"--target={triple}", "-c", os.path.join(work, "h.c"), "-o", p("h.o")])
    harness.write(p("empty"), b"")
    for tool, name in (([OT, "clang-offload-bundler"], "ours"), ([BUNDLER], "llvm")):
        r = bundle(tool, triple, p("h.o"), [p("empty"), os.path.join(work, "d2")], p(f"{name}.o"))
        check(f"empty device: {name} bundles", r.returncode == 0, r.stderr.decode())
    for tool, name in (([OT, "clang-offload-bundler"], "ours"), ([BUNDLER], "llvm")):
        outs = [p(f"{name}-h.o"), p(f"{name}-d1"), p(f"{name}-d2")]
        r = unbundle(tool, triple, p("ours.o"), outs)
        check(f"empty device: {name} unbundles ours", r.returncode == 0 and read(outs[1]) == b"" and
              read(outs[2]) == read(os.path.join(work, "d2")), r.stderr.decode())


def main():
    def cases(work):
        harness.populate(work, {"h.c": HOST_C.encode(), "cx.cpp": COMDAT_CPP.encode(),
                                "d1": b"Content of device file 1\n", "d2": b"Content of device file 2\n" * 7})
        wanted = (lambda triple: triple in R23_TARGETS) if harness.RELEASE == "23" else (lambda triple: True)
        for triple, emulation in ELF_TARGETS:
            if wanted(triple):
                target_case(work, triple, emulation, coff=False)
        for triple, emulation in COFF_TARGETS:
            if wanted(triple):
                target_case(work, triple, emulation, coff=True)
        # a host written by GCC (separate .shstrtab, GNU section order)
        gcc_host = os.path.join(work, "gcc-h.o")
        r = run(["gcc", "-c", "-O1", os.path.join(work, "h.c"), "-o", gcc_host], text=True)
        if r.returncode != 0:
            check("gcc compiles the host", False, r.stderr)
        else:
            target_case(work, "x86_64-unknown-linux-gnu", "elf_x86_64", coff=False, host=gcc_host)
        if harness.RELEASE == "23":  # the docstring
            relinked_case(work)
            empty_device_case(work)
            return
        big = many_sections_host(work, "x86_64-pc-windows-msvc", "bigobj.obj")
        if big:
            check("bigobj host is a bigobj", read(big)[:4] == b"\0\0\xff\xff")
            target_case(work, "x86_64-pc-windows-msvc", None, coff=True, host=big)
        big = many_sections_host(work, "x86_64-unknown-linux-gnu", "extnum.o")
        if big:
            check("ELF host uses extended section numbering", read(big)[60:62] == b"\0\0")
            target_case(work, "x86_64-unknown-linux-gnu", None, coff=False, host=big)
        relinked_case(work)
        empty_device_case(work)
    needs = [BUNDLER, harness.CLANG, harness.CLANGXX, harness.LLD, "ld", "gcc"]
    needs += [f"{LLVM}/{t}" for t in ("lld-link", "llvm-readelf", "llvm-readobj", "llvm-objdump")]
    return harness.run_suite("ot-object-bundle", cases, needs=needs)


if __name__ == "__main__":
    sys.exit(main())
