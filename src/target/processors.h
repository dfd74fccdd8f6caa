// What offloadtool knows about GPU processors, beyond what LLVM 19's bundler
// knows: every AMDGPU processor with its alternative names and target-ID
// features, the generic targets and the processors each covers, and the NVPTX
// sm_*/compute_* names. The compat applet and library reason with this table.
//
// The bundler personality does NOT use it: it keeps LLVM 19's own, frozen
// table (target_id.h), which e.g. cannot parse "gfx9-generic" out of a bundle
// entry ID. Which names LLVM 19 knows is answered from that table, so there is
// one source for each of the two views.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ot::target {

// The target-ID features of AMDGPU code objects (AMDGPUUsage "Target Features").
inline constexpr std::string_view kTargetFeatures[] = {"sramecc", "xnack"};  // alphabetical

struct ProcessorInfo {
  std::string_view name;         // primary name, e.g. "gfx906" or "gfx9-generic"
  std::string_view aliases;      // alternative names, space-separated ("fiji polaris10 polaris11")
  bool xnack = false;            // the processor supports the xnack target feature
  bool sramecc = false;          // ... the sramecc target feature
  std::string_view generic;      // the generic target covering it ("" when none); "" for generic targets
  int since_llvm = 0;            // first LLVM major knowing the name; 0: LLVM 19 or earlier
  unsigned elf_mach = 0;         // EF_AMDGPU_MACH_* in a code object's e_flags
  bool is_generic() const { return name.ends_with("-generic"); }
  bool supports(std::string_view feature) const {
    return (feature == "xnack" && xnack) || (feature == "sramecc" && sramecc);
  }
};

// Every AMDGPU processor and generic target, in table order (by generation).
std::span<const ProcessorInfo> amdgpu_processors();

// The processor for a primary or alternative name (exact spelling), or nullptr.
const ProcessorInfo* find_processor(std::string_view name);

// The processor of an AMDGPU code object's EF_AMDGPU_MACH value, or nullptr.
const ProcessorInfo* find_processor_by_elf_mach(unsigned mach);

// The processors a generic target covers, in table order (empty for others).
std::vector<const ProcessorInfo*> generic_members(std::string_view generic_name);

// Known to LLVM 19.1's AMDGPU table (the bundler's parseTargetID accepts it).
bool known_to_llvm19(std::string_view processor);

// The closest known AMDGPU or NVPTX name for a "did you mean" (nullopt when
// nothing is close).
std::optional<std::string_view> closest_processor(std::string_view name);

// KFD's gfx_target_version (major*10000 + minor*100 + stepping, decimal) to
// the processor name: 90010 -> "gfx90a", 110501 -> "gfx1151". Returns "" for 0
// or a value whose fields do not fit a gfx name.
std::string gfx_name_from_version(std::uint32_t version);

// NVPTX architectures: "sm_<major><minor>[a|f]" (real, cubin) and
// "compute_<major><minor>[a|f]" (virtual, PTX).
struct NvptxArch {
  bool is_virtual = false;   // compute_*
  int major = 0, minor = 0;  // sm_86 -> 8, 6; sm_100 -> 10, 0
  bool arch_specific = false;  // the "a" suffix (sm_90a): runs only on exactly that GPU
  bool family_specific = false;  // the "f" suffix (sm_100f): runs on its family, same major, minor not below
  bool known_to_llvm19 = false;
};
std::optional<NvptxArch> parse_nvptx_arch(std::string_view name);

}  // namespace ot::target
