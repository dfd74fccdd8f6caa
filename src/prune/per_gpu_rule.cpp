#include "prune/per_gpu_rule.h"

#include <algorithm>
#include <array>

#include "compat/code_object.h"
#include "contents/walker.h"
#include "prune/prune.h"
#include "support/error.h"
#include "support/mapped_file.h"

namespace ot::prune {
namespace {

// The target IDs of a walk's AMDGPU entries (bundle IDs, as stored; no code
// object header is read).
class Targets : public contents::Visitor {
 public:
  std::vector<std::string> ids;
  bool wants_code_object_headers() const override { return false; }
  bool wants_payloads() const override { return false; }
  void entry(const contents::Container&, const contents::Entry& e) override {
    try {
      compat::TargetSpec s = compat::parse_spec(e.bundle_id);
      if (s.family == compat::Family::Amdgpu) ids.push_back(s.target_id());
    } catch (const Error&) {
      // An ID that does not parse names no GPU a per-GPU file can be of.
    }
  }
};

}  // namespace

void PerGpuRule::learn(std::string_view path, const InputFile& in, const std::string& display) {
  std::array<std::byte, compat::kBareCodeSniff> head{};
  const Bytes prefix = in.head(head);
  if (!prune_reads(prefix)) return;
  if (contents::is_standalone_device_code(prefix)) files_.add_device_code_file(path);
  Targets t;
  contents::walk_input(in, t, prune_walk_limits(), display);
  for (const std::string& id : t.ids)
    if (std::ranges::none_of(present_, [&](const compat::TargetSpec& s) { return s.target_id() == id; }))
      present_.push_back(compat::parse_spec(id));
}

std::optional<FileOutcome> PerGpuRule::decide(std::string_view path, std::uint64_t size,
                                              const Selection& selection) const {
  std::optional<contents::PerGpuName> n = files_.classify(path);
  if (!n) return std::nullopt;
  FileOutcome o;
  o.per_gpu = n;
  o.report.container = fmt::format("per-GPU file ({})", n->layout->name);
  o.report.size_before = o.report.size_after = size;
  const compat::TargetSpec target = compat::parse_spec(n->target);
  const bool present = std::ranges::any_of(present_, [&](const compat::TargetSpec& e) { return selects(target, e); });
  if (stays(selection, n->target, {std::string(path)})) {
    o.report.notes.push_back(fmt::format("a per-GPU file of {}: kept with it", n->target));
  } else if (selection.mode == Selection::Mode::Keep && !present) {
    o.report.notes.push_back(fmt::format(
        "a per-GPU file of {}, which no device code of the input is for: neither kept nor dropped, left as it is",
        n->target));
  } else {
    o.action = FileAction::Remove;
    o.report.size_after = 0;
    o.report.notes.push_back(fmt::format("a per-GPU file of {}, a dropped target: left out", n->target));
  }
  return o;
}

}  // namespace ot::prune
