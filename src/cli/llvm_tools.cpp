#include "cli/llvm_tools.h"

#include <array>

namespace ot::cli::llvmcl {
namespace {

// Options that libLLVM registers in every tool and that change how other
// arguments split: -W (an alias of --no-warn) is a one-letter, so grouping,
// flag: `-Wall` is read as -W then "all"; -gpsize is a prefix option, so
// `-gpsize4` is accepted.
constexpr Option kLibNoWarn{.name = "no-warn", .kind = Kind::Flag, .visibility = Visibility::ReallyHidden};
constexpr Option kLibW{.name = "W", .kind = Kind::Flag, .visibility = Visibility::ReallyHidden, .alias_of = "no-warn"};
constexpr Option kLibGpsize{.name = "gpsize", .kind = Kind::UInt, .visibility = Visibility::ReallyHidden, .prefix = true};
// Every tool's `-h`: hidden, prints the option list (as --help-list).
constexpr Option kHelpAlias{.name = "h", .kind = Kind::HelpFlag, .help = "Alias for --help",
                            .visibility = Visibility::ReallyHidden};

constexpr std::string_view kBundlerOverview =
    "A tool to bundle several input files of the specified type <type> \n"
    "referring to the same source file but different targets into a single \n"
    "one. The resulting file can also be unbundled into different files by \n"
    "this tool if -unbundle is provided.\n";

constexpr Option kBundler19Options[] = {
    {.name = "###",
     .kind = Kind::Flag,
     .help = "Print any external commands that are to be executed instead of actually executing them - for testing "
             "purposes."},
    {.name = "allow-missing-bundles", .kind = Kind::Flag, .help = "Create empty files if bundles are missing when unbundling."},
    {.name = "bundle-align", .kind = Kind::UInt, .help = "Alignment of bundle for binary files"},
    {.name = "check-input-archive",
     .kind = Kind::Flag,
     .help = "Check if input heterogeneous archive is valid in terms of TargetID rules."},
    {.name = "compress", .kind = Kind::Flag, .help = "Compress output file when bundling."},
    {.name = "compression-level", .kind = Kind::Int, .value_name = "n", .help = "Specify the compression level (integer)"},
    {.name = "hip-openmp-compatible",
     .kind = Kind::Flag,
     .help = "Treat hip and hipv4 offload kinds as compatible with openmp kind, and vice versa."},
    {.name = "input", .kind = Kind::List, .help = "Input file. Can be specified multiple times for multiple input files."},
    {.name = "inputs", .kind = Kind::CommaList, .help = "[<input file>,...] (deprecated)"},
    {.name = "list", .kind = Kind::Flag, .help = "List bundle IDs in the bundled file."},
    {.name = "output", .kind = Kind::List, .help = "Output file. Can be specified multiple times for multiple output files."},
    {.name = "outputs", .kind = Kind::CommaList, .help = "[<output file>,...] (deprecated)"},
    {.name = "targets", .kind = Kind::CommaList, .help = "[<offload kind>-<target triple>,...]"},
    {.name = "type",
     .kind = Kind::String,
     .help = "Type of the files to be bundled/unbundled.\n"
             "Current supported types are:\n"
             "  i    - cpp-output\n"
             "  ii   - c++-cpp-output\n"
             "  cui  - cuda-cpp-output\n"
             "  hipi - hip-cpp-output\n"
             "  d    - dependency\n"
             "  ll   - llvm\n"
             "  bc   - llvm-bc\n"
             "  s    - assembler\n"
             "  o    - object\n"
             "  a    - archive of objects\n"
             "  gch  - precompiled-header\n"
             "  ast  - clang AST file",
     .required = true},
    {.name = "unbundle", .kind = Kind::Flag, .help = "Unbundle bundled file into several output files."},
    {.name = "verbose", .kind = Kind::Flag, .help = "Print debug information."},
    kHelpAlias,
    kLibW,
    kLibNoWarn,
    kLibGpsize,
};

constexpr Option kPackager19Options[] = {
    {.name = "archive", .kind = Kind::Flag, .help = "Write extracted files to a static archive"},
    {.name = "image",
     .kind = Kind::List,
     .value_name = "<key>=<value>,...",
     .help = "List of key and value arguments. Required keywords are 'file' and 'triple'."},
    {.name = "o", .kind = Kind::String, .value_name = "file", .help = "Write output to <file>."},
    kHelpAlias,
    kLibW,
    kLibNoWarn,
    kLibGpsize,
};

// 22's -h is the tool's own cl::opt, read after its deprecation warning (the
// library's HelpFlag would print help before it): a plain flag here, acted on
// by the personality.
constexpr Option kPackager22Options[] = {
    kPackager19Options[0],
    kPackager19Options[1],
    kPackager19Options[2],
    {.name = "h", .kind = Kind::Flag, .help = "Alias for --help", .visibility = Visibility::ReallyHidden},
    kLibW,
    kLibNoWarn,
    kLibGpsize,
};

constexpr Option kWrapper14Options[] = {
    {.name = "o", .kind = Kind::String, .value_name = "filename", .help = "Output filename", .required = true},
    {.name = "target",
     .kind = Kind::String,
     .value_name = "triple",
     .help = "Target triple for the output module",
     .required = true},
    // Outside the tool's category in LLVM 14, so hidden from help and suggestions.
    {.name = "save-temps",
     .kind = Kind::Flag,
     .help = "Save temporary files",
     .visibility = Visibility::ReallyHidden},
    {.name = "add-omp-offload-notes",
     .kind = Kind::Flag,
     .help = "Add LLVMOMPOFFLOAD ELF notes to ELF device images",
     .visibility = Visibility::ReallyHidden},
    // Not in LLVM 14: the image-info extension of the wrapper's documentation
    // (one per following image). ReallyHidden keeps help and "Did you mean"
    // byte-identical to LLVM 14.
    {.name = "offload-arch",
     .kind = Kind::List,
     .value_name = "name",
     .help = "Offload architecture of the following input image",
     .visibility = Visibility::ReallyHidden},
    kHelpAlias,
    kLibW,
    kLibNoWarn,
    kLibGpsize,
};

// 23's kinds; 22's are the first three (LLVM 23, PR #204168, added sycl).
constexpr EnumValue kWrapperKinds[] = {
    {"openmp", "Wrap OpenMP binaries"},
    {"cuda", "Wrap CUDA binaries"},
    {"hip", "Wrap HIP binaries"},
    {"sycl", "Wrap SYCL binaries"},
};
constexpr Option kWrapperOutput{.name = "o", .kind = Kind::String, .value_name = "file", .help = "Write output to <file>."};
constexpr Option kWrapperTriple{.name = "triple", .kind = Kind::String, .help = "Target triple for the wrapper module"};

constexpr Option kOffloadWrapper22Options[] = {
    {.name = "kind", .kind = Kind::Enum, .help = "Wrap for offload kind:", .required = true,
     .values = std::span(kWrapperKinds).first<3>()},
    kWrapperOutput,
    kWrapperTriple,
    kHelpAlias,
    kLibW,
    kLibNoWarn,
    kLibGpsize,
};

// LLVM 23 (PR #204168): --kind=sycl and --relocatable.
constexpr Option kOffloadWrapper23WithNoWarn[] = {
    {.name = "kind", .kind = Kind::Enum, .help = "Wrap for offload kind:", .required = true, .values = kWrapperKinds},
    kWrapperOutput,
    {.name = "relocatable", .kind = Kind::Flag, .help = "Wrap for a relocatable offloading application (OpenMP only)"},
    kWrapperTriple,
    kHelpAlias,
    kLibW,
    kLibNoWarn,
    kLibGpsize,
};

constexpr std::string_view kOffloadWrapperOverview = "Generate runtime registration code for a device binary image\n";
// LLVM's help speaks of a "wrapper module": say once that this one is an object.
constexpr std::string_view kOffloadWrapperNote =
    "\nNOTE: this llvm-offload-wrapper (offloadtool) writes a finished host object file (ELF or COFF)\n"
    "for --triple, not LLVM bitcode: link it directly, no LLVM back end is needed.\n";

// The same tool as another release's cl library runs it: its dialect and --version line.
constexpr Tool as_release(Tool tool, Dialect dialect, std::string_view version) {
  tool.dialect = dialect;
  tool.version = version;
  return tool;
}

// LLVM 23's library no longer registers -W / --no-warn in its tools (observed:
// "Unknown command line argument '-W'", so "-hW" no longer groups); -gpsize stays.
template <std::size_t N>
constexpr std::array<Option, N - 2> without_no_warn(const Option (&options)[N]) {
  std::array<Option, N - 2> out{};
  std::size_t n = 0;
  for (const Option& o : options)
    if (o.name != kLibW.name && o.name != kLibNoWarn.name) out[n++] = o;
  return out;
}
constexpr auto kBundler23Options = without_no_warn(kBundler19Options);
constexpr auto kPackager23Options = without_no_warn(kPackager22Options);
constexpr auto kOffloadWrapper23Options = without_no_warn(kOffloadWrapper23WithNoWarn);
constexpr Tool with_options(Tool tool, std::span<const Option> options) {
  tool.options = options;
  return tool;
}

}  // namespace

constexpr Tool kClangOffloadBundler{
    .dialect = Dialect::Llvm19,
    .overview = kBundlerOverview,
    .category = "clang-offload-bundler options",
    .options = kBundler19Options,  // unchanged in 22 (--help is byte-identical)
    .version = "Debian clang-offload-bundler version 19.1.7 (3~deb12u1)",
};
constinit const Tool kClangOffloadBundler19 = kClangOffloadBundler;
constinit const Tool kClangOffloadBundler22 =
    as_release(kClangOffloadBundler, Dialect::Llvm22, "Debian clang-offload-bundler version 22.1.8 (1~deb12u1)");
constinit const Tool kClangOffloadBundler23 =  // --help unchanged again (byte-identical to 22's)
    with_options(as_release(kClangOffloadBundler, Dialect::Llvm23, "Debian clang-offload-bundler version 23.1.4 (2)"),
                 kBundler23Options);

constinit const Tool kClangOffloadPackager19{
    .dialect = Dialect::Llvm19,
    .overview =
        "A utility for bundling several object files into a single binary.\n"
        "The output binary can then be embedded into the host section table\n"
        "to create a fatbinary containing offloading code.\n",
    .category = "clang-offload-packager options",
    .options = kPackager19Options,
    .positionals = Positionals::AtMostOne,
    .positional_help = "Extract from <file>.",
    .version = "Debian clang-offload-packager version 19.1.7 (3~deb12u1)",
};

constexpr Tool kLlvmOffloadBinary22{
    .dialect = Dialect::Llvm22,
    .overview =
        "A utility for bundling several object files into a single binary.\n"
        "The output binary can then be embedded into the host section table\n"
        "to create a fatbinary containing offloading code.\n",
    .category = "llvm-offload-binary options",  // under either name
    .options = kPackager22Options,
    .positionals = Positionals::AtMostOne,
    .positional_help = "Extract from <file>.",
    .version = "Debian LLVM version 22.1.8\n  Optimized build.",
};
// --help unchanged in 23 (byte-identical); what it writes is another version (not done: the
// personality refuses to write, src/tools/clang_offload_packager.cpp).
constinit const Tool kLlvmOffloadBinary23 = with_options(
    as_release(kLlvmOffloadBinary22, Dialect::Llvm23, "Debian LLVM version 23.1.4\n  Optimized build."), kPackager23Options);

constinit const Tool kClangOffloadWrapper14{
    .dialect = Dialect::Llvm14,
    .overview =
        "A tool to create a wrapper bitcode for offload target binaries. Takes offload\n"
        "target binaries as input and produces bitcode file containing target binaries packaged\n"
        "as data and initialization code which registers target binaries in offload runtime.\n",
    .category = "clang-offload-wrapper options",
    .options = kWrapper14Options,
    .positionals = Positionals::OneOrMore,
    .positional_help = "<input files>",
    .version = "Debian clang-offload-wrapper version 14.0.6",
    // LLVM 14's text otherwise: its overview still speaks of bitcode.
    .extra_help =
        "\nNOTE: this clang-offload-wrapper (offloadtool) writes a host object file (ELF or COFF)\n"
        "for --target, not LLVM bitcode: link it directly, no LLVM back end is needed.\n",
};

// New in LLVM 22. Under release 19 (llvm-offload-wrapper-19) the same command
// line writes release 19's entry ABI and names 19 in --version.
constexpr Tool kLlvmOffloadWrapper{
    .dialect = Dialect::Llvm22,
    .overview = kOffloadWrapperOverview,
    .category = "llvm-offload-wrapper options",
    .options = kOffloadWrapper22Options,
    .positionals = Positionals::OneOrMore,
    .positional_help = "Wrap input from <file>",
    .version = "Debian LLVM version 22.1.8\n  Optimized build.",
    .extra_help = kOffloadWrapperNote,
};
constinit const Tool kLlvmOffloadWrapper22 = kLlvmOffloadWrapper;
// 23 adds --kind=sycl and --relocatable.
constinit const Tool kLlvmOffloadWrapper23 = with_options(
    as_release(kLlvmOffloadWrapper, Dialect::Llvm23, "Debian LLVM version 23.1.4\n  Optimized build."),
    kOffloadWrapper23Options);
constinit const Tool kLlvmOffloadWrapperAs19 =
    as_release(kLlvmOffloadWrapper, Dialect::Llvm19, "Debian LLVM version 19.1.7\n  Optimized build.");

const Tool& bundler_tool(target::LlvmRelease release) {
  switch (release) {
    case target::LlvmRelease::Llvm19: return kClangOffloadBundler19;
    case target::LlvmRelease::Llvm22: return kClangOffloadBundler22;
    case target::LlvmRelease::Llvm23: return kClangOffloadBundler23;
  }
  return kClangOffloadBundler22;
}

const Tool& packager_tool(target::LlvmRelease release) {
  switch (release) {
    case target::LlvmRelease::Llvm19: return kClangOffloadPackager19;
    case target::LlvmRelease::Llvm22: return kLlvmOffloadBinary22;
    case target::LlvmRelease::Llvm23: return kLlvmOffloadBinary23;
  }
  return kLlvmOffloadBinary22;
}

const Tool& clang_offload_wrapper_tool(target::LlvmRelease) { return kClangOffloadWrapper14; }

const Tool& llvm_offload_wrapper_tool(target::LlvmRelease release) {
  switch (release) {
    case target::LlvmRelease::Llvm19: return kLlvmOffloadWrapperAs19;
    case target::LlvmRelease::Llvm22: return kLlvmOffloadWrapper22;
    case target::LlvmRelease::Llvm23: return kLlvmOffloadWrapper23;
  }
  return kLlvmOffloadWrapper22;
}

}  // namespace ot::cli::llvmcl
