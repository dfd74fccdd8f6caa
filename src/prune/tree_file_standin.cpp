// STAND-IN for the lead's prune_tree_file (prune.h), removed when it lands.
#include <array>

#include "compat/code_object.h"
#include "contents/walker.h"
#include "prune/prune.h"
#include "support/mapped_file.h"

namespace ot::prune {
namespace {
struct Any : contents::Visitor {
  bool found = false;
  void container(const contents::Container& c) override { found = found || !c.refused_duplicates.empty(); }
  void entry(const contents::Container&, const contents::Entry&) override { found = true; }
  bool wants_code_object_headers() const override { return false; }
};
}  // namespace

FileOutcome prune_tree_file(const InputFile& in, const Selection& sel, const std::string& file,
                            const compress::Sink& sink) {
  std::array<std::byte, 64> head{};
  const std::uint64_t n = std::min<std::uint64_t>(in.size(), head.size());
  in.read_at(0, head.data(), n);
  if (auto t = compat::amdgpu_code_object(Bytes(head.data(), n)); t && !t->target_id.empty()) {
    std::string id = "hipv4-amdgcn-amd-amdhsa--" + t->target_id;
    bool kept = stays(sel, id, {file, 0});
    Report r{"AMDGPU code object", {{id, in.size(), kept}}, in.size(), kept ? in.size() : 0};
    return {kept ? FileAction::Copy : FileAction::Remove, r};
  }
  Any any;
  contents::walk_input(in, any, {}, file);
  if (!any.found) return {FileAction::Copy, {}};
  Report r = prune_file(in, sel, file, sink);
  return {FileAction::Write, r};
}

}  // namespace ot::prune
