// A relocatable object planned for pruning but not written yet: what the
// object pruner (prune/object.cpp) gives the archive pruner (prune/archive.cpp),
// which must check every member before the first byte of the archive goes out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "object/layout.h"
#include "prune/prune.h"

namespace ot::prune {

struct ObjectPlan {
  object::Layout layout;  // the pruned object
  Report report;
  // The entries of its NVIDIA fatbins (also in `report`): an archive checks
  // that some stay over all its members, not member by member.
  Report fatbin_entries = {"NVIDIA fatbins", {}, 0, 0};
};

// Whether the ELF or COFF object `obj` has a section holding device code
// (.hip_fatbin, __CLANG_OFFLOAD_BUNDLE__<id>, .llvm.offloading).
bool holds_container(Bytes obj, const std::string& file);

// Prunes the ELF relocatable object `obj`, which lies `base` bytes into `in`
// (an archive member, or all of `in`). Errors name `file` with offsets inside
// `obj`; `where_prefix` opens every entry's `where` ("member k.o, "). nullopt
// when the object holds no offload container.
// `member`: an archive member, whose NVIDIA fatbins may all be left empty
// (nvprune keeps such members too); the caller checks the whole archive.
std::optional<ObjectPlan> plan_object(const InputFile& in, std::uint64_t base, Bytes obj, const Selection& selection,
                                      const std::string& file, const std::string& where_prefix, bool member = false);

}  // namespace ot::prune
