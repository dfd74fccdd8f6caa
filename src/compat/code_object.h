// The target ID an AMDGPU code object (ELF64, EM_AMDGPU) was built for, read
// from its header: EF_AMDGPU_MACH names the processor, and the feature bits
// xnack and sramecc (AMDGPUUsage "ELF Header"):
//   code object v2/v3 (EI_ABIVERSION 0/1): 0x100 xnack on, 0x200 sramecc on, clear = off
//   v4+ (EI_ABIVERSION >= 2): xnack 0x300 mask (0 unsupported, 0x100 any, 0x200 off,
//   0x300 on), sramecc 0xc00 mask (0, 0x400 any, 0x800 off, 0xc00 on);
//   v6 (EI_ABIVERSION 4): the generic version in bits 24-31.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "support/bytes.h"

namespace ot::compat {

struct CodeObjectTarget {
  std::string target_id;           // canonical, e.g. "gfx90a:xnack+"; "" for an unknown EF_AMDGPU_MACH
  unsigned mach = 0;               // EF_AMDGPU_MACH
  unsigned code_object_version = 0;  // 2..6
  unsigned generic_version = 0;    // v6 generic code objects
  std::uint32_t e_flags = 0;
};

// nullopt when `data` is not a 64-bit little-endian EM_AMDGPU ELF file (too
// short, other class or machine); never throws.
std::optional<CodeObjectTarget> amdgpu_code_object(Bytes data);

// "sm_80" from an NVIDIA cubin's ELF header (EM_CUDA): EF_CUDA_SM is the low
// byte of e_flags in the layout nvcc used before EI_ABIVERSION 8, the next
// byte from 8 on (observed on CUDA 13's cubins: 0x6005004 sm_80, 0x6005a04
// sm_90, 0x6006402 sm_100; the header does not tell sm_90a from sm_90).
// nullopt for anything else, or an SM below 10.
std::optional<std::string> cuda_processor(Bytes header);

// A file that is one piece of device code on its own, as ROCm's Tensile
// libraries and PyTorch's wheels ship thousands of them
// (TensileLibrary_gfx90a.co, Kernels.so-000-gfx90a.hsaco):
//   an AMDGPU code object   ELF64, EM_AMDGPU (the header's target ID)
//   an NVIDIA cubin         ELF, EM_CUDA (EF_CUDA_SM)
//   PTX text                blank and // comment lines (no text bundle's
//                           marker among them), then ".version X.Y",
//                           then ".target sm_XY" (compute_XY names it, as a
//                           fatbin's PTX entry is named)
struct BareCode {
  enum class Kind { AmdgpuCodeObject, Cubin, Ptx };
  Kind kind = Kind::AmdgpuCodeObject;
  // The ID its entry gets: the code object's target ID ("gfx90a:xnack-"),
  // "sm_80", "compute_80"; for a processor this build does not know, a
  // description that names no target ("EF_AMDGPU_MACH 0x51").
  std::string id;
  bool known = true;  // `id` names a target
  std::string_view description() const;  // "AMDGPU code object", "cubin", "PTX"
};
// How much of a file's start bare_code needs to see (the ELF header; PTX's
// directives after the compiler's comment block).
inline constexpr std::size_t kBareCodeSniff = 4096;
// nullopt when `prefix` (a file's first bytes, up to kBareCodeSniff) is none of
// the above; never throws.
std::optional<BareCode> bare_code(Bytes prefix);

}  // namespace ot::compat
