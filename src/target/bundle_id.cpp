#include "target/bundle_id.h"

#include "target/target_id.h"

#include <vector>

#include <fmt/format.h>

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

// Up to six pieces: text split on '-' at most five times (StringRef::split with MaxSplit 5).
std::vector<std::string_view> five_splits(std::string_view text) {
  std::vector<std::string_view> pieces;
  while (pieces.size() < 5) {
    auto dash = text.find('-');
    if (dash == std::string_view::npos) break;
    pieces.push_back(text.substr(0, dash));
    text.remove_prefix(dash + 1);
  }
  pieces.push_back(text);
  return pieces;
}

}  // namespace

BundleId::BundleId(std::string_view text, BundleIdRules rules) {
  if (rules == BundleIdRules::FivePieces || rules == BundleIdRules::FivePiecesAmdgpu) {
    const bool amdgpu = rules == BundleIdRules::FivePiecesAmdgpu;  // 23
    std::vector<std::string_view> p = five_splits(text);
    five_pieces_ = p.size() >= 5;
    kind_ = std::string(p[0]);
    if (p.size() == 6) {
      std::string_view arch = p[5].substr(0, p[5].find(':'));
      if (!arch.empty() && is_known_offload_arch(arch, amdgpu ? LlvmRelease::Llvm23 : LlvmRelease::Llvm22))
        target_id_ = std::string(p[5]);
    }
    p.resize(5);  // a short ID (only ever read from a file) gets empty fields; it matches nothing
    triple_ = Triple(p[1], p[2], p[3], p[4], amdgpu);
    // AMDHSA's runtimes want "<arch>-amd-amdhsa-" (empty environment).
    std::string normal = triple_.os() == "amdhsa" ? normalize_triple(triple_.str(), 3, amdgpu) + "-"
                                                   : normalize_triple(triple_.str(), 4, amdgpu);
    standard_ = kind_ + "-" + normal + "-" + target_id_;
    return;
  }
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
  standard_ = kind_ + "-" + triple_.str() + "-" + target_id_;
}

bool BundleId::has_valid_kind() const {
  return kind_ == "host" || kind_ == "openmp" || kind_ == "hip" || kind_ == "hipv4";
}

bool BundleId::operator==(const BundleId& o) const {
  if (!five_pieces_ || !o.five_pieces_) return false;
  return kind_ == o.kind_ && triple_.is_compatible_with(o.triple_) && target_id_ == o.target_id_;
}

bool is_code_object_compatible(const BundleId& code_object, const BundleId& target, bool hip_openmp_compatible) {
  if (!code_object.has_five_pieces() || !target.has_five_pieces()) return false;
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


std::optional<LossyId> lossy_under_five_pieces(std::string_view text, BundleIdRules rules) {
  std::vector<std::string_view> p = five_splits(text);
  if (p.size() < 5) return std::nullopt;  // an error of its own (the format message)
  const LlvmRelease release = rules == BundleIdRules::FivePiecesAmdgpu ? LlvmRelease::Llvm23 : LlvmRelease::Llvm22;
  auto known = [release](std::string_view id) {
    std::string_view arch = id.substr(0, id.find(':'));
    return !arch.empty() && is_known_offload_arch(arch, release);
  };
  const std::string would = BundleId(text, rules).str();
  // A processor in the environment's place: "hip-amdgcn-amd-amdhsa-gfx906[:xnack+]",
  // "openmp-nvptx64-nvidia-cuda-sm_80", "hip-amdgcn-amd-amdhsa-gfx9-generic".
  std::string_view from_env = text.substr(static_cast<std::size_t>(p[4].data() - text.data()));
  std::string_view env_arch = from_env.substr(0, from_env.find(':'));
  if (known(p[4]) || known(from_env) || (p[4].find(':') == std::string_view::npos && known(env_arch))) {
    // The spelling that keeps it: an explicit environment before the target ID,
    // as clang 22 passes (hip-amdgcn-amd-amdhsa-unknown-gfx906), as 22 writes it.
    std::string keep = fmt::format("{}-{}-{}-{}-unknown-{}", p[0], p[1], p[2], p[3], from_env);
    std::string instead = BundleId(keep, rules).str();
    if (lossy_under_five_pieces(instead, rules)) instead.clear();
    return LossyId{would, std::string(from_env), instead};
  }
  // A sixth piece that is not a known arch name is dropped: "--gfx999", "-:xnack+", "-a-b-gfx906".
  // (Dashes alone hold nothing: "openmp-x86_64-pc-linux-gnu--".)
  if (p.size() == 6 && p[5].find_first_not_of('-') != std::string_view::npos && !known(p[5]))
    return LossyId{would, std::string(p[5]), {}};
  return std::nullopt;
}

}  // namespace ot::target
