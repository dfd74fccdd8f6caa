// Which LLVM release the process that started us belongs to, where that can be
// told for sure: the clang driver (and clang-linker-wrapper) run the offload
// tools by their unversioned names through -B, so the parent is how a clang 19
// and a clang 22 each get their own release's bytes with no setting.
#pragma once

#include <optional>
#include <string>

namespace ot {

struct ParentLlvm {
  std::string executable;      // the parent's executable, as /proc/<ppid>/exe names it
  std::optional<int> major;    // its LLVM release, when every sign agrees
  std::string evidence;        // how the release was told, or why it could not be
};

// Reads /proc/<ppid>/exe and /proc/<ppid>/maps. Only a parent that is itself
// an LLVM tool counts (its executable's name starts with "clang" or "llvm",
// or it lies in an llvm-N folder); its release is told by every sign found:
// an llvm-N folder in the executable's resolved path, a "-N" suffix of its
// name, and the libLLVM / libclang-cpp it maps (libLLVM.so.N.M,
// libLLVM-N.so, libclang-cpp.so.N.M). Signs that disagree, or none at all,
// give no major: the caller falls back to its default (fails safe).
// nullopt when the parent is not an LLVM tool or cannot be read.
std::optional<ParentLlvm> parent_llvm();

// The same reading for an executable path and the text of its maps file (for tests).
std::optional<ParentLlvm> llvm_release_of(const std::string& executable, const std::string& maps);

}  // namespace ot
