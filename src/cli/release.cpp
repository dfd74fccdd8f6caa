#include "cli/release.h"

#include <cstdlib>

#include <fmt/format.h>

#include "support/error.h"
#include "support/parent_llvm.h"

#ifndef OT_DEFAULT_LLVM_RELEASE
#error "OT_DEFAULT_LLVM_RELEASE: set by meson.build from the llvm_release option"
#endif

namespace ot::cli {

target::LlvmRelease default_release() {
  static_assert(OT_DEFAULT_LLVM_RELEASE == 19 || OT_DEFAULT_LLVM_RELEASE == 22 || OT_DEFAULT_LLVM_RELEASE == 23,
                "llvm_release: 19, 22 or 23");
  return *target::release_for_major(OT_DEFAULT_LLVM_RELEASE);
}

ReleaseChoice choose_release(std::optional<int> name_major, std::string_view name) {
  if (name_major) {
    auto r = target::release_for_major(*name_major);
    if (!r)
      fail("", "the name {} asks for LLVM {}, which offloadtool does not impersonate (supported: {})", name,
           *name_major, target::supported_majors_text());
    return {*r, fmt::format("the name {}", name)};
  }
  if (const char* env = std::getenv("OFFLOADTOOL_LLVM"); env && *env) {
    std::string_view v = env;
    std::optional<target::LlvmRelease> r;
    if (v.size() <= 3 && v.find_first_not_of("0123456789") == std::string_view::npos) r = target::release_for_major(std::atoi(env));
    if (!r)
      fail("", "OFFLOADTOOL_LLVM={}: not a supported LLVM release (supported: {})", v,
           target::supported_majors_text());
    return {*r, fmt::format("OFFLOADTOOL_LLVM={}", v)};
  }
  std::string fallback_note;
  if (auto parent = parent_llvm()) {
    if (parent->major) {
      if (auto r = target::release_for_major(*parent->major))
        return {*r, fmt::format("started by {} ({})", parent->executable, parent->evidence)};
      fallback_note = fmt::format("; started by {}, LLVM {}, which is not supported", parent->executable,
                                  *parent->major);
    } else {
      fallback_note = fmt::format("; started by {}: {}", parent->executable, parent->evidence);
    }
  }
  return {default_release(), fmt::format("the build's default{}", fallback_note)};
}

}  // namespace ot::cli
