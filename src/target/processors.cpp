#include "target/processors.h"

#include <algorithm>

#include <fmt/format.h>

#include "support/edit_distance.h"
#include "support/words.h"
#include "target/target_id.h"

namespace ot::target {
namespace {

// AMDGPUUsage's processor and generic processor tables (LLVM 20), checked
// against LLVM 19's llc -mcpu=help and clang --offload-arch for the names LLVM
// 19 knows. Generic targets (code object v6, LLVM 19+) list the features their
// code objects may name: gfx9-generic has only xnack (sramecc "is not
// available on gfx906" in generic code), gfx9-4-generic both. The last column
// is EF_AMDGPU_MACH, as llc 19 writes it (gfx950, gfx1153, gfx9-4-generic:
// AMDGPUUsage's ELF table). The processors LLVM 22 and 23 added (gfx1154,
// gfx1170-gfx1172, gfx1250, gfx1251, gfx1310 and their generic targets) as
// llc 23 writes them (EF_AMDGPU_MACH of an empty module's object), with the
// features LLVM takes in their target IDs: for gfx1250 and gfx1251 those of
// any supported release (22 takes xnack, 23 no longer does: the table takes
// both, so that 22's gfx1250:xnack+ code objects are read); each one's generic
// target is the family LLVM 23's AMDGPU subarch table groups it in (gfx1170
// is gfx11-7-generic's, not gfx11-generic's).
constexpr ProcessorInfo kProcessors[] = {
    // GFX6
    {"gfx600", "tahiti", false, false, "", 0, 0x20},
    {"gfx601", "pitcairn verde", false, false, "", 0, 0x21},
    {"gfx602", "hainan oland", false, false, "", 0, 0x3a},
    // GFX7
    {"gfx700", "kaveri", false, false, "", 0, 0x22},
    {"gfx701", "hawaii", false, false, "", 0, 0x23},
    {"gfx702", "", false, false, "", 0, 0x24},
    {"gfx703", "kabini mullins", false, false, "", 0, 0x25},
    {"gfx704", "bonaire", false, false, "", 0, 0x26},
    {"gfx705", "", false, false, "", 0, 0x3b},
    // GFX8
    {"gfx801", "carrizo", true, false, "", 0, 0x28},
    {"gfx802", "iceland tonga", false, false, "", 0, 0x29},
    {"gfx803", "fiji polaris10 polaris11", false, false, "", 0, 0x2a},
    {"gfx805", "tongapro", false, false, "", 0, 0x3c},
    {"gfx810", "stoney", true, false, "", 0, 0x2b},
    // GFX9
    {"gfx900", "", true, false, "gfx9-generic", 0, 0x2c},
    {"gfx902", "", true, false, "gfx9-generic", 0, 0x2d},
    {"gfx904", "", true, false, "gfx9-generic", 0, 0x2e},
    {"gfx906", "", true, true, "gfx9-generic", 0, 0x2f},
    {"gfx908", "", true, true, "", 0, 0x30},
    {"gfx909", "", true, false, "gfx9-generic", 0, 0x31},
    {"gfx90a", "", true, true, "", 0, 0x3f},
    {"gfx90c", "", true, false, "gfx9-generic", 0, 0x32},
    {"gfx940", "", true, true, "gfx9-4-generic", 0, 0x40},
    {"gfx941", "", true, true, "gfx9-4-generic", 0, 0x4b},
    {"gfx942", "", true, true, "gfx9-4-generic", 0, 0x4c},
    {"gfx950", "", true, true, "gfx9-4-generic", 20, 0x4f},
    // GFX10.1
    {"gfx1010", "", true, false, "gfx10-1-generic", 0, 0x33},
    {"gfx1011", "", true, false, "gfx10-1-generic", 0, 0x34},
    {"gfx1012", "", true, false, "gfx10-1-generic", 0, 0x35},
    {"gfx1013", "", true, false, "gfx10-1-generic", 0, 0x42},
    // GFX10.3
    {"gfx1030", "", false, false, "gfx10-3-generic", 0, 0x36},
    {"gfx1031", "", false, false, "gfx10-3-generic", 0, 0x37},
    {"gfx1032", "", false, false, "gfx10-3-generic", 0, 0x38},
    {"gfx1033", "", false, false, "gfx10-3-generic", 0, 0x39},
    {"gfx1034", "", false, false, "gfx10-3-generic", 0, 0x3e},
    {"gfx1035", "", false, false, "gfx10-3-generic", 0, 0x3d},
    {"gfx1036", "", false, false, "gfx10-3-generic", 0, 0x45},
    // GFX11
    {"gfx1100", "", false, false, "gfx11-generic", 0, 0x41},
    {"gfx1101", "", false, false, "gfx11-generic", 0, 0x46},
    {"gfx1102", "", false, false, "gfx11-generic", 0, 0x47},
    {"gfx1103", "", false, false, "gfx11-generic", 0, 0x44},
    {"gfx1150", "", false, false, "gfx11-generic", 0, 0x43},
    {"gfx1151", "", false, false, "gfx11-generic", 0, 0x4a},
    {"gfx1152", "", false, false, "gfx11-generic", 0, 0x55},
    {"gfx1153", "", false, false, "gfx11-generic", 20, 0x58},
    {"gfx1154", "", false, false, "gfx11-generic", 23, 0x57},
    // GFX11.7
    {"gfx1170", "", false, false, "gfx11-7-generic", 23, 0x5d},
    {"gfx1171", "", false, false, "gfx11-7-generic", 23, 0x5e},
    {"gfx1172", "", false, false, "gfx11-7-generic", 23, 0x5c},
    // GFX12
    {"gfx1200", "", false, false, "gfx12-generic", 0, 0x48},
    {"gfx1201", "", false, false, "gfx12-generic", 0, 0x4e},
    // GFX12.5
    {"gfx1250", "", true, true, "gfx12-5-generic", 22, 0x49},
    {"gfx1251", "", true, true, "gfx12-5-generic", 22, 0x5a},
    // GFX13
    {"gfx1310", "", false, false, "gfx13-generic", 23, 0x50},
    // Generic targets
    {"gfx9-generic", "", true, false, "", 0, 0x51},
    {"gfx9-4-generic", "", true, true, "", 20, 0x5f},
    {"gfx10-1-generic", "", true, false, "", 0, 0x52},
    {"gfx10-3-generic", "", false, false, "", 0, 0x53},
    {"gfx11-generic", "", false, false, "", 0, 0x54},
    {"gfx12-generic", "", false, false, "", 0, 0x59},
    {"gfx11-7-generic", "", false, false, "", 23, 0x62},
    {"gfx12-5-generic", "", false, true, "", 23, 0x5b},
    {"gfx13-generic", "", false, false, "", 23, 0x63},
};

// The NVPTX real architectures of LLVM 19's offload-arch table.
constexpr std::string_view kLlvm19Sm[] = {"sm_20", "sm_21", "sm_30", "sm_32", "sm_35", "sm_37", "sm_50",
                                          "sm_52", "sm_53", "sm_60", "sm_61", "sm_62", "sm_70", "sm_72",
                                          "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a"};

}  // namespace

std::span<const ProcessorInfo> amdgpu_processors() { return kProcessors; }

const ProcessorInfo* find_processor_by_elf_mach(unsigned mach) {
  for (const ProcessorInfo& p : kProcessors)
    if (p.elf_mach == mach) return &p;
  return nullptr;
}

const ProcessorInfo* find_processor(std::string_view name) {
  if (name.empty()) return nullptr;
  for (const ProcessorInfo& p : kProcessors)
    if (p.name == name || has_word(p.aliases, name)) return &p;
  return nullptr;
}

std::vector<const ProcessorInfo*> generic_members(std::string_view generic_name) {
  std::vector<const ProcessorInfo*> out;
  if (generic_name.empty()) return out;
  for (const ProcessorInfo& p : kProcessors)
    if (p.generic == generic_name) out.push_back(&p);
  return out;
}

bool known_to_llvm19(std::string_view processor) { return find_amdgpu_processor(processor) != nullptr; }

std::optional<std::string_view> closest_processor(std::string_view name) {
  std::optional<std::string_view> best;
  std::size_t best_distance = 3;  // at most two edits away
  auto consider = [&](std::string_view candidate) {
    std::size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  };
  for (const ProcessorInfo& p : kProcessors) consider(p.name);
  for (std::string_view sm : kLlvm19Sm) consider(sm);
  return best;
}

std::string gfx_name_from_version(std::uint32_t version) {
  std::uint32_t major = version / 10000, minor = version / 100 % 100, stepping = version % 100;
  if (major == 0 || minor > 9 || stepping > 15) return "";
  return fmt::format("gfx{}{}{:x}", major, minor, stepping);
}

std::optional<NvptxArch> parse_nvptx_arch(std::string_view name) {
  NvptxArch a;
  std::string_view digits;
  if (name.starts_with("sm_")) {
    digits = name.substr(3);
  } else if (name.starts_with("compute_")) {
    a.is_virtual = true;
    digits = name.substr(8);
  } else {
    return std::nullopt;
  }
  if (digits.ends_with('a')) {
    a.arch_specific = true;
    digits.remove_suffix(1);
  } else if (digits.ends_with('f')) {
    a.family_specific = true;
    digits.remove_suffix(1);
  }
  if (digits.size() < 2 || digits.size() > 3 || digits.front() == '0') return std::nullopt;
  for (char c : digits)
    if (c < '0' || c > '9') return std::nullopt;
  int value = 0;
  for (char c : digits) value = value * 10 + (c - '0');
  a.major = value / 10;
  a.minor = value % 10;
  a.known_to_llvm19 = !a.is_virtual && std::find(std::begin(kLlvm19Sm), std::end(kLlvm19Sm), name) != std::end(kLlvm19Sm);
  return a;
}

}  // namespace ot::target
