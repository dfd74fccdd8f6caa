// Bundle entry IDs (<offload-kind>-<triple>[-<target-id>]) as LLVM 19's
// OffloadTargetInfo parses, standardises and compares them.
#pragma once

#include <string>
#include <string_view>

#include "target/triple.h"

namespace ot::target {

class BundleId {
 public:
  // LLVM 19's parser (reference section 2.3), quirks included.
  explicit BundleId(std::string_view text);

  const std::string& kind() const { return kind_; }
  const Triple& triple() const { return triple_; }
  const std::string& target_id() const { return target_id_; }

  bool has_valid_kind() const;   // host, openmp, hip, hipv4
  bool has_valid_triple() const { return !triple_.str().empty() && triple_.has_known_arch(); }
  bool is_valid() const { return has_valid_kind() && has_valid_triple(); }
  bool is_host() const { return kind_ == "host"; }
  bool is_hip() const { return kind_ == "hip" || kind_ == "hipv4"; }

  // "<kind>-<4-field triple>-<target id>": the ID written into bundles.
  std::string str() const { return kind_ + "-" + triple_.str() + "-" + target_id_; }
  // "<kind>-<4-field triple>": the group of the conflicting-target-ID check.
  std::string kind_and_triple() const { return kind_ + "-" + triple_.str(); }

  bool operator==(const BundleId& o) const;

 private:
  std::string kind_;
  Triple triple_;
  std::string target_id_;
};

// isCodeObjectCompatible(code object = a bundle in a file, target = requested).
bool is_code_object_compatible(const BundleId& code_object, const BundleId& target, bool hip_openmp_compatible);

}  // namespace ot::target
