// What man pages and completions are made of: every command's name, summary,
// description, options and subcommands, read from the definitions that parse
// the command line and print --help — the CLI11 Apps the native applets'
// define functions build, and the llvm_cl tables of the personalities. Nothing
// here is written by hand, so the pages cannot drift from --help.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cli/applets.h"

namespace ot::cli::docs {

// How a value is completed.
enum class ValueKind : std::uint8_t {
  File,    // a path (the default for text values and positional arguments)
  Choice,  // one of `choices`
  Number,  // nothing to offer
};

struct OptionDoc {
  std::vector<std::string> names;    // as typed, short ones first: "-t", "--target"; empty for a positional
  std::string positional;            // a positional argument's name ("input"); empty for options
  std::string value_name;            // "TEXT", "<string>"...; empty for flags
  std::string description;           // may hold '\n'
  std::vector<std::string> choices;  // the enumerated values, where the definition knows them
  ValueKind value_kind = ValueKind::File;
  bool takes_value = false;
  bool optional_value = false;       // `--compress` or `--compress zlib`
  bool repeatable = false;
  bool required = false;
  bool in_help = true;               // false: accepted, but --help does not list it (LLVM's hidden options)
};

struct CommandDoc {
  std::string name;                  // "bundle", "create", "clang-offload-bundler"
  std::string path;                  // as typed: "offloadtool package create", "clang-offload-bundler"
  std::string key;                   // for the completion scripts: "offloadtool package create"; a
                                     // personality's key is its name also under `offloadtool <name>`
  std::string summary;               // one line
  std::string description;           // paragraphs; lines starting with a space are preformatted
  std::string footer;                // more of the same, after the options
  std::vector<OptionDoc> options;    // options, then positional arguments, in definition order
  std::vector<CommandDoc> subcommands;
  bool llvm = false;                 // an LLVM cl command line: -name and --name both work
  int error_exit = 1;                // the exit status of errors and usage errors
};

// offloadtool itself: every native applet (with its subcommands) and every
// personality as subcommands.
CommandDoc describe_offloadtool();

// Flattened: the command and its subcommands, depth first.
std::vector<const CommandDoc*> all_commands(const CommandDoc& root);

}  // namespace ot::cli::docs
