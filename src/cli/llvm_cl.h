// An emulation of LLVM's `llvm::cl` command-line parser as the LLVM offload
// tools use it: option spellings, response files, diagnostics (text, order,
// exit code), "Did you mean", --help / --help-list / --help-hidden / --version.
// The personalities describe their options as data (cli/llvm_tools.h) and call
// parse(); nothing here knows a specific tool.
//
// Behaviour is that of Debian's LLVM 14.0.6, 19.1.7 and 22.1.8, observed by
// running them (see tests/cli/llvm_cl_diff_test.py). One deliberate difference: the
// real tools also accept the ~2,000 cl::opts that libLLVM and libclang-cpp
// register (e.g. -stats, -debug-pass=...), all hidden from help and
// suggestions; offloadtool reports them as unknown arguments. Only the few
// library options that change how other arguments are split (-W, a grouping
// alias of --no-warn, and -gpsize, a prefix option) are in the tool tables.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "cli/applets.h"

namespace ot::cli::llvmcl {

// The LLVM release whose cl library is emulated. It decides the option map's
// hash (and so the "Did you mean" tie order and the order of "must be
// specified" errors), whether a scalar option may repeat, how response-file
// failures are reported, how single-letter options with a value are shown in
// help, and whether --help-hidden lists the library's empty option categories.
// 22 differs from 19 only in the map: a DenseMap<StringRef> hashed by
// llvm::hash_value where 14 and 19 have a StringMap (llvm-project PR #174988);
// 23 only in that hash_value, now xxh3_64bits ^ seed (PR #194567).
enum class Dialect : std::uint8_t { Llvm14, Llvm19, Llvm22, Llvm23 };

enum class Kind : std::uint8_t {
  Flag,       // cl::opt<bool>: -x, -x=true|false|1|0|TRUE|True|FALSE|False|""
  String,     // cl::opt<std::string>
  UInt,       // cl::opt<unsigned>: decimal, 0x.., 0b.., 0o.., 0.. (octal); 32 bits
  Int,        // cl::opt<int>: as UInt with an optional leading '-'
  List,       // cl::list<std::string>: each occurrence appends its value
  CommaList,  // cl::list<std::string> with cl::CommaSeparated: value split on ','
  HelpFlag,   // the tools' hidden `-h`: a Flag; when true after a successful
              // parse, the plain option list (as --help-list) is printed, exit 0
  Enum,       // cl::opt<enum> with cl::values: the value must be one of Option::values
};

// One value of an Enum option, as cl::values lists it (help under the option).
struct EnumValue {
  std::string_view name;
  std::string_view help;
};

enum class Visibility : std::uint8_t {
  Shown,         // in --help
  Hidden,        // only in --help-hidden / --help-list-hidden; still suggested
  ReallyHidden,  // never printed nor suggested (cl::ReallyHidden)
};

struct Option {
  std::string_view name;              // without dashes; one letter = "-o", else "--name"
  Kind kind;
  std::string_view value_name = {};   // help "<...>"; empty: string, uint or int by kind
  std::string_view help = {};         // may hold '\n': continuation lines are aligned
  bool required = false;              // scalars: cl::Required; lists: cl::OneOrMore
  Visibility visibility = Visibility::Shown;
  bool prefix = false;                // cl::Prefix: `-nameVALUE` is also accepted
  std::string_view alias_of = {};     // cl::alias: values, counts and value errors go to that option
  std::span<const EnumValue> values = {};  // Kind::Enum: the accepted values, in help order
};

enum class Positionals : std::uint8_t {
  None,       // a non-option argument is an unknown argument
  AtMostOne,  // cl::opt<std::string>(cl::Positional)
  OneOrMore,  // cl::list<std::string>(cl::Positional, cl::OneOrMore)
};

struct Tool {
  Dialect dialect;
  std::string_view overview;          // printed after "OVERVIEW: "
  std::string_view category;          // "clang-offload-bundler options"
  std::span<const Option> options;    // the tool's own; the generic ones are added
  Positionals positionals = Positionals::None;
  std::string_view positional_help = {};  // after "USAGE: <prog> [options]"
  std::string_view version = {};      // the --version line, without '\n'
  // Printed verbatim after every help text (LLVM's cl::extrahelp); offloadtool
  // uses it only to state where a personality deliberately differs from LLVM.
  std::string_view extra_help = {};
  // Buckets of the real tool's option map (2,000-2,800 options → 4096): with
  // the dialect's hash it gives the iteration order LLVM breaks ties by.
  std::uint32_t option_map_buckets = 4096;
};

// One value as it appeared on the command line, in order.
struct Occurrence {
  std::string_view option;            // Option::name; empty for a positional argument
  std::string value;                  // one piece of a CommaList; "" for a bare flag
  std::size_t position;               // index among the response-file-expanded arguments
};

class Parsed {
 public:
  // `name` must be an option of the tool (else std::logic_error).
  bool given(std::string_view name) const;                          // occurred at least once
  std::vector<std::string> values(std::string_view name) const;     // every value, in order
  std::optional<std::string> value(std::string_view name) const;    // the last value
  bool flag(std::string_view name) const;                           // last Flag value, false if absent
  std::optional<std::uint32_t> uint_value(std::string_view name) const;  // UInt, last value
  std::optional<std::int32_t> int_value(std::string_view name) const;    // Int, last value
  std::vector<std::string> positionals() const;
  const std::vector<Occurrence>& occurrences() const { return occurrences_; }

 private:
  friend class Parser;
  const Tool* tool_ = nullptr;
  std::vector<Occurrence> occurrences_;
};

// What parse() writes, for callers that want it as text (unit tests).
struct Output {
  std::string out;  // stdout: help and version texts
  std::string err;  // stderr: diagnostics
};

// Parses inv.args like LLVM's cl::ParseCommandLineOptions, then applies the
// tool's -h. --help*/--version/-h: prints to stdout and returns 0. Errors:
// prints LLVM's diagnostics to stderr and returns 1. Otherwise the Parsed
// result. An LLVM 19 response-file failure prints its message and yields an
// empty Parsed, as the real tools then carry on with default options.
std::variant<Parsed, int> parse(const Tool& tool, const Invocation& inv);
std::variant<Parsed, int> parse(const Tool& tool, const Invocation& inv, Output& output);

// The plain option list that -h and --help-list print, for a tool that decides
// itself when to print it (llvm-offload-binary 22: -h and no input or output,
// after its deprecation warning).
std::string help_list_text(const Tool& tool, const Invocation& inv);

// Every option a tool accepts, the generic ones (--help, --version, ...)
// included, sorted by name as help lists them: what man pages and completions
// are made from (cli/docs_model.h).
struct ListedOption {
  const Option* option;
  std::string spelling;        // as help prints the name: "-o", "--type"
  std::string value_name;      // as help prints it inside <...>; empty for flags
  bool in_help;                // listed by --help
};
std::vector<ListedOption> list_options(const Tool& tool);

// Pieces exposed for unit tests.
// cl::TokenizeGNUCommandLine; `keep_empty_quoted`: LLVM 23's, where a quoted
// empty string ("" or '') is an (empty) argument (observed; 22 dropped it).
std::vector<std::string> tokenize_gnu(std::string_view text, bool keep_empty_quoted = false);
std::optional<std::uint64_t> parse_unsigned(std::string_view text);  // StringRef::getAsInteger(0)
std::optional<std::int64_t> parse_signed(std::string_view text);
std::optional<bool> parse_bool(std::string_view text);

}  // namespace ot::cli::llvmcl
