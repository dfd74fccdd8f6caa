// The command lines of the LLVM tools offloadtool stands in for, as data for
// cli/llvm_cl.h: option names, kinds, help texts (byte for byte those of
// Debian's LLVM 19.1.7 / 14.0.6), positional arguments and version lines.
#pragma once

#include "cli/llvm_cl.h"

namespace ot::cli::llvmcl {

extern const Tool kClangOffloadBundler19;   // clang-offload-bundler 19.1.7
extern const Tool kClangOffloadBundler22;   // clang-offload-bundler 22.1.8
extern const Tool kClangOffloadBundler23;   // clang-offload-bundler 23.1.4
extern const Tool kClangOffloadPackager19;  // clang-offload-packager 19.1.7
extern const Tool kLlvmOffloadBinary22;     // llvm-offload-binary 22.1.8 (also as clang-offload-packager)
extern const Tool kLlvmOffloadBinary23;     // llvm-offload-binary 23.1.4
extern const Tool kClangOffloadWrapper14;   // clang-offload-wrapper 14.0.6
extern const Tool kLlvmOffloadWrapper22;    // llvm-offload-wrapper 22.1.8
extern const Tool kLlvmOffloadWrapper23;    // llvm-offload-wrapper 23.1.4

// Each personality's command line in a release (cli/applets.h's table).
const Tool& bundler_tool(target::LlvmRelease release);
const Tool& packager_tool(target::LlvmRelease release);
// LLVM 15 removed clang-offload-wrapper: every release keeps 14's command line.
const Tool& clang_offload_wrapper_tool(target::LlvmRelease release);
// New in LLVM 22; under release 19 the same command line, with 19's version text.
const Tool& llvm_offload_wrapper_tool(target::LlvmRelease release);

}  // namespace ot::cli::llvmcl
