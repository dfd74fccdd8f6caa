// Shell completions (bash, zsh, fish) from the commands' descriptions
// (cli/docs_model.h): applets, subcommands, options, and for option values the
// enumerated choices where the definition knows them, else file names (nothing
// for numbers). Each script covers offloadtool and the LLVM tool names.
#pragma once

#include <string>

#include "cli/docs_model.h"

namespace ot::cli::docs {

std::string bash_completion(const CommandDoc& root);
std::string zsh_completion(const CommandDoc& root);                 // the file _offloadtool
std::string fish_completion(const CommandDoc& root);                // offloadtool.fish
std::string fish_completion(const CommandDoc& root, const CommandDoc& personality);  // <name>.fish

}  // namespace ot::cli::docs
