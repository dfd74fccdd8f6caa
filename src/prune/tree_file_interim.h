// INTERIM, until main has them (the lead's prune_tree_file in prune/prune.h
// and contents::may_hold_device_code in contents/walker.h): the same
// declarations, so that prune/package is written against the interface it
// will use. Removed at the merge.
#pragma once

#include "prune/prune.h"

namespace ot::contents {
bool may_hold_device_code(Bytes prefix);
}

namespace ot::prune {

enum class FileAction { Copy, Write, Remove };
struct FileOutcome {
  FileAction action;
  Report report;
};
// Copy: no device code, or nothing of it dropped (sink got nothing) -> the original bytes;
// Write: sink got the pruned file (if report.dropped()==0, keep the original instead);
// Remove: a bare device code file (AMDGPU code object, cubin, PTX) of a dropped target: leave the member out.
FileOutcome prune_tree_file(const InputFile& in, const Selection& sel, const std::string& file,
                            const compress::Sink& sink);

}  // namespace ot::prune
