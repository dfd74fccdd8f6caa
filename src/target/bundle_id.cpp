#include "target/bundle_id.h"

#include "target/target_id.h"

namespace ot::target {
namespace {

bool starts_with_insensitive(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    char a = s[i] >= 'A' && s[i] <= 'Z' ? static_cast<char>(s[i] - 'A' + 'a') : s[i];
    if (a != prefix[i]) return false;
  }
  return true;
}

Triple triple_from_text(std::string_view text) {
  Triple t(text);  // split into 4 fields, then rebuilt with the 4-argument constructor
  return Triple(t.arch_name(), t.vendor_name(), t.os_name(), t.environment_name());
}

}  // namespace

BundleId::BundleId(std::string_view text) {
  std::string_view a = text.substr(0, text.find(':'));
  auto last_dash = a.rfind('-');
  std::string_view rest = last_dash == std::string_view::npos ? a : a.substr(0, last_dash);
  std::string_view last = last_dash == std::string_view::npos ? std::string_view() : a.substr(last_dash + 1);
  std::string_view kind_and_triple = a;
  if (is_known_offload_arch(last)) {
    kind_and_triple = rest;
    // The target ID starts at the first occurrence of the arch in the whole
    // text; for an empty arch that is position 0 (LLVM's quirk, kept on purpose).
    target_id_ = std::string(text.substr(text.find(last)));
  }
  auto dash = kind_and_triple.find('-');
  kind_ = std::string(kind_and_triple.substr(0, dash));
  std::string_view triple_text = dash == std::string_view::npos ? std::string_view() : kind_and_triple.substr(dash + 1);
  triple_ = triple_from_text(triple_text);
}

bool BundleId::has_valid_kind() const {
  return kind_ == "host" || kind_ == "openmp" || kind_ == "hip" || kind_ == "hipv4";
}

bool BundleId::operator==(const BundleId& o) const {
  return kind_ == o.kind_ && triple_.is_compatible_with(o.triple_) && target_id_ == o.target_id_;
}

bool is_code_object_compatible(const BundleId& code_object, const BundleId& target, bool hip_openmp_compatible) {
  if (code_object == target) return true;
  const std::string& ck = code_object.kind();
  const std::string& tk = target.kind();
  bool kinds_ok = ck == tk || (ck == "hip" && tk == "hipv4") || (ck == "hipv4" && tk == "hip");
  if (!kinds_ok && hip_openmp_compatible)
    kinds_ok = (starts_with_insensitive(ck, "hip") && tk == "openmp") ||
               (ck == "openmp" && starts_with_insensitive(tk, "hip"));
  if (!kinds_ok || !code_object.triple().is_compatible_with(target.triple())) return false;

  FeatureMap code_features, target_features;
  auto code_processor = parse_target_id(code_object.triple(), code_object.target_id(), &code_features);
  auto target_processor = parse_target_id(target.triple(), target.target_id(), &target_features);
  if (!code_processor || !target_processor || *code_processor != *target_processor) return false;
  if (code_features.size() > target_features.size()) return false;
  for (const auto& [name, on] : code_features) {
    auto it = target_features.find(name);
    if (it == target_features.end() || it->second != on) return false;
  }
  return true;
}

}  // namespace ot::target
