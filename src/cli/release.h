// Which LLVM release a run impersonates, and why (target/llvm_release.h has
// what differs between them). In order, the first that says:
//   1. a versioned name: clang-offload-bundler-22, x86_64-linux-gnu-llvm-offload-binary-19;
//   2. OFFLOADTOOL_LLVM=19|22|23 in the environment (empty = unset);
//   3. the LLVM tool that started us (support/parent_llvm.h), when its release
//      is supported and every sign of it agrees;
//   4. the build's default (meson option llvm_release).
// A versioned name or OFFLOADTOOL_LLVM naming an unsupported release is an
// error (ot::Error) naming the supported ones.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "target/llvm_release.h"

namespace ot::cli {

struct ReleaseChoice {
  target::LlvmRelease release;
  std::string why;  // "the name clang-offload-bundler-22", "OFFLOADTOOL_LLVM=19", ...
};

// `name_major`: the version suffix of the name invoked, if any; `name`: that name.
ReleaseChoice choose_release(std::optional<int> name_major, std::string_view name);

// The build's default release (meson option llvm_release).
target::LlvmRelease default_release();

}  // namespace ot::cli
