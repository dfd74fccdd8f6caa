// Per-GPU files: the one table of the file layouts ROCm libraries install
// beside their shared libraries, one file (or several) per GPU, and the rule
// that tells such a file from any other. Knows nothing of pruning or of
// command lines: prune (prune/per_gpu_rule.h) and size read it.
//
//   layout    files (<gfx>: a GPU target in the layout's spelling)          where
//   Tensile   TensileLibrary_<...>_<gfx>.co|.hsaco|.dat                     a folder holding per-GPU
//             TensileLibrary_lazy_<gfx>.dat, TensileLibrary_<gfx>.dat       device code (a bare code
//             Kernels.so-<nnn>-<gfx>.hsaco, extop_<gfx>.co                   object, a bundle or a
//             (rocBLAS, hipBLASLt, rocSOLVER's Tensile parts)                compressed bundle)
//   MIOpen    <db id>.kdb, .HIP.fdb.txt, .OpenCL.fdb.txt, .fdb.txt, .db,     a folder .../miopen/db
//             .db.txt, .cd.pdb.txt, .udb.txt; <gfx>[_metadata].tn.model,
//             <gfx>*.ktn.model (the AI heuristics' models)
//
// Tensile spells a target ID's features with '-' or ':' ("gfx90a-xnack+",
// "gfx90a:xnack-"). MIOpen's db id is the processor, "_nosramecc" or
// "_sramecc" where that differs from the processor's default, "_xnack" when
// on, then the compute units: "_<decimal>" up to 64, else hex without a
// separator (miopen::Handle::GetDbBasename): gfx90a68.kdb (104 CUs),
// gfx1030_36.kdb, gfx906_60.HIP.fdb.txt, gfx908_nosramecc78.db.
//
// Files named for no GPU (TensileLiteLibrary_lazy_Mapping.dat,
// TensileLibrary_*_fallback.dat, hipblasltExtOpLibrary.dat, rocBLAS 5's one
// TensileLibrary.dat) are no per-GPU files. Looked at and not in the table
// (docs/per-gpu-files.md): rocFFT's kernel cache (one file for every GPU),
// composable_kernel (headers and static code: its kernels live in the
// libraries that use it), MIGraphX (compiles at run time, ships no per-GPU
// files), AITER (hsa/<gfx>/ folders of bare code objects: those are device
// code, pruned as such; its CSV tuning files there are left as they are).
#pragma once

#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "support/bytes.h"

namespace ot::contents {

struct PerGpuLayout {
  std::string_view name;   // "Tensile"
  std::string_view files;  // the names it covers, in words (--help, docs/per-gpu-files.md)
  std::string_view where;  // the folder rule, in words
  // The target ID (canonical: "gfx90a:xnack+") a file's base name carries
  // in this layout, or nullopt when the name is none of the layout's.
  std::optional<std::string> (*target_of)(std::string_view base_name);
  // The folder must hold per-GPU device code (Tensile); else it must end in
  // `folder` (MIOpen's databases hold no code object a walk can see).
  bool needs_code_folder = true;
  std::string_view folder = {};
};

std::span<const PerGpuLayout> per_gpu_layouts();

struct PerGpuName {
  const PerGpuLayout* layout = nullptr;
  std::string target;  // canonical target ID
};

// By the base name alone: the layout naming it for a GPU.
std::optional<PerGpuName> per_gpu_name(std::string_view base_name);

// Whether a file whose first bytes (up to compat::kBareCodeSniff) are
// `prefix` is itself per-GPU device code: a bare code object, cubin or PTX, a
// bundle, a compressed bundle, offload binaries or an NVIDIA fatbin (not a
// host object or archive holding them).
bool is_standalone_device_code(Bytes prefix);

// The rule over one input (a directory tree, a package's members): told which
// files are per-GPU device code, it says which files are per-GPU files.
// Paths are relative, '/'-separated, as the input stores them.
class PerGpuFiles {
 public:
  void add_device_code_file(std::string_view path);
  // The layout and target of a file that is a per-GPU file here: its name is
  // in the table and its folder passes the layout's rule.
  std::optional<PerGpuName> classify(std::string_view path) const;

 private:
  std::set<std::string, std::less<>> code_folders_;
};

// The folder of a relative path ("" at the top) and its base name.
std::string_view folder_of(std::string_view path);
std::string_view base_name_of(std::string_view path);

}  // namespace ot::contents
