#include "contents/per_gpu.h"

#include <algorithm>
#include <array>
#include <map>

#include "compat/code_object.h"
#include "contents/walker.h"
#include "target/processors.h"

namespace ot::contents {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }

// "<processor>" + "<feature><sign>"... as a canonical target ID (features in
// alphabetical order), or nullopt when a feature is unknown to the processor.
std::optional<std::string> target_id(const target::ProcessorInfo& p, const std::map<std::string_view, bool>& features) {
  std::string id(p.name);
  for (const auto& [f, on] : features) {  // std::map: alphabetical
    if (!p.supports(f)) return std::nullopt;
    id += fmt::format(":{}{}", f, on ? '+' : '-');
  }
  return id;
}

// The longest known processor name `s` starts with for which `rest` accepts
// what follows it: the processor and what `rest` made of the tail.
template <typename Rest>
std::optional<std::string> with_processor(std::string_view s, Rest rest) {
  if (!s.starts_with("gfx")) return std::nullopt;
  for (std::size_t n = std::min<std::size_t>(s.size(), 24); n >= 6; --n) {
    const target::ProcessorInfo* p = target::find_processor(s.substr(0, n));
    if (!p || p->name != s.substr(0, n)) continue;  // primary names only (file names carry no aliases)
    if (std::optional<std::string> id = rest(*p, s.substr(n))) return id;
  }
  return std::nullopt;
}

// Tensile's spelling of a target ID: "gfx90a", "gfx90a-xnack+", "gfx90a:xnack-",
// "gfx942:sramecc+:xnack-".
std::optional<std::string> tensile_target(std::string_view token) {
  return with_processor(token, [](const target::ProcessorInfo& p, std::string_view tail) -> std::optional<std::string> {
    std::map<std::string_view, bool> features;
    while (!tail.empty()) {
      if (tail.front() != '-' && tail.front() != ':') return std::nullopt;
      tail.remove_prefix(1);
      bool found = false;
      for (std::string_view f : target::kTargetFeatures) {
        if (tail.size() > f.size() && tail.starts_with(f) && (tail[f.size()] == '+' || tail[f.size()] == '-')) {
          if (!features.emplace(f, tail[f.size()] == '+').second) return std::nullopt;
          tail.remove_prefix(f.size() + 1);
          found = true;
          break;
        }
      }
      if (!found) return std::nullopt;
    }
    return target_id(p, features);
  });
}

bool ends_with_any(std::string_view s, std::initializer_list<std::string_view> ends, std::string_view& stem) {
  for (std::string_view e : ends)
    if (s.size() > e.size() && s.ends_with(e)) {
      stem = s.substr(0, s.size() - e.size());
      return true;
    }
  return false;
}

std::optional<std::string> tensile_file(std::string_view base) {
  std::string_view stem;
  if (!ends_with_any(base, {".co", ".hsaco", ".dat"}, stem)) return std::nullopt;
  if (stem.starts_with("Kernels.so-")) {  // Kernels.so-000-gfx90a-xnack+.hsaco
    std::string_view rest = stem.substr(11);
    const std::size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string_view::npos ||
        !std::all_of(rest.begin(), rest.begin() + static_cast<std::ptrdiff_t>(dash), is_digit))
      return std::nullopt;
    return tensile_target(rest.substr(dash + 1));
  }
  if (!stem.starts_with("TensileLibrary") && !stem.starts_with("TensileLiteLibrary") && !stem.starts_with("extop_"))
    return std::nullopt;
  const std::size_t at = stem.rfind("_gfx");  // the target is the last '_' field
  if (at == std::string_view::npos) return std::nullopt;
  return tensile_target(stem.substr(at + 1));
}

// MIOpen's db id and compute units: "gfx90a68", "gfx1030_36", "gfx908_nosramecc78", "gfx90a_xnack".
std::optional<std::string> miopen_db_id(std::string_view stem) {
  return with_processor(stem, [](const target::ProcessorInfo& p, std::string_view tail) -> std::optional<std::string> {
    std::map<std::string_view, bool> features;
    if (tail.starts_with("_nosramecc")) {
      features["sramecc"] = false;
      tail.remove_prefix(10);
    } else if (tail.starts_with("_sramecc")) {
      features["sramecc"] = true;
      tail.remove_prefix(8);
    }
    if (tail.starts_with("_xnack")) {
      features["xnack"] = true;
      tail.remove_prefix(6);
    }
    // The compute units: "_<decimal>" (up to 64) or hex digits (more), or none (a kdb by device name).
    if (tail.starts_with('_')) {
      tail.remove_prefix(1);
      if (tail.empty() || !std::all_of(tail.begin(), tail.end(), is_digit)) return std::nullopt;
    } else if (!std::all_of(tail.begin(), tail.end(), is_hex)) {
      return std::nullopt;
    }
    return target_id(p, features);
  });
}

std::optional<std::string> miopen_file(std::string_view base) {
  std::string_view stem;
  if (ends_with_any(base, {".ktn.model", ".tn.model"}, stem)) {
    // gfx908.tn.model, gfx908_metadata.tn.model, gfx90a_<solver>_encoder.ktn.model
    return with_processor(stem, [](const target::ProcessorInfo& p, std::string_view tail) -> std::optional<std::string> {
      if (!tail.empty() && (tail.size() < 2 || tail[0] != '_' || is_digit(tail[1]))) return std::nullopt;
      return std::string(p.name);
    });
  }
  if (!ends_with_any(base, {".HIP.fdb.txt", ".OpenCL.fdb.txt", ".fdb.txt", ".cd.pdb.txt", ".udb.txt", ".db.txt",
                            ".kdb", ".db"},
                     stem))
    return std::nullopt;
  return miopen_db_id(stem);
}

constexpr std::array kLayouts = {
    PerGpuLayout{"Tensile",
                 "TensileLibrary_<...>_<gfx> with .co, .hsaco or .dat, TensileLibrary_lazy_<gfx>.dat, "
                 "TensileLibrary_<gfx>.dat, "
                 "Kernels.so-<nnn>-<gfx>.hsaco, extop_<gfx>.co (rocBLAS, hipBLASLt, rocSOLVER)",
                 "in a folder holding per-GPU device code", tensile_file, true},
    PerGpuLayout{"MIOpen",
                 "<gfx><cus> with .kdb, .HIP.fdb.txt, .OpenCL.fdb.txt, .fdb.txt, .db, .db.txt, .cd.pdb.txt or "
                 ".udb.txt (gfx90a68.kdb, gfx1030_36.kdb), <gfx>[_metadata].tn.model, <gfx>_*.ktn.model",
                 "in a folder .../miopen/db", miopen_file, false, "miopen/db"},
};

}  // namespace

std::span<const PerGpuLayout> per_gpu_layouts() { return kLayouts; }

std::optional<PerGpuName> per_gpu_name(std::string_view base_name) {
  for (const PerGpuLayout& l : kLayouts)
    if (std::optional<std::string> t = l.target_of(base_name)) return PerGpuName{&l, std::move(*t)};
  return std::nullopt;
}

bool is_standalone_device_code(Bytes prefix) {
  return compat::bare_code(prefix) || !container_kind(prefix).empty();
}

std::string_view folder_of(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
}

std::string_view base_name_of(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

void PerGpuFiles::add_device_code_file(std::string_view path) { code_folders_.emplace(folder_of(path)); }

std::optional<PerGpuName> PerGpuFiles::classify(std::string_view path) const {
  std::optional<PerGpuName> n = per_gpu_name(base_name_of(path));
  if (!n) return std::nullopt;
  const std::string_view folder = folder_of(path);
  const bool ok = n->layout->needs_code_folder
                      ? code_folders_.contains(folder)
                      : folder == n->layout->folder || folder.ends_with(fmt::format("/{}", n->layout->folder));
  if (!ok) return std::nullopt;
  return n;
}

}  // namespace ot::contents
