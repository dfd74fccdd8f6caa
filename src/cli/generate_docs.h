// `offloadtool --generate-docs <dir>` (not in --help): writes the man pages
// and shell completions under <dir> as an installation lays them out:
//   share/man/man1/offloadtool.1, offloadtool-<applet>.1, <llvm tool>.1
//   share/man/man7/offloadtool-json.7 (the --json schemas, support/json_schemas.h)
//   share/bash-completion/completions/offloadtool, <llvm tool>
//   share/zsh/site-functions/_offloadtool
//   share/fish/vendor_completions.d/offloadtool.fish, <llvm tool>.fish
// The same bytes every run (no dates); each file is replaced atomically.
#pragma once

#include <string>

namespace ot::cli {

int generate_docs(const std::string& dir);

}  // namespace ot::cli
