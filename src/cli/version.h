// What `offloadtool --version` (and every native applet's --version) prints:
// the version, the commit it was built from, the compression and archive
// libraries linked in as they report themselves at run time, and whether
// zstd's worker threads (`--threads`) are there. One line each, "key: value",
// always in this order; nothing in it changes from run to run.
#pragma once

#include <string>

#include "cli/release.h"

namespace ot::cli {

// Without a final newline (CLI11 adds one). The last line names the LLVM
// release impersonated and why: "llvm: 22 (the build's default)".
std::string version_text(const ReleaseChoice& release);

}  // namespace ot::cli
