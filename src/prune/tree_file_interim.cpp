// INTERIM (see tree_file_interim.h): a stand-in good enough for prune/package
// and its tests until the lead's versions land on main.
#include "prune/tree_file_interim.h"

#include "compat/code_object.h"
#include "contents/walker.h"
#include "support/error.h"
#include "support/mapped_file.h"

namespace ot::contents {
bool may_hold_device_code(Bytes p) {
  auto starts = [&](std::string_view m) { return p.size() >= m.size() && as_chars(p.first(m.size())) == m; };
  return starts("\x7f" "ELF") || starts("!<arch>\n") || starts("__CLANG_OFFLOAD_BUNDLE__") || starts("CCOB") ||
         starts("\x10\xff\x10\xad") || starts("\x50\xed\x55\xba");
}
}  // namespace ot::contents

namespace ot::prune {

FileOutcome prune_tree_file(const InputFile& in, const Selection& sel, const std::string& file,
                            const compress::Sink& sink) {
  Bytes d = in.bytes();
  if (auto co = compat::amdgpu_code_object(d); co && !co->target_id.empty()) {
    Report r{"AMDGPU code object", {}, 0, 0};
    const std::string id = "hipv4-amdgcn-amd-amdhsa--" + co->target_id;
    const bool kept = stays(sel, id, {file, 0});
    r.entries.push_back({id, d.size(), kept});
    r.size_before = d.size();
    r.size_after = kept ? d.size() : 0;
    return {kept ? FileAction::Copy : FileAction::Remove, r};
  }
  if (contents::collect(d, file).empty()) return {FileAction::Copy, {}};
  Report r = prune_file(in, sel, file, sink);
  return {r.dropped() ? FileAction::Write : FileAction::Copy, r};
}

}  // namespace ot::prune
