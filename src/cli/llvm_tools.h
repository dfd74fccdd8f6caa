// The command lines of the LLVM tools offloadtool stands in for, as data for
// cli/llvm_cl.h: option names, kinds, help texts (byte for byte those of
// Debian's LLVM 19.1.7 / 14.0.6), positional arguments and version lines.
#pragma once

#include "cli/llvm_cl.h"

namespace ot::cli::llvmcl {

extern const Tool kClangOffloadBundler19;   // clang-offload-bundler 19.1.7
extern const Tool kClangOffloadPackager19;  // clang-offload-packager 19.1.7
extern const Tool kClangOffloadWrapper14;   // clang-offload-wrapper 14.0.6

}  // namespace ot::cli::llvmcl
