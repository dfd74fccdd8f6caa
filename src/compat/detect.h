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

// One phrase saying why `r` lists no GPU ("" when it lists one): no amdkfd
// topology (no driver), or none of its nodes is a GPU.
std::string amd_no_gpu_reason(const DetectResult& r);

// ---- NVIDIA GPUs: the CUDA driver API (compat/cuda_probe.h), loaded at run time.

struct CudaGpu {
  int ordinal = 0;              // cuDeviceGet's ordinal
  int major = 0, minor = 0;     // compute capability
  std::string name;             // cuDeviceGetName's; "" when the driver has none
  std::string target;           // "sm_86"; "" when the driver could not say (note says why)
  std::string note;             // the CUDA call that failed for this device, if one did
};

struct CudaResult {
  std::string library;          // as given to dlopen ("libcuda.so.1", or OFFLOADTOOL_LIBCUDA)
  std::string how;              // "dlopen" (in this process), "helper" (the static build: cuda_probe_helper.cpp),
                                // "none" (a path that is not there: nothing loaded)
  bool loaded = false;          // the library loaded and has the driver API's entry points
  std::optional<int> driver_version;  // cuDriverGetVersion: 12020 for CUDA 12.2
  std::optional<int> init_result;     // cuInit's CUresult; nullopt when not called
  std::string init_result_name;       // cuGetErrorName's ("CUDA_ERROR_NO_DEVICE"); "" when unknown
  std::vector<CudaGpu> gpus;
  // Why there is no GPU list (empty when the driver counted its devices, zero included):
  // "no NVIDIA driver (...)", "no NVIDIA GPU (...)" or what failed.
  std::string error;
  bool no_driver = false;       // error: the library is not there
  bool no_device = false;       // error or gpus.empty(): the driver is there and sees no GPU
};

// The library the CUDA driver API is loaded from: OFFLOADTOOL_LIBCUDA when set
// (a path or a name dlopen searches for), else "libcuda.so.1".
std::string cuda_library();

// Asks the CUDA driver of `library`. Never throws for what the driver says
// (that is in the result); the one line the caller prints, when there is no
// GPU, is result.error or, with no error, "no NVIDIA GPU (...: 0 devices)".
CudaResult detect_cuda(const std::string& library);

// One phrase saying why `r` lists no GPU ("" when it lists one).
std::string cuda_no_gpu_reason(const CudaResult& r);

}  // namespace ot::compat
