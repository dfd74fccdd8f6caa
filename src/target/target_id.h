// Target IDs (<processor>(:<feature>[+-])*): the AMDGPU processor table, the
// offload-arch names LLVM 19's bundler recognises, parsing with LLVM's rules and
// the conflicting-combination check.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "target/llvm_release.h"
#include "target/triple.h"

namespace ot::target {

// True for the names in the offload-arch table of LLVM 19 (clang/lib/Basic/Cuda.cpp)
// or 22 (clang/lib/Basic/OffloadArch.cpp), including the empty string, which
// stands for the table's UNUSED entry.
bool is_known_offload_arch(std::string_view name, LlvmRelease release = LlvmRelease::Llvm19);

struct AmdgpuProcessor {
  std::string_view name;          // canonical name, e.g. "gfx906"
  std::string_view aliases;       // space-separated alternative names ("fiji polaris10")
  bool xnack;
  bool sramecc;
};
// The canonical processor for a name or alias, or nullptr.
const AmdgpuProcessor* find_amdgpu_processor(std::string_view name);

// Features given in a target ID: name -> on (+) / off (-).
using FeatureMap = std::map<std::string, bool, std::less<>>;

// Format-only parsing (parseTargetIDWithFormatCheckingOnly): processor, and the
// features, each ending in + or -, each at most once. "" parses to processor "".
std::optional<std::string> parse_target_id_format(std::string_view id, FeatureMap* features);

// Full parsing for a triple (parseTargetID): the processor is canonicalised for
// AMDGPU triples and must be known; every feature must be one it supports.
std::optional<std::string> parse_target_id(const Triple& triple, std::string_view id, FeatureMap* features);

// getConflictTargetIDCombination over a byte-wise sorted set of target IDs.
std::optional<std::pair<std::string, std::string>> conflicting_target_ids(const std::set<std::string>& ids);

}  // namespace ot::target
