// The local AMD GPUs' target IDs from the kernel driver's (amdkfd) topology in
// sysfs, without ROCm. What is relied on, per node directory
// <root>/class/kfd/kfd/topology/nodes/<n>/properties (one "<name> <decimal>"
// per line, written by amdkfd's node_show):
//   simd_count          0 on CPU-only nodes; GPUs (and APUs' GPU part) have SIMDs
//   cpu_cores_count     > 0 on CPU nodes and on APUs (CPU and GPU in one node)
//   gfx_target_version  major*10000 + minor*100 + stepping, e.g. 90010 = gfx90a,
//                       110000 = gfx1100 (0 on CPU nodes; absent in old kernels)
//   capability          bit 0x04000000 = HSA_CAP_SRAM_EDCSUPPORTED: SRAM ECC is
//                       enabled (the bit moved there from 0x00080000, which the
//                       kernel now keeps 0 for old user mode; it is ignored)
//   vendor_id, device_id  PCI IDs (informational)
// xnack is not in sysfs: it is chosen per process (ROCr asks the kernel, and
// HSA_XNACK=1/0 in the environment decides it). The caller passes what it
// knows (the applet: --xnack, else HSA_XNACK); otherwise xnack stays "any".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ot::compat {

struct DetectedGpu {
  std::uint32_t node = 0;
  std::string properties;       // path of the properties file
  std::uint32_t gfx_target_version = 0;
  std::string processor;        // "gfx90a"; "" when the version names no gfx processor
  bool known = false;           // in the processor table
  bool apu = false;             // cpu_cores_count > 0 as well as SIMDs
  std::uint32_t vendor_id = 0, device_id = 0;
  std::optional<bool> sramecc;  // nullopt: the processor has no sramecc feature
  std::optional<bool> xnack;    // nullopt: not supported, or unknown ("any")
  bool xnack_supported = false;
  std::string target_id;        // canonical, e.g. "gfx90a:sramecc+:xnack-"; "" when not known
  std::string note;             // why the target ID is incomplete or missing
};

struct DetectResult {
  std::string topology;         // the nodes directory that was read
  bool found_topology = false;  // false: no amdkfd topology (no AMD GPU driver)
  std::vector<DetectedGpu> gpus;
  std::vector<std::uint32_t> cpu_nodes;
};

// The xnack setting a process would run with: `option` ("on"/"off", "1"/"0",
// "+"/"-") when given, else HSA_XNACK from the environment, else nullopt
// ("any"). An unreadable value is an error naming where it came from.
std::optional<bool> chosen_xnack(const std::string& option);

// `sysfs_root` is "/sys" on a live system. Errors (ot::Error) name the
// properties file and the line of a malformed value.
DetectResult detect(const std::string& sysfs_root, std::optional<bool> xnack);

}  // namespace ot::compat
