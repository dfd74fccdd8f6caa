// The LLVM cl emulation. Expected texts were produced by Debian's LLVM 19.1.7
// clang-offload-bundler / clang-offload-packager and LLVM 14.0.6
// clang-offload-wrapper (argv[0] = the bare tool name); the differential test
// tests/cli/llvm_cl_diff_test.py compares many more vectors with the real tools.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/llvm_cl.h"
#include "cli/llvm_tools.h"

using namespace ot::cli::llvmcl;

namespace {

struct Run {
  std::variant<Parsed, int> result;
  std::string out, err;
  int rc() const { return std::holds_alternative<int>(result) ? std::get<int>(result) : -1; }
  const Parsed& parsed() const { return std::get<Parsed>(result); }
};

Run run(const Tool& tool, std::string name, std::vector<std::string> args) {
  Output o;
  auto r = parse(tool, ot::cli::Invocation{name, name, std::move(args), ot::target::LlvmRelease::Llvm19, "a test"}, o);
  return {std::move(r), o.out, o.err};
}

Run bundler(std::vector<std::string> args) { return run(kClangOffloadBundler19, "clang-offload-bundler", args); }
Run packager(std::vector<std::string> args) { return run(kClangOffloadPackager19, "clang-offload-packager", args); }
Run wrapper(std::vector<std::string> args) { return run(kClangOffloadWrapper14, "clang-offload-wrapper", args); }

std::string observed(const std::string& name) {
  std::ifstream in(std::string(OT_TEST_DATA) + "/reference/" + name, std::ios::binary);
  REQUIRE(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string unknown(const std::string& tool, const std::string& arg) {
  return tool + ": Unknown command line argument '" + arg + "'.  Try: '" + tool + " --help'\n";
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "llvm-cl-test-XXXXXX").string();
    REQUIRE(::mkdtemp(t.data()));
    path = t;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, const std::string& data) const {
    std::ofstream(path / name, std::ios::binary) << data;
    return (path / name).string();
  }
};

}  // namespace

TEST_CASE("llvm_cl: --help texts equal LLVM's byte for byte") {
  auto b = bundler({"--help"});
  CHECK(b.rc() == 0);
  CHECK(b.err.empty());
  CHECK(b.out == observed("llvm19-bundler-help.txt"));
  CHECK(packager({"--help"}).out == observed("llvm19-packager-help.txt"));
  // The wrapper adds one note (Tool::extra_help) after LLVM 14's text.
  CHECK(wrapper({"-help"}).out == observed("llvm14-wrapper-help.txt") + std::string(kClangOffloadWrapper14.extra_help));
  CHECK(kClangOffloadWrapper14.extra_help.starts_with("\nNOTE: "));
  // -h is the uncategorized list, printed only once the parse succeeded.
  CHECK(packager({"-h"}).out == packager({"--help-list"}).out);
  CHECK(bundler({"-h"}).err == "clang-offload-bundler: for the --type option: must be specified at least once!\n");
}

TEST_CASE("llvm_cl: --help-list and --help-hidden") {
  CHECK(packager({"--help-list"}).out ==
        "OVERVIEW: A utility for bundling several object files into a single binary.\n"
        "The output binary can then be embedded into the host section table\n"
        "to create a fatbinary containing offloading code.\n\n"
        "USAGE: clang-offload-packager [options] Extract from <file>.\n\n"
        "OPTIONS:\n"
        "  --archive                   - Write extracted files to a static archive\n"
        "  --help                      - Display available options (--help-hidden for more)\n"
        "  --image=<<key>=<value>,...> - List of key and value arguments. Required keywords are 'file' and 'triple'.\n"
        "  -o <file>                   - Write output to <file>.\n"
        "  --version                   - Display the version of this program\n");
  // LLVM 14 lists the library's empty categories in --help-hidden; "-o=<...>".
  CHECK(wrapper({"--help-hidden"}).out ==
        "OVERVIEW: A tool to create a wrapper bitcode for offload target binaries. Takes offload\n"
        "target binaries as input and produces bitcode file containing target binaries packaged\n"
        "as data and initialization code which registers target binaries in offload runtime.\n\n"
        "USAGE: clang-offload-wrapper [options] <input files>\n\n"
        "OPTIONS:\n\n"
        "Color Options:\n\n  This option category has no options.\n\n"
        "General options:\n\n  This option category has no options.\n\n"
        "Generic Options:\n\n"
        "  --help              - Display available options (--help-hidden for more)\n"
        "  --help-hidden       - Display all available options\n"
        "  --help-list         - Display list of available options (--help-list-hidden for more)\n"
        "  --help-list-hidden  - Display list of all available options\n"
        "  --print-all-options - Print all option values after command line parsing\n"
        "  --print-options     - Print non-default options after command line parsing\n"
        "  --version           - Display the version of this program\n\n"
        "GlobalISel Combiner:\n"
        "Control the rules which are enabled. These options all take a comma separated list of rules to disable "
        "and may be specified by number or number range (e.g. 1-10).\n\n"
        "  This option category has no options.\n\n"
        "Polly Options:\nConfigure the polly loop optimizer\n\n  This option category has no options.\n\n"
        "clang-offload-wrapper options:\n\n"
        "  -o=<filename>       - Output filename\n"
        "  --target=<triple>   - Target triple for the output module\n" +
            std::string(kClangOffloadWrapper14.extra_help));
  // The usage line names the program as invoked.
  auto r = run(kClangOffloadBundler19, "/opt/x/clang-offload-bundler-19", {"--help-list"});
  CHECK(r.out.find("\nUSAGE: clang-offload-bundler-19 [options]\n\n") != std::string::npos);
}

TEST_CASE("llvm_cl: --version, and actions run in the middle of the parse") {
  // LLVM's text, then offloadtool's own line naming the release impersonated and why.
  const std::string ours = "offloadtool " OT_VERSION " as LLVM 19 (a test)\n";
  CHECK(bundler({"--version"}).out == "Debian clang-offload-bundler version 19.1.7 (3~deb12u1)\n" + ours);
  CHECK(packager({"-version"}).out == "Debian clang-offload-packager version 19.1.7 (3~deb12u1)\n" + ours);
  CHECK(wrapper({"--version"}).out == "Debian clang-offload-wrapper version 14.0.6\n" + ours);
  auto r = bundler({"-foo", "--version", "-bar"});
  CHECK(r.rc() == 0);
  CHECK(r.err == unknown("clang-offload-bundler", "-foo") + "clang-offload-bundler: Did you mean '--###'?\n");
  CHECK(bundler({"--version=x"}).err ==
        "clang-offload-bundler: for the --version option: does not allow a value! 'x' specified.\n"
        "clang-offload-bundler: for the --type option: must be specified at least once!\n");
}

TEST_CASE("llvm_cl: unknown arguments and Did you mean") {
  const std::string b = "clang-offload-bundler", p = "clang-offload-packager", w = "clang-offload-wrapper";
  CHECK(bundler({"-type=i", "-typ=i"}).err == unknown(b, "-typ=i") + b + ": Did you mean '--type=i'?\n");
  CHECK(bundler({"-type=i", "-targts=a,b"}).err == unknown(b, "-targts=a,b") + b + ": Did you mean '--targets=a,b'?\n");
  CHECK(bundler({"-type=i", "-=x"}).err == unknown(b, "-=x") + b + ": Did you mean '--###=x'?\n");
  // A positional argument where the tool takes none: no suggestion.
  CHECK(bundler({"-type=i", "foo", "-"}).err == unknown(b, "foo") + unknown(b, "-"));
  // Ties go to the first option in the xxh3 StringMap order (help-list first).
  CHECK(packager({"-zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"}).err ==
        unknown(p, "-zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz") + p + ": Did you mean '--help-list'?\n");
  // LLVM 22 keeps options in a DenseMap hashed by llvm::hash_value: --help comes first there.
  CHECK(run(kClangOffloadBundler22, b, {"-type=i", "-zzzzzzzzzzzzz"}).err ==
        unknown(b, "-zzzzzzzzzzzzz") + b + ": Did you mean '--help'?\n");
  CHECK(bundler({"-type=i", "-zzzzzzzzzzzzz"}).err == unknown(b, "-zzzzzzzzzzzzz") + b + ": Did you mean '--help-list'?\n");
  // The value is kept, and LLVM picks one dash by the length of "name=value".
  CHECK(packager({"-p=x"}).err == unknown(p, "-p=x") + p + ": Did you mean '--o=x'?\n");
  // ReallyHidden options are never suggested (LLVM 14, djb order).
  CHECK(wrapper({"-o", "x", "--target=t", "in", "-save-temp"}).err ==
        unknown(w, "-save-temp") + w + ": Did you mean '--help'?\n");
  // Groups: -h and -W are one-letter flags, the rest is looked up alone.
  CHECK(bundler({"-type=i", "-Wall"}).err == unknown(b, "-Wall") + b + ": Did you mean '--###'?\n");
  CHECK(wrapper({"-o", "x", "--target=t", "in", "-hx"}).err == unknown(w, "-hx") + w + ": Did you mean '-o'?\n");
  CHECK(packager({"-hofoo"}).err == p + ": for the -o option: may not occur within a group!\n" + unknown(p, "-hofoo") +
                                        p + ": Did you mean '-o'?\n");
  CHECK(packager({"-ho"}).err == p + ": for the -o option: requires a value!\n");
  CHECK(bundler({"-type=i", "-hW"}).rc() == 0);
}

TEST_CASE("llvm_cl: value errors") {
  const std::string b = "clang-offload-bundler";
  CHECK(bundler({"-list=maybe", "-list=TRUE", "-list=yes", "-type=i"}).err ==
        b + ": for the --list option: 'maybe' is invalid value for boolean argument! Try 0 or 1\n" + b +
            ": for the --list option: 'yes' is invalid value for boolean argument! Try 0 or 1\n");
  CHECK(bundler({"-type=i", "-bundle-align=4294967296"}).err ==
        b + ": for the --bundle-align option: '4294967296' value invalid for uint argument!\n");
  CHECK(bundler({"-type=i", "-compression-level=2147483648"}).err ==
        b + ": for the --compression-level option: '2147483648' value invalid for integer argument!\n");
  CHECK(bundler({"-type=i", "-gpsizex"}).err == b + ": for the --gpsize option: 'x' value invalid for uint argument!\n");
  CHECK(bundler({"-type=i", "-W=maybe"}).err ==
        b + ": for the --no-warn option: 'maybe' is invalid value for boolean argument! Try 0 or 1\n");
  CHECK(bundler({"-type=i", "-input"}).err == b + ": for the --input option: requires a value!\n");
}

TEST_CASE("llvm_cl: required options, positionals and LLVM 14 occurrence counts") {
  const std::string w = "clang-offload-wrapper", p = "clang-offload-packager";
  const std::string not_enough = w + ": Not enough positional command line arguments specified!\n"
                                     "Must specify at least 1 positional argument: See: " + w + " --help\n";
  auto r = wrapper({});
  CHECK(r.rc() == 1);
  CHECK(r.err == not_enough + w + ": for the -o option: must be specified at least once!\n" + w +
                     ": for the --target option: must be specified at least once!\n");
  CHECK(wrapper({"-o", "x", "-o=y", "--target=x", "--target=z"}).err ==
        w + ": for the -o option: must occur exactly one time!\n" + w +
            ": for the --target option: must occur exactly one time!\n" + not_enough);
  CHECK(wrapper({"--print-options", "--print-options", "-o", "x", "--target=t", "in"}).err ==
        w + ": for the --print-options option: may only occur zero or one times!\n");
  CHECK(wrapper({"-W", "-no-warn", "-o", "x", "--target=t", "in"}).err ==
        w + ": for the --no-warn option: may only occur zero or one times!\n");
  CHECK(packager({"a", "b"}).err == p + ": Too many positional arguments specified!\n"
                                        "Can specify at most 1 positional arguments: See: " + p + " --help\n");
  // LLVM 19 lets the last occurrence win.
  auto b = bundler({"-type=i", "-type=o", "-list", "-list=0"});
  REQUIRE(b.rc() == -1);
  CHECK(b.parsed().value("type") == "o");
  CHECK_FALSE(b.parsed().flag("list"));
  CHECK(b.parsed().given("list"));
}

TEST_CASE("llvm_cl: parsed values") {
  auto r = bundler({"-type", "o", "--targets=a,,b", "-targets", "c", "-input=x,y", "--input", "z", "-bundle-align=0x10",
                    "-compression-level=-3", "-compress", "-W"});
  REQUIRE(r.rc() == -1);
  const Parsed& p = r.parsed();
  CHECK(p.value("type") == "o");
  CHECK(p.values("targets") == std::vector<std::string>{"a", "", "b", "c"});
  CHECK(p.values("input") == std::vector<std::string>{"x,y", "z"});
  CHECK(p.uint_value("bundle-align") == 16u);
  CHECK(p.int_value("compression-level") == -3);
  CHECK(p.flag("compress"));
  CHECK_FALSE(p.flag("verbose"));
  CHECK_FALSE(p.given("verbose"));
  CHECK(p.given("no-warn"));  // through the -W alias
  CHECK_THROWS_AS(p.given("typo"), std::logic_error);

  auto w = wrapper({"--offload-arch", "gfx906", "a.img", "-o", "out", "--", "-b.img", "--target=x86_64"});
  REQUIRE(w.rc() == 1);  // --target after -- is positional
  auto w2 = wrapper({"--offload-arch=gfx906", "a.img", "--offload-arch=gfx90a", "b.img", "-o", "out", "--target=t"});
  REQUIRE(w2.rc() == -1);
  std::vector<std::string> order;
  for (const Occurrence& o : w2.parsed().occurrences()) order.push_back(std::string(o.option) + ":" + o.value);
  CHECK(order == std::vector<std::string>{"offload-arch:gfx906", ":a.img", "offload-arch:gfx90a", ":b.img", "o:out",
                                          "target:t"});
  CHECK(w2.parsed().positionals() == std::vector<std::string>{"a.img", "b.img"});
}

TEST_CASE("llvm_cl: numbers and booleans as LLVM reads them") {
  CHECK(parse_unsigned("0x1F") == 31u);
  CHECK(parse_unsigned("0B101") == 5u);
  CHECK(parse_unsigned("0o17") == 15u);
  CHECK(parse_unsigned("017") == 15u);
  CHECK(parse_unsigned("00") == 0u);
  CHECK(parse_unsigned("18446744073709551615") == UINT64_MAX);
  for (const char* bad : {"", "0x", "0b", "0o", "0O7", "09", "08", "0b2", "+5", " 5", "5 ", "1e3", "-1",
                          "18446744073709551616"})
    CHECK_MESSAGE(!parse_unsigned(bad), bad);
  CHECK(parse_signed("-0x10") == -16);
  CHECK(parse_signed("-0") == 0);
  CHECK(parse_signed("-9223372036854775808") == INT64_MIN);
  for (const char* bad : {"-", "--5", "-09", "9223372036854775808", "-9223372036854775809"})
    CHECK_MESSAGE(!parse_signed(bad), bad);
  CHECK(parse_bool("") == true);
  CHECK(parse_bool("True") == true);
  CHECK(parse_bool("FALSE") == false);
  CHECK(parse_bool("0") == false);
  CHECK(!parse_bool("tRUE"));
  CHECK(!parse_bool("yes"));
}

TEST_CASE("llvm_cl: GNU response-file tokens") {
  using V = std::vector<std::string>;
  CHECK(tokenize_gnu("-type=i -input=a\\ b \"-input=c d\" -input=\"e\\\"f\" '-input=g\\h' -input=\"\" \"\" -input=x\\") ==
        V{"-type=i", "-input=a b", "-input=c d", "-input=e\"f", "-input=gh", "-input=", "-input=x\\"});
  CHECK(tokenize_gnu("a\"b c\"d e\\") == V{"ab cd", "e\\"});
  CHECK(tokenize_gnu("-type=i\r\n-in\\\nput=z\t-input=q\v-input=w") == V{"-type=i", "-in\nput=z", "-input=q\v-input=w"});
  CHECK(tokenize_gnu("'unterminated x") == V{"unterminated x"});
  CHECK(tokenize_gnu("\"a\\") == V{"a\\"});
  CHECK(tokenize_gnu(std::string("-bo\0gus -x", 10)) == V{"-bo", "-x"});
  CHECK(tokenize_gnu("  \n ").empty());
}

TEST_CASE("llvm_cl: response files") {
  TempDir d;
  const std::string b = "clang-offload-bundler", w = "clang-offload-wrapper";
  std::string inner = d.write("inner", "-list -bogus");
  std::string outer = d.write("outer", "-type=i @" + inner);
  auto r = bundler({"@" + outer});
  CHECK(r.err == unknown(b, "-bogus") + b + ": Did you mean '--input'?\n");
  std::string u16 = d.write("u16", std::string("\xff\xfe-\0b\0o\0g\0u\0s\0", 14));
  CHECK(bundler({"-type=i", "@" + u16}).err == unknown(b, "-bogus") + b + ": Did you mean '--input'?\n");
  // A missing file stays an argument.
  const std::string missing = (d.path / "missing").string();
  CHECK(bundler({"-type=i", "@" + missing}).err == unknown(b, "@" + missing));

  // LLVM 19 abandons the parse (the tool goes on with defaults); LLVM 14 keeps the argument.
  const std::string dir = d.path.string(), self_path = (d.path / "self").string();
  std::string self = d.write("self", std::string("-bogus @").append(self_path));
  auto s19 = bundler({"@" + self});
  REQUIRE(s19.rc() == -1);
  CHECK(s19.err == "recursive expansion of: '" + self + "'\n");
  CHECK(s19.parsed().occurrences().empty());
  CHECK(wrapper({"@" + self}).err == unknown(w, "-bogus") + w + ": Did you mean '-o'?\n" + w +
                                         ": for the -o option: must be specified at least once!\n" + w +
                                         ": for the --target option: must be specified at least once!\n");
  CHECK(bundler({"@" + dir}).err == "cannot not open file '" + dir + "': Is a directory\n");
  std::string odd = d.write("odd", std::string("\xff\xfe-\0t", 5));
  CHECK(bundler({"@" + odd}).err == "Could not convert UTF16 to UTF8\n");
}
