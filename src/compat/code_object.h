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

}  // namespace ot::compat
