// Per-GPU files follow their GPU: the rule prune applies, in a directory tree
// or a package, to the files of contents/per_gpu.h's table (Tensile's indexes
// and fallback libraries, MIOpen's databases) that hold no device code a walk
// can see. For a file named for target T:
//
//   the selection keeps T                          copied, kept with its GPU
//   the selection drops T (--keep: T not kept, and
//     some device entry of the input is of T;      left out (action remove)
//     --drop: T named)
//   --keep, and no device code of the input is T   copied as it is: the note says
//                                                  that T is neither kept nor dropped
//
// "Of T": the target T, as --keep would take it, selects the entry (T =
// gfx90a selects gfx90a:xnack+ code). Device code inside linked libraries
// counts as much as per-GPU code objects. Knows nothing of command lines.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compat/target_spec.h"
#include "contents/per_gpu.h"
#include "prune/prune.h"

namespace ot::prune {

class PerGpuRule {
 public:
  // Whether any of the input's files may be a per-GPU file (by its name
  // alone): where none is, the rule need not learn the input.
  static bool may_apply(std::string_view path) { return contents::per_gpu_name(contents::base_name_of(path)).has_value(); }

  // Learns one file of the input (`path` as the input stores it, `display`
  // naming it in errors): whether it is per-GPU device code, and the targets
  // of its device entries (their bundle headers, nothing decoded beyond).
  void learn(std::string_view path, const InputFile& in, const std::string& display);

  // The outcome for the file at `path` of `size` bytes, holding no device
  // code, when it is a per-GPU file here; nullopt otherwise.
  std::optional<FileOutcome> decide(std::string_view path, std::uint64_t size, const Selection& selection) const;

 private:
  contents::PerGpuFiles files_;
  std::vector<compat::TargetSpec> present_;  // one per target ID of the input's device entries
};

}  // namespace ot::prune
