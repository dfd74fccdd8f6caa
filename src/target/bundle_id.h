// Bundle entry IDs (<offload-kind>-<triple>[-<target-id>]) as LLVM's
// OffloadTargetInfo parses, standardises and compares them, by the rules of a
// release (target/llvm_release.h: 19's last-dash arch, 22's five pieces, 23's
// five pieces with amdgpu triple archs).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "target/llvm_release.h"
#include "target/triple.h"

namespace ot::target {

class BundleId {
 public:
  // LLVM's parser of that release, quirks included: 19's (reference section
  // 2.3) by default, where the rules are no concern (reading either release's
  // bundles, as the native applets do, and as 22 reads 19's IDs).
  explicit BundleId(std::string_view text, BundleIdRules rules = BundleIdRules::LastDashArch);

  const std::string& kind() const { return kind_; }
  const Triple& triple() const { return triple_; }
  const std::string& target_id() const { return target_id_; }

  bool has_valid_kind() const;   // host, openmp, hip, hipv4
  bool has_valid_triple() const { return !triple_.str().empty() && triple_.has_known_arch(); }
  bool is_valid() const { return has_valid_kind() && has_valid_triple(); }
  // 22's format check (checkOffloadBundleID): at least five '-' pieces. Always
  // true under 19's rules. An ID read from a file that fails it matches nothing.
  bool has_five_pieces() const { return five_pieces_; }
  bool is_host() const { return kind_ == "host"; }
  bool is_hip() const { return kind_ == "hip" || kind_ == "hipv4"; }

  // The ID written into bundles: 19 "<kind>-<4-field triple>-<target id>";
  // 22 the same with the triple normalised (amdhsa: 3 fields and a '-').
  const std::string& str() const { return standard_; }
  // "<kind>-<4-field triple>": the group of the conflicting-target-ID check.
  std::string kind_and_triple() const { return kind_ + "-" + triple_.str(); }

  bool operator==(const BundleId& o) const;

 private:
  std::string kind_;
  Triple triple_;
  std::string target_id_;
  std::string standard_;
  bool five_pieces_ = true;
};

// Where LLVM 22 silently writes a bundle ID that loses or misplaces what
// `text` gives (a processor taken as the environment, an unknown arch name
// dropped): what it would write and the spelling to use instead. The 22
// personality refuses such targets. nullopt when nothing is lost.
struct LossyId {
  std::string would_write;
  std::string lost;           // the piece lost or misplaced ("gfx906", "gfx999", ":xnack+")
  std::string use_instead;    // empty when no spelling keeps it (an arch 22 does not know)
};
// `rules`: FivePieces (22) or FivePiecesAmdgpu (23, which knows more arch names).
std::optional<LossyId> lossy_under_five_pieces(std::string_view text, BundleIdRules rules = BundleIdRules::FivePieces);

// isCodeObjectCompatible(code object = a bundle in a file, target = requested).
bool is_code_object_compatible(const BundleId& code_object, const BundleId& target, bool hip_openmp_compatible);

}  // namespace ot::target
