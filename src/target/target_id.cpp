#include "target/target_id.h"

#include <algorithm>

#include "support/words.h"

namespace ot::target {
namespace {

// LLVM 19's offload-arch names (CudaArch/OffloadArch table), "" = UNUSED.
constexpr std::string_view kOffloadArchs[] = {
    "",       "sm_20",  "sm_21",  "sm_30",  "sm_32",  "sm_35",  "sm_37",  "sm_50",  "sm_52",  "sm_53",
    "sm_60",  "sm_61",  "sm_62",  "sm_70",  "sm_72",  "sm_75",  "sm_80",  "sm_86",  "sm_87",  "sm_89",
    "sm_90",  "sm_90a", "gfx600", "gfx601", "gfx602", "gfx700", "gfx701", "gfx702", "gfx703", "gfx704",
    "gfx705", "gfx801", "gfx802", "gfx803", "gfx805", "gfx810", "gfx9-generic", "gfx900", "gfx902",
    "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c", "gfx940", "gfx941", "gfx942",
    "gfx10-1-generic", "gfx1010", "gfx1011", "gfx1012", "gfx1013", "gfx10-3-generic", "gfx1030",
    "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036", "gfx11-generic", "gfx1100",
    "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx12-generic", "gfx1200",
    "gfx1201", "amdgcnspirv", "generic",
};

// LLVM 22.1.8's (OffloadArch.cpp): sm_100 to sm_121a, gfx9-4-generic, gfx950,
// gfx1153, gfx1250, gfx1251, Intel's graniterapids and bmg_g21 are new; sm_89's
// neighbours and the AMD names of 19 all stay. Observed: 22.1.8 keeps gfx950,
// gfx1250, sm_100a, sm_110, sm_110a and sm_120a in bundle IDs and drops gfx12-5-generic.
constexpr std::string_view kOffloadArchs22[] = {
    "",        "sm_20",    "sm_21",   "sm_30",   "sm_32",   "sm_35",   "sm_37",   "sm_50",   "sm_52",
    "sm_53",   "sm_60",    "sm_61",   "sm_62",   "sm_70",   "sm_72",   "sm_75",   "sm_80",   "sm_86",
    "sm_87",   "sm_89",    "sm_90",   "sm_90a",  "sm_100",  "sm_100a", "sm_101",  "sm_101a", "sm_103",
    "sm_103a", "sm_110",   "sm_110a", "sm_120",  "sm_120a", "sm_121",  "sm_121a", "gfx600",  "gfx601",  "gfx602",  "gfx700",
    "gfx701",  "gfx702",   "gfx703",  "gfx704",  "gfx705",  "gfx801",  "gfx802",  "gfx803",  "gfx805",
    "gfx810",  "gfx9-generic", "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a",
    "gfx90c",  "gfx9-4-generic", "gfx942", "gfx950", "gfx10-1-generic", "gfx1010", "gfx1011", "gfx1012",
    "gfx1013", "gfx10-3-generic", "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035",
    "gfx1036", "gfx11-generic", "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151",
    "gfx1152", "gfx1153", "gfx12-generic", "gfx1200", "gfx1201", "gfx1250", "gfx1251", "amdgcnspirv",
    "graniterapids", "bmg_g21", "generic",
};

// What LLVM 23.1.4 keeps in bundle IDs besides 22's names (observed: every
// processor llc-23 -mcpu=help lists and sm_XXa/f, bundled with both): RDNA 3.5
// and 4 additions, gfx13, the family-specific sm_XXXf. (gfx999, sm_90f, sm_100x,
// tahiti, fiji are still dropped.)
constexpr std::string_view kNewInLlvm23[] = {
    "gfx1154", "gfx1170", "gfx1171", "gfx1172", "gfx11-7-generic", "gfx12-5-generic", "gfx13-generic", "gfx1310",
    "sm_100f", "sm_101f", "sm_103f", "sm_110f", "sm_120f", "sm_121f",
};

// LLVM 19's AMDGCN processor table (llvm/lib/TargetParser/TargetParser.cpp):
// which target-ID features each processor supports.
constexpr AmdgpuProcessor kAmdgpu[] = {
    {"gfx600", "tahiti", false, false},
    {"gfx601", "pitcairn verde", false, false},
    {"gfx602", "hainan oland", false, false},
    {"gfx700", "kaveri", false, false},
    {"gfx701", "hawaii", false, false},
    {"gfx702", "", false, false},
    {"gfx703", "kabini mullins", false, false},
    {"gfx704", "bonaire", false, false},
    {"gfx705", "", false, false},
    {"gfx801", "carrizo", true, false},
    {"gfx802", "iceland tonga", false, false},
    {"gfx803", "fiji polaris10 polaris11", false, false},
    {"gfx805", "tongapro", false, false},
    {"gfx810", "stoney", true, false},
    {"gfx900", "", true, false},
    {"gfx902", "", true, false},
    {"gfx904", "", true, false},
    {"gfx906", "", true, true},
    {"gfx908", "", true, true},
    {"gfx909", "", true, false},
    {"gfx90a", "", true, true},
    {"gfx90c", "", true, false},
    {"gfx940", "", true, true},
    {"gfx941", "", true, true},
    {"gfx942", "", true, true},
    {"gfx1010", "", true, false},
    {"gfx1011", "", true, false},
    {"gfx1012", "", true, false},
    {"gfx1013", "", true, false},
    {"gfx1030", "", false, false},
    {"gfx1031", "", false, false},
    {"gfx1032", "", false, false},
    {"gfx1033", "", false, false},
    {"gfx1034", "", false, false},
    {"gfx1035", "", false, false},
    {"gfx1036", "", false, false},
    {"gfx1100", "", false, false},
    {"gfx1101", "", false, false},
    {"gfx1102", "", false, false},
    {"gfx1103", "", false, false},
    {"gfx1150", "", false, false},
    {"gfx1151", "", false, false},
    {"gfx1152", "", false, false},
    {"gfx1200", "", false, false},
    {"gfx1201", "", false, false},
    {"gfx9-generic", "", true, false},
    {"gfx10-1-generic", "", true, false},
    {"gfx10-3-generic", "", false, false},
    {"gfx11-generic", "", false, false},
    {"gfx12-generic", "", false, false},
};

}  // namespace

bool is_known_offload_arch(std::string_view name, LlvmRelease release) {
  auto in = [name](const auto& table) { return std::find(std::begin(table), std::end(table), name) != std::end(table); };
  switch (release) {
    case LlvmRelease::Llvm19: return in(kOffloadArchs);
    case LlvmRelease::Llvm22: return in(kOffloadArchs22);
    case LlvmRelease::Llvm23: return in(kOffloadArchs22) || in(kNewInLlvm23);
  }
  return false;
}

const AmdgpuProcessor* find_amdgpu_processor(std::string_view name) {
  if (name.empty()) return nullptr;
  for (const AmdgpuProcessor& p : kAmdgpu)
    if (p.name == name || has_word(p.aliases, name)) return &p;
  return nullptr;
}

std::optional<std::string> parse_target_id_format(std::string_view id, FeatureMap* features) {
  FeatureMap local;
  if (!features) features = &local;
  if (id.empty()) return std::string();
  auto colon = id.find(':');
  std::string_view processor = id.substr(0, colon);
  if (processor.empty()) return std::nullopt;
  if (colon == std::string_view::npos) return std::string(processor);
  std::string_view rest = id.substr(colon + 1);
  if (rest.empty()) return std::string(processor);
  while (!rest.empty()) {
    auto next = rest.find(':');
    std::string_view piece = rest.substr(0, next);
    rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
    if (piece.empty()) return std::nullopt;
    char sign = piece.back();
    if (sign != '+' && sign != '-') return std::nullopt;
    std::string name(piece.substr(0, piece.size() - 1));
    if (features->count(name)) return std::nullopt;
    (*features)[name] = sign == '+';
  }
  return std::string(processor);
}

std::optional<std::string> parse_target_id(const Triple& triple, std::string_view id, FeatureMap* features) {
  FeatureMap local;
  if (!features) features = &local;
  auto processor = parse_target_id_format(id, features);
  if (!processor) return std::nullopt;
  std::string canonical = *processor;
  bool xnack = false, sramecc = false;
  if (triple.is_amdgpu()) {
    const AmdgpuProcessor* p = triple.is_amdgcn() ? find_amdgpu_processor(*processor) : nullptr;
    if (!p) return std::nullopt;
    canonical = std::string(p->name);
    xnack = p->xnack;
    sramecc = p->sramecc;
  }
  if (canonical.empty()) return std::nullopt;
  for (const auto& [name, on] : *features) {
    (void)on;
    if (!((name == "xnack" && xnack) || (name == "sramecc" && sramecc))) return std::nullopt;
  }
  return canonical;
}

std::optional<std::pair<std::string, std::string>> conflicting_target_ids(const std::set<std::string>& ids) {
  struct Seen {
    std::string id;
    FeatureMap features;
  };
  std::map<std::string, Seen, std::less<>> by_processor;
  for (const std::string& id : ids) {
    FeatureMap features;
    auto processor = parse_target_id_format(id, &features);
    // LLVM dereferences the parse result unchecked; a malformed ID never takes part.
    if (!processor) continue;
    auto it = by_processor.find(*processor);
    if (it == by_processor.end()) {
      by_processor.emplace(*processor, Seen{id, std::move(features)});
      continue;
    }
    for (const auto& [name, on] : features) {
      (void)on;
      if (!it->second.features.count(name)) return std::make_pair(it->second.id, id);
    }
  }
  return std::nullopt;
}

}  // namespace ot::target
