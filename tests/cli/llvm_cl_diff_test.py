#!/usr/bin/env python3
"""Differential test of offloadtool's emulation of LLVM's cl option parser.

For many argument vectors whose outcome the option parser decides (help and
version texts, parse errors, "Did you mean" suggestions, response files), run
the real LLVM tool and `$OFFLOADTOOL <tool-name> ...` and compare stdout,
stderr (the real tool's path replaced by its name) and the exit code.

Vectors that would get past the parser carry a leading unknown argument
(SENTINEL), so that the parser always has the last word.

Environment: OFFLOADTOOL (our binary), OT_LLVM_RELEASE (19, 22 or 23: the
release of the bundler and packager compared; under 22 the packager also by
its new name, llvm-offload-binary). Prints "N passed, M failed"; exit 0 all
passed, 1 any failure or an LLVM tool (the release's bundler and packager,
14's wrapper, 22's llvm-offload-wrapper) not installed. llvm-offload-wrapper
is new in LLVM 22: it is compared with 22's, offloadtool impersonating 22 for
it, in the suites of 19 and 22; with 23's (--kind=sycl, --relocatable) in 23's.
"""

import os
import random
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import harness  # noqa: E402

REAL = {
    "clang-offload-bundler": harness.LLVM_BUNDLER,
    "clang-offload-packager": harness.LLVM_PACKAGER,
    "clang-offload-wrapper": harness.LLVM14_WRAPPER,
    "llvm-offload-wrapper": (harness.llvm("llvm-offload-wrapper") if harness.RELEASE == "23"
                             else "/usr/lib/llvm-22/bin/llvm-offload-wrapper"),
}
R22 = harness.RELEASE in ("22", "23")  # 22 and 23 (a DenseMap of options, hashed by each one's hash_value)
if R22:  # clang-offload-packager is a deprecated link to it in 22
    REAL["llvm-offload-binary"] = harness.llvm("llvm-offload-binary")
# The release offloadtool impersonates for a tool, where it is not the suite's.
TOOL_RELEASE = {"llvm-offload-wrapper": "23" if harness.RELEASE == "23" else "22"}
SENTINEL = "-zz-not-an-option"
# The one deliberate difference: a note after the wrapper's help texts (Tool::extra_help).
EXTRA_HELP = {
    "clang-offload-wrapper":
        b"\nNOTE: this clang-offload-wrapper (offloadtool) writes a host object file (ELF or COFF)\n"
        b"for --target, not LLVM bitcode: link it directly, no LLVM back end is needed.\n",
    "llvm-offload-wrapper":
        b"\nNOTE: this llvm-offload-wrapper (offloadtool) writes a finished host object file (ELF or COFF)\n"
        b"for --triple, not LLVM bitcode: link it directly, no LLVM back end is needed.\n",
}

# Options each tool shows in --help-list-hidden (the ones "Did you mean" picks from).
GENERIC = ["help", "help-hidden", "help-list", "help-list-hidden", "print-all-options", "print-options", "version"]
VISIBLE = {
    "clang-offload-bundler": GENERIC + [
        "###", "allow-missing-bundles", "bundle-align", "check-input-archive", "compress", "compression-level",
        "hip-openmp-compatible", "input", "inputs", "list", "output", "outputs", "targets", "type", "unbundle",
        "verbose"],
    "clang-offload-packager": GENERIC + ["archive", "image", "o"],
    "clang-offload-wrapper": GENERIC + ["o", "target"],
    "llvm-offload-wrapper": GENERIC + ["kind", "o", "triple"] + (["relocatable"] if harness.RELEASE == "23" else []),
}


def response_files(d):
    """The response files the vectors refer to, in the working directory d."""
    files = {
        "r_list": b"-list -unbundle",
        "r_type": b"-type=i\n-list",
        "r_nested": b"@r_list -bogus",
        "r_self": b"@r_self",
        "r_loop_a": b"@r_loop_b",
        "r_loop_b": b"@r_loop_a",
        "r_tokens": b"-type=i -input=a\\ b \"-input=c d\" -input=\"e\\\"f\" '-input=g\\h' -input=\"\" \"\" -input=x\\",
        "r_tokens2": b"a\"b c\"d e\\",
        "r_ws": b"-type=i\r\n-in\\\nput=z\t-input=q\v-input=w\f-input=e",
        "r_unterminated": b"'unterminated x",
        "r_trailing": b"\"a\\",
        "r_empty": b"",
        "r_u8bom": b"\xef\xbb\xbf-bogus",
        "r_u16le": b"\xff\xfe" + "-bogus \u00e9 \U0001f400".encode("utf-16-le"),
        "r_u16be": b"\xfe\xff" + "-bogus".encode("utf-16-be"),
        "r_u16odd": b"\xff\xfe-\x00t",
        "r_u16lone": b"\xff\xfe-\x00\x00\xd8",
        "r_u16bom": b"\xff\xfe",
        "r_nul": b"-bo\x00gus -x",
        "r_missing_inner": b"@nonexistent-inner -bogus",
        "r_help": b"--help",
        "r_sub_nested": b"@r_list",
        "r_pos": b"a b",
        "r_img": b"--image=file=a,triple=b --bogus",
        "subdir/r_list": b"-list",
        "subdir/outer": b"@r_sub_nested",  # resolved against the current directory
        "r_link": b"@r_link_target",
    }
    harness.populate(d, files)
    os.symlink("r_link", os.path.join(d, "r_link_target"))
    os.symlink("nowhere", os.path.join(d, "r_dangling"))


def mutations(name):
    """Misspellings of an option name: deletions, transpositions, insertions, replacements."""
    out = set()
    n = len(name)
    for i in sorted({0, n // 2, n - 1}):
        if n > 1:
            out.add(name[:i] + name[i + 1:])
        if i + 1 < n:
            out.add(name[:i] + name[i + 1] + name[i] + name[i + 2:])
        out.add(name[:i] + "x" + name[i:])
        out.add(name[:i] + ("q" if name[i] != "q" else "r") + name[i + 1:])
    out.add(name + "s")
    out.add(name.upper())
    out.discard(name)
    return sorted(out)


def vectors():
    """(tool, args) pairs."""
    B, P, W = "clang-offload-bundler", "clang-offload-packager", "clang-offload-wrapper"
    wrap_ok = ["-o", "out.o", "--target=x86_64-pc-linux-gnu", "in.img"]
    v = []

    # Help and version, every spelling, every tool.
    for t in REAL:
        for opt in ["--help", "-help", "--help-hidden", "-help-hidden", "--help-list", "--help-list-hidden",
                    "--version", "-version"]:
            v.append((t, [opt]))
            v.append((t, [SENTINEL, opt, "-bogus"]))
        for opt in ["--help=", "--help=1", "--version=x", "--help-list=0", "-help-hidden=true"]:
            v.append((t, [opt]))
        v.append((t, ["--print-options", SENTINEL]))
        v.append((t, ["--print-all-options=false", SENTINEL]))
        v.append((t, ["--print-options=maybe"]))
        v.append((t, ["--help", "--version"]))
        v.append((t, ["--version", "--help"]))
        v.append((t, ["-foo", "--help"]))
        v.append((t, ["-h=maybe", "--version"]))
    # -h prints the plain list once the parse succeeded; a parse error wins.
    for extra in [["-h"], ["-h=1"], ["-h=TRUE"], ["-hW"], ["-Wh"], ["-h", "-h=0", SENTINEL], ["-h=0", "-h"]]:
        v.append((B, ["-type=i"] + extra))
        v.append((P, extra))
        v.append((W, wrap_ok + extra))
    v.append((B, ["-h"]))
    v.append((W, ["-h"]))
    v.append((W, ["-h", "-o", "x"]))

    # Unknown arguments, dashes, '=' and values in suggestions.
    for t in REAL:
        for a in ["-", "", "foo", "-x", "-X", "-W=1", "---", "---o", "----help", "-=", "-=x", "--=x", "-=-",
                  "-zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "-hx", "-hx=3", "-Wall", "-Wxyz", "-hWq",
                  "-oops", "-p=x", "-p", "-gpsize", "-gpsizeq", "-gpsize=", "-gpsizex=1", "-h=3x", "-Wh=1x",
                  "-typ=i", "--tpye", "-lst", "-inpt=a,b", "-targts=a,b", "-imag=file=a", "-archiv=1", "-targt=x",
                  "-tagret", "-save-temp", "-add-omp-offload-note", "-offload-arc=x", "--help-lis", "-prin-options",
                  "-versoin", "-hlep", "--hlep", "-ofoo", "-o=", "-hofoo", "-ho", "-o"]:
            v.append((t, [SENTINEL, a]))
            if t != P:  # the packager needs no option: alone, some of these would reach the tool
                v.append((t, [a]))
        v.append((t, ["-gpsize=3", SENTINEL]))
        v.append((t, ["-gpsize3", SENTINEL]))
        v.append((t, ["-W", "-W=0", SENTINEL]))
        v.append((t, ["-W", "-no-warn", SENTINEL]))
        v.append((t, ["-W=maybe", "-Wh=2", "-no-warn=x"]))
        v.append((t, ["--", "-bogus", "--help"]))
        v.append((t, ["-bogus", "--", "--", "-x"]))

    # Misspelled options, one and two dashes, with and without a value.
    for t, names in VISIBLE.items():
        for name in names:
            for m in mutations(name):
                v.append((t, [SENTINEL, "-" + m]))
            v.append((t, [SENTINEL, "--" + mutations(name)[0] + "=val"]))
            v.append((t, [SENTINEL, "-" + mutations(name)[-1] + "="]))
    # Random strings: mostly ties, decided by LLVM's option-map order.
    rng = random.Random(19)
    for t in REAL:
        for _ in range(60):
            word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz-#") for _ in range(rng.randint(1, 14)))
            v.append((t, [SENTINEL, "-" + word]))
        for _ in range(15):
            word = "".join(rng.choice("ehilopst") for _ in range(rng.randint(2, 8)))
            v.append((t, [SENTINEL, "--" + word + "=" + word[:2]]))

    # Values: booleans, unsigned and signed numbers, missing values, lists.
    for b in ["", "true", "TRUE", "True", "1", "false", "FALSE", "False", "0", "maybe", "yes", "2", "tRUE", " 1"]:
        v.append((B, ["-type=i", "-list=" + b, SENTINEL]))
        v.append((P, ["--archive=" + b, SENTINEL]))
    v.append((B, ["-type=i", "-list", "true"]))
    for n in ["0", "1", "0x10", "0X1f", "010", "00", "09", "08", "0b101", "0B1", "0b2", "0b", "0o7", "0O7", "0o", "0x",
              "0xg", "4294967295", "4294967296", "2147483647", "2147483648", "-2147483648", "-2147483649", "-1", "-0",
              "-0x10", "-010", "-09", "-", "--5", "+5", " 5", "5 ", "1e3", "1_000", "", "18446744073709551615",
              "18446744073709551616", "0xFFFFFFFF", "0xffffffff1", "abc"]:
        v.append((B, ["-type=i", "-bundle-align=" + n, SENTINEL]))
        v.append((B, ["-type=i", "-compression-level=" + n, SENTINEL]))
    v.append((B, ["-type=i", "-bundle-align", "12", SENTINEL]))
    v.append((B, ["-type=i", "-bundle-align", "x"]))
    v.append((B, ["-type=i", "-compression-level", "-5", SENTINEL]))
    v.append((B, ["-type", "--help", SENTINEL]))  # a value is taken even when it looks like an option
    v.append((B, ["-input", "-type=i", SENTINEL]))
    v.append((B, ["-targets", "-", "-type", "--", SENTINEL]))
    v.append((P, ["--image", "--version", SENTINEL]))
    v.append((W, ["--target", "-o", "in"]))
    v.append((B, ["--type=i", "---type=i", "--list", SENTINEL]))
    v.append((P, ["--o", "x", "---o", "y"]))
    v.append((B, ["-type"]))
    v.append((B, ["-type=i", "-input"]))
    v.append((B, ["-type=i", "-targets"]))
    v.append((B, ["-type", "-list"] + [SENTINEL]))
    v.append((B, ["-list=maybe", "-list=TRUE", "-list=yes", "-type=i"]))
    v.append((B, ["-bundle-align=x", "-type"]))
    v.append((B, ["-bundle-align=x", "--help"]))
    v.append((P, ["-o"]))
    v.append((P, ["--image"]))
    v.append((P, ["-o=", SENTINEL]))
    v.append((W, ["-o"]))
    v.append((W, ["--target"]))
    v.append((W, ["-o", "-o", "x"]))

    # Required options and positional arguments.
    v.append((B, []))
    v.append((B, ["-list"]))
    v.append((B, ["foo"]))
    v.append((B, ["-type=i", "foo", "-", ""]))
    v.append((B, ["-type=i", "--", "x", "-list"]))
    v.append((B, ["--", "-type=i"]))
    v.append((P, ["a", "b"]))
    v.append((P, ["a", "b", "c", SENTINEL]))
    v.append((P, ["-", "-"]))
    v.append((P, ["--", "-o", "x"]))
    v.append((P, ["-o", "x", "--", "-o", "y"]))
    v.append((W, []))
    v.append((W, ["in"]))
    v.append((W, ["-o", "x"]))
    v.append((W, ["--target=x"]))
    v.append((W, ["-o", "x", "--target=y"]))
    v.append((W, ["-o", "x", "--target=y", "--"]))
    v.append((W, ["--", "-o", "x", "--target=y"]))
    v.append((W, ["in", "-bogus"]))

    # Repeated scalar options: an error in LLVM 14 only.
    v.append((B, ["-type=i", "-type=o", "-list", "-list", "-bundle-align=2", "-bundle-align=4", SENTINEL]))
    v.append((P, ["-o", "a", "-o", "b", "--archive", "--archive", SENTINEL]))
    v.append((W, ["-o", "a", "-o", "b", "--target=x", "in"]))
    v.append((W, ["-o", "a", "-o=b", "--target=x", "--target=z"]))
    v.append((W, ["-save-temps", "-save-temps"] + wrap_ok))
    v.append((W, ["-add-omp-offload-notes", "-add-omp-offload-notes=0"] + wrap_ok))
    v.append((W, ["--print-options", "--print-options"]))
    v.append((W, ["-h=maybe", "-bogus", "--help-list=1", "a", "b"]))
    v.append((W, ["-h", "-h"] + wrap_ok))

    # Several errors in one run, in LLVM's order.
    v.append((B, ["-bogus", "-bundle-align=x", "-list=2", "--help=1", "-inputs", ]))
    v.append((P, ["-ofoo", "a", "b", "-archive=x", "--image"]))
    v.append((W, ["-ofoo", "--target", "-Wq", "-gpsizez"]))

    # llvm-offload-wrapper (22): the required enum --kind, positionals, and the
    # messages of the steps after parsing that write nothing (w.img exists).
    O = "llvm-offload-wrapper"
    for args in ([], ["x"], ["--kind=sycl", "x"], ["--kind", "sycl", "x"], ["--kind=openmp"], ["--kind=", "x"],
                 ["--kind"], ["--kinds=openmp", "x"], ["-o"], ["--kind=OpenMP", "x"], ["--kind=openmp", SENTINEL],
                 ["--kind=hip", "--kind=cuda", SENTINEL], ["-kind=cuda", SENTINEL], ["--kind=openmp=1", "x"],
                 ["--kind=cuda", "--triple"], ["--triple=x", "-o", "y"], ["-h", "--kind=hip", "x"],
                 ["--kind=openmp", "-h"], ["--kind=openmp", "nonexist"], ["--kind=cuda", "a", "b"],
                 ["--kind=hip", "nonexist", "w.img"], ["--kind=hip", "-o", "never.o", "w.img", "w.img"],
                 ["--kind=cuda", "-o", "never.o", "w.img", "nonexist"], ["--kind=openmp", "w.img"],
                 ["--kind=cuda", "w.img"], ["--kind=openmp", "-o", "", "w.img"], ["--kind=hip", "--", "-o"],
                 # 23's --kind=sycl and --relocatable (22: unknown; the llvm-cl-22 run checks that)
                 ["--kind=sycl", "w.img"], ["--kind=sycl", "-o", "never.o", "w.img", "nonexist"],
                 ["--kind=sycl", "nonexist", "w.img"], ["--kind=SYCL", "x"], ["--kind=syc", "x"],
                 ["--relocatable", "x"], ["--kind=openmp", "--relocatable", "w.img"],
                 ["--kind=openmp", "--relocatable=x", "w.img"], ["--kind=openmp", "--relocatable=", SENTINEL],
                 ["--kind=openmp", "--relocatable=0", SENTINEL], ["--kind=openmp", "--relocatabl", "w.img"],
                 ["--kind=hip", "--relocatable", "-o", "never.o", "w.img", "w.img"], ["-relocatable", SENTINEL],
                 ["--relocatable", "--relocatable", "--kind=sycl", SENTINEL], ["--kind=sycl", "-o"]):
        v.append((O, args))

    # Response files.
    for t in REAL:
        for r in ["@nonexistent", "@r_dangling", "@r_nested", "@r_help", "@r_u8bom", "@r_u16le", "@r_u16be",
                  "@r_nul", "@r_missing_inner", "@r_empty", "@r_u16bom", "@subdir/outer"]:
            v.append((t, [SENTINEL, r]))
            v.append((t, [r, SENTINEL]))
        v.append((t, [SENTINEL, "@r_img"]))
        v.append((t, [SENTINEL, "@/dev/null", "@r_list"]))
        v.append((t, ["-bogus", "@r_pos", "-x"]))
    for r in ["@r_tokens", "@r_tokens2", "@r_ws", "@r_unterminated", "@r_trailing", "@r_list", "@r_u16le"]:
        v.append((B, ["-type=i", "--", r]))  # tokens after -- come back as unknown arguments, one by one
    v.append((B, ["-type=i", "@r_list", "-list", SENTINEL]))
    v.append((B, ["@r_type", SENTINEL]))
    # LLVM 19 abandons the parse on these and the tool goes on with defaults:
    # only the packager, which then does nothing, keeps them parser-decided.
    # (22's packager then crashes, SIGSEGV in libLLVM: not compared.)
    for r in ["@r_self", "@r_loop_a", "@r_link", "@subdir", "@", "@./subdir", "@subdir/", "@r_u16odd", "@r_u16lone"]:
        if not R22:
            v.append((P, [SENTINEL, r]))
            v.append((P, [r, SENTINEL, "-x"]))
        v.append((W, [SENTINEL, r]))  # LLVM 14: kept as an argument (here a positional)
        v.append((W, ["-" + r[1:] if len(r) > 1 else "-", r]))
    if "llvm-offload-binary" in REAL:  # the packager's vectors under its new name
        v += [("llvm-offload-binary", a) for t, a in v if t == P]
    return v


def main():
    return harness.run_suite("llvm-cl", cases, needs=list(REAL.values()))


def cases(d):
    env = harness.neutral_env(LC_ALL="C")
    response_files(d)

    with open(os.path.join(d, "w.img"), "wb") as f:
        f.write(b"an image")

    def run(cmd, tool):
        tool_env = dict(env, OFFLOADTOOL_LLVM=TOOL_RELEASE[tool]) if tool in TOOL_RELEASE else env
        p = harness.run(cmd, cwd=d, env=tool_env, timeout=60)
        return p.stdout, p.stderr, p.returncode

    def run_llvm(cmd):  # LLVM's tools write nothing here: only the response files are read
        rc, out, err = harness.reference_run(lambda: harness.outcome(cmd, cwd=d, text=False, env=env, timeout=60),
                                             [cmd, {'LC_ALL': 'C'}], d, [d])
        return out, err, rc

    def compare(tool, args):
        real = run_llvm([REAL[tool]] + args)
        mine = run([harness.OT, tool] + args, tool)
        if tool in TOOL_RELEASE:  # the line offloadtool's --version adds, naming the tool's release
            mine = (re.sub(rb'^offloadtool [0-9.]+ as LLVM ' + TOOL_RELEASE[tool].encode() + rb' \([^\n]*\)\n', b'',
                           mine[0], flags=re.M),) + mine[1:]
        mine = (harness.without_own_version_line(mine[0]),) + mine[1:]
        if "timeout" in (real[2], mine[2]):
            return "timed out: LLVM exit %s, ours %s" % (real[2], mine[2])
        out = harness.replace_all(real[0], {REAL[tool]: tool})
        if out.startswith(b"OVERVIEW: "):
            out += EXTRA_HELP.get(tool, b"")
        expected = (out, harness.replace_all(real[1], {REAL[tool]: tool}), real[2])
        if expected == mine:
            return None
        return "\n".join(f"{label} expected: {e!r}\n{label} actual:   {m!r}"
                         for label, e, m in zip(("stdout", "stderr", "exit"), expected, mine) if e != m)

    harness.run_cases([(f"{tool} {' '.join(repr(a) for a in args)}", lambda t=tool, a=args: compare(t, a))
                       for tool, args in vectors()], jobs=min(16, (os.cpu_count() or 2) * 2))


if __name__ == "__main__":
    sys.exit(main())
