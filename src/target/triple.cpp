#include "target/triple.h"

#include <array>
#include <span>
#include <utility>
#include <vector>

namespace ot::target {
namespace {

using Alias = std::pair<std::string_view, std::string_view>;  // spelling -> canonical

// llvm::Triple::parseArch spellings (exact names; the arm/aarch64 families are
// matched by prefix below, as LLVM does through ARM::parseArch).
constexpr Alias kArchs[] = {
    {"i386", "x86"}, {"i486", "x86"}, {"i586", "x86"}, {"i686", "x86"}, {"i786", "x86"}, {"i886", "x86"},
    {"i986", "x86"}, {"amd64", "x86_64"}, {"x86_64", "x86_64"}, {"x86_64h", "x86_64"},
    {"powerpc", "ppc"}, {"ppc", "ppc"}, {"ppc32", "ppc"}, {"powerpcle", "ppcle"}, {"ppcle", "ppcle"},
    {"ppc32le", "ppcle"}, {"powerpc64", "ppc64"}, {"ppu", "ppc64"}, {"ppc64", "ppc64"},
    {"powerpc64le", "ppc64le"}, {"ppc64le", "ppc64le"}, {"xscale", "arm"}, {"xscaleeb", "armeb"},
    {"aarch64", "aarch64"}, {"aarch64_be", "aarch64_be"}, {"aarch64_32", "aarch64_32"}, {"arc", "arc"},
    {"arm64", "aarch64"}, {"arm64_32", "aarch64_32"}, {"arm64e", "aarch64"}, {"arm64ec", "aarch64"},
    {"arm", "arm"}, {"armeb", "armeb"}, {"thumb", "thumb"}, {"thumbeb", "thumbeb"}, {"avr", "avr"},
    {"m68k", "m68k"}, {"msp430", "msp430"}, {"mips", "mips"}, {"mipseb", "mips"}, {"mipsallegrex", "mips"},
    {"mipsisa32r6", "mips"}, {"mipsr6", "mips"}, {"mipsel", "mipsel"}, {"mipsallegrexel", "mipsel"},
    {"mipsisa32r6el", "mipsel"}, {"mipsr6el", "mipsel"}, {"mips64", "mips64"}, {"mips64eb", "mips64"},
    {"mipsn32", "mips64"}, {"mipsisa64r6", "mips64"}, {"mips64r6", "mips64"}, {"mipsn32r6", "mips64"},
    {"mips64el", "mips64el"}, {"mipsn32el", "mips64el"}, {"mipsisa64r6el", "mips64el"},
    {"mips64r6el", "mips64el"}, {"mipsn32r6el", "mips64el"}, {"r600", "r600"}, {"amdgcn", "amdgcn"},
    {"riscv32", "riscv32"}, {"riscv64", "riscv64"}, {"hexagon", "hexagon"}, {"s390x", "systemz"},
    {"systemz", "systemz"}, {"sparc", "sparc"}, {"sparcel", "sparcel"}, {"sparcv9", "sparcv9"},
    {"sparc64", "sparcv9"}, {"tce", "tce"}, {"tcele", "tcele"}, {"xcore", "xcore"}, {"nvptx", "nvptx"},
    {"nvptx64", "nvptx64"}, {"le32", "le32"}, {"le64", "le64"}, {"amdil", "amdil"}, {"amdil64", "amdil64"},
    {"hsail", "hsail"}, {"hsail64", "hsail64"}, {"spir", "spir"}, {"spir64", "spir64"}, {"spirv", "spirv"},
    {"spirv32", "spirv32"}, {"spirv32v1.0", "spirv32"}, {"spirv32v1.1", "spirv32"},
    {"spirv32v1.2", "spirv32"}, {"spirv32v1.3", "spirv32"}, {"spirv32v1.4", "spirv32"},
    {"spirv32v1.5", "spirv32"}, {"spirv32v1.6", "spirv32"}, {"spirv64", "spirv64"},
    {"spirv64v1.0", "spirv64"}, {"spirv64v1.1", "spirv64"}, {"spirv64v1.2", "spirv64"},
    {"spirv64v1.3", "spirv64"}, {"spirv64v1.4", "spirv64"}, {"spirv64v1.5", "spirv64"},
    {"spirv64v1.6", "spirv64"}, {"lanai", "lanai"}, {"renderscript32", "renderscript32"},
    {"renderscript64", "renderscript64"}, {"shave", "shave"}, {"ve", "ve"}, {"wasm32", "wasm32"},
    {"wasm64", "wasm64"}, {"csky", "csky"}, {"loongarch32", "loongarch32"}, {"loongarch64", "loongarch64"},
    {"dxil", "dxil"}, {"xtensa", "xtensa"}, {"bpf", "bpfel"}, {"bpf_be", "bpfeb"}, {"bpfeb", "bpfeb"},
    {"bpfel", "bpfel"}, {"kalimba", "kalimba"}, {"kalimba3", "kalimba"}, {"kalimba4", "kalimba"},
    {"kalimba5", "kalimba"}, {"sparcv9", "sparcv9"}, {"lanai", "lanai"},
};

constexpr Alias kVendors[] = {
    {"apple", "apple"}, {"pc", "pc"}, {"scei", "scei"}, {"sie", "scei"}, {"fsl", "fsl"}, {"ibm", "ibm"},
    {"img", "img"}, {"mti", "mti"}, {"nvidia", "nvidia"}, {"csr", "csr"}, {"amd", "amd"}, {"mesa", "mesa"},
    {"suse", "suse"}, {"oe", "oe"}, {"intel", "intel"},
};

// llvm::Triple::parseOS and parseEnvironment match by prefix, in this order.
constexpr Alias kOses[] = {
    {"darwin", "darwin"}, {"dragonfly", "dragonfly"}, {"freebsd", "freebsd"}, {"fuchsia", "fuchsia"},
    {"ios", "ios"}, {"kfreebsd", "kfreebsd"}, {"linux", "linux"}, {"lv2", "lv2"}, {"macos", "macosx"},
    {"netbsd", "netbsd"}, {"openbsd", "openbsd"}, {"solaris", "solaris"}, {"uefi", "uefi"},
    {"win32", "windows"}, {"windows", "windows"}, {"zos", "zos"}, {"haiku", "haiku"}, {"rtems", "rtems"},
    {"nacl", "nacl"}, {"aix", "aix"}, {"cuda", "cuda"}, {"nvcl", "nvcl"}, {"amdhsa", "amdhsa"},
    {"ps4", "ps4"}, {"ps5", "ps5"}, {"elfiamcu", "elfiamcu"}, {"tvos", "tvos"}, {"watchos", "watchos"},
    {"bridgeos", "bridgeos"}, {"driverkit", "driverkit"}, {"xros", "xros"}, {"visionos", "xros"},
    {"mesa3d", "mesa3d"}, {"amdpal", "amdpal"}, {"hermit", "hermit"}, {"hurd", "hurd"}, {"wasi", "wasi"},
    {"emscripten", "emscripten"}, {"shadermodel", "shadermodel"}, {"liteos", "liteos"},
    {"serenity", "serenity"}, {"vulkan", "vulkan"}, {"none", ""},
};

constexpr Alias kEnvironments[] = {
    {"eabihf", "eabihf"}, {"eabi", "eabi"}, {"gnuabin32", "gnuabin32"}, {"gnuabi64", "gnuabi64"},
    {"gnueabihft64", "gnueabihft64"}, {"gnueabihf", "gnueabihf"}, {"gnueabit64", "gnueabit64"},
    {"gnueabi", "gnueabi"}, {"gnuf32", "gnuf32"}, {"gnuf64", "gnuf64"}, {"gnusf", "gnusf"},
    {"gnux32", "gnux32"}, {"gnu_ilp32", "gnu_ilp32"}, {"code16", "code16"}, {"gnut64", "gnut64"},
    {"gnu", "gnu"}, {"android", "android"}, {"musleabihf", "musleabihf"}, {"musleabi", "musleabi"},
    {"muslx32", "muslx32"}, {"musl", "musl"}, {"msvc", "msvc"}, {"itanium", "itanium"},
    {"cygnus", "cygnus"}, {"coreclr", "coreclr"}, {"simulator", "simulator"}, {"macabi", "macabi"},
    {"pixel", "pixel"}, {"vertex", "vertex"}, {"geometry", "geometry"}, {"hull", "hull"},
    {"domain", "domain"}, {"compute", "compute"}, {"library", "library"}, {"raygeneration", "raygeneration"},
    {"intersection", "intersection"}, {"anyhit", "anyhit"}, {"closesthit", "closesthit"}, {"miss", "miss"},
    {"callable", "callable"}, {"mesh", "mesh"}, {"amplification", "amplification"},
    {"opencl", "opencl"}, {"ohos", "ohos"}, {"pauthtest", "pauthtest"},
};

std::string_view lookup_exact(std::span<const Alias> table, std::string_view s) {
  for (const auto& [name, kind] : table)
    if (name == s) return kind;
  return {};
}

std::string_view lookup_prefix(std::span<const Alias> table, std::string_view s) {
  for (const auto& [name, kind] : table)
    if (s.starts_with(name)) return kind;
  return {};
}

// LLVM 23 (PR #206480) parses every arch text starting with "amdgpu" as the one
// AMDGPU arch that "amdgcn" also names (our kind "amdgcn"), the rest a subarch.
std::string_view parse_arch(std::string_view a, bool amdgpu_names = false) {
  if (amdgpu_names && a.starts_with("amdgpu")) return "amdgcn";
  if (auto k = lookup_exact(kArchs, a); !k.empty()) return k;
  // ARM::parseArch: armv7a, thumbv7m, armv8.2a... keep the family.
  for (std::string_view fam : {"armeb", "thumbeb", "arm", "thumb"}) {
    if (a.starts_with(fam) && a.size() > fam.size() && a[fam.size()] == 'v') return lookup_exact(kArchs, fam);
  }
  if (a.starts_with("aarch64") || a.starts_with("arm64")) return {};
  return {};
}

std::string_view object_format_of(std::string_view env_text) {
  if (env_text.ends_with("elf")) return "elf";
  if (env_text.ends_with("coff")) return "coff";
  if (env_text.ends_with("macho")) return "macho";
  if (env_text.ends_with("xcoff")) return "xcoff";
  if (env_text.ends_with("wasm")) return "wasm";
  if (env_text.ends_with("goff")) return "goff";
  if (env_text.ends_with("spirv")) return "spirv";
  if (env_text.ends_with("dxcontainer")) return "dxcontainer";
  return {};
}

}  // namespace

Triple::Triple(std::string_view text) : text_(text) {
  std::string_view rest = text;
  std::string pieces[4];
  for (int i = 0; i < 4; ++i) {
    if (i == 3) {
      pieces[i] = std::string(rest);
      break;
    }
    auto dash = rest.find('-');
    pieces[i] = std::string(rest.substr(0, dash));
    if (dash == std::string_view::npos) {
      rest = {};
      for (int j = i + 1; j < 4; ++j) pieces[j].clear();
      break;
    }
    rest = rest.substr(dash + 1);
  }
  arch_ = pieces[0];
  vendor_ = pieces[1];
  os_ = pieces[2];
  env_ = pieces[3];
  classify();
}

Triple::Triple(std::string_view arch, std::string_view vendor, std::string_view os, std::string_view env,
               bool amdgpu_names)
    : arch_(arch), vendor_(vendor), os_(os), env_(env), amdgpu_names_(amdgpu_names) {
  text_ = arch_ + "-" + vendor_ + "-" + os_ + "-" + env_;
  classify();
}

void Triple::classify() {
  arch_kind_ = parse_arch(arch_, amdgpu_names_);
  vendor_kind_ = lookup_exact(kVendors, vendor_);
  os_kind_ = lookup_prefix(kOses, os_);
  env_kind_ = lookup_prefix(kEnvironments, env_);
  objfmt_kind_ = object_format_of(env_);
  if (objfmt_kind_.empty()) {
    // Triple's default object format for the OS / arch.
    if (is_darwin() || os_kind_ == "tvos" || os_kind_ == "watchos" || os_kind_ == "driverkit" ||
        os_kind_ == "bridgeos" || os_kind_ == "xros")
      objfmt_kind_ = "macho";
    else if (os_kind_ == "windows")
      objfmt_kind_ = "coff";
    else if (os_kind_ == "aix")
      objfmt_kind_ = "xcoff";
    else if (os_kind_ == "zos")
      objfmt_kind_ = "goff";
    else if (arch_kind_ == "wasm32" || arch_kind_ == "wasm64")
      objfmt_kind_ = "wasm";
    else if (arch_kind_ == "spirv" || arch_kind_ == "spirv32" || arch_kind_ == "spirv64")
      objfmt_kind_ = "spirv";
    else if (arch_kind_ == "dxil")
      objfmt_kind_ = "dxcontainer";
    else if (!arch_kind_.empty())
      objfmt_kind_ = "elf";
  }
}

std::string normalize_triple(std::string_view text, std::size_t form, bool amdgpu_names) {
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    auto dash = text.find('-', start);
    parts.emplace_back(text.substr(start, dash == std::string_view::npos ? std::string_view::npos : dash - start));
    if (dash == std::string_view::npos) break;
    start = dash + 1;
  }
  auto is_cygwin = [](std::string_view c) { return c.starts_with("cygwin"); };
  auto is_mingw = [](std::string_view c) { return c.starts_with("mingw"); };
  // What component `c` is valid as at `pos` (0 arch, 1 vendor, 2 OS, 3 environment or object format).
  auto valid_at = [&](std::size_t pos, std::string_view c) {
    switch (pos) {
      case 0: return !parse_arch(c, amdgpu_names).empty();
      case 1: return !lookup_exact(kVendors, c).empty();
      case 2: return !lookup_prefix(kOses, c).empty() || is_cygwin(c) || is_mingw(c);
      default: return !lookup_prefix(kEnvironments, c).empty() || !object_format_of(c).empty();
    }
  };
  // Components already valid where they stand stay there (llvm::Triple::normalize).
  bool found[4] = {};
  for (std::size_t pos = 0; pos < 4 && pos < parts.size(); ++pos) {
    found[pos] = pos == 2 ? !lookup_prefix(kOses, parts[pos]).empty() : valid_at(pos, parts[pos]);
    if (pos == 3) found[pos] = !lookup_prefix(kEnvironments, parts[pos]).empty();
  }
  for (std::size_t pos = 0; pos < 4; ++pos) {
    if (found[pos]) continue;
    for (std::size_t idx = 0; idx < parts.size(); ++idx) {
      if (idx < 4 && found[idx]) continue;
      if (!valid_at(pos, parts[idx])) continue;
      std::string comp = parts[idx];
      if (pos < idx) {
        // Insert at pos, pushing the components in the way (not fixed ones) right.
        std::string current;
        std::swap(current, parts[idx]);
        for (std::size_t i = pos; !current.empty(); ++i) {
          while (i < 4 && found[i]) ++i;
          if (i >= parts.size()) parts.resize(i + 1);
          std::swap(current, parts[i]);
        }
      } else if (pos > idx) {
        // Push right by inserting empty components until it reaches pos.
        do {
          std::string current;
          for (std::size_t i = idx; i < parts.size();) {
            std::swap(current, parts[i]);
            if (current.empty()) break;
            while (++i < 4 && found[i]) {
            }
          }
          if (!current.empty()) parts.push_back(current);
          while (++idx < 4 && found[idx]) {
          }
        } while (idx < pos);
      }
      found[pos] = true;
      break;
    }
  }
  if (parts.size() > 2 && found[0] && !found[1] && !found[2] && found[3] && parts[1] == "none" && parts[2].empty())
    std::swap(parts[1], parts[2]);
  for (std::string& c : parts)
    if (c.empty()) c = "unknown";
  // Windows spellings (win32, mingw, cygwin) become windows-<environment>.
  std::string_view os = parts.size() > 2 ? lookup_prefix(kOses, parts[2]) : std::string_view();
  bool mingw = parts.size() > 2 && is_mingw(parts[2]), cygwin = parts.size() > 2 && is_cygwin(parts[2]);
  std::string_view env = parts.size() > 3 ? lookup_prefix(kEnvironments, parts[3]) : std::string_view();
  std::string_view format = parts.size() > 3 ? object_format_of(parts[3]) : std::string_view();
  if (os == "windows") {
    parts.resize(4, "unknown");
    parts[2] = "windows";
    if (env.empty()) parts[3] = format.empty() || format == "coff" ? "msvc" : std::string(format);
  } else if (mingw) {
    parts.resize(4, "unknown");
    parts[2] = "windows";
    parts[3] = "gnu";
  } else if (cygwin) {
    parts.resize(4, "unknown");
    parts[2] = "windows";
    parts[3] = "cygnus";
  }
  if ((mingw || cygwin || (os == "windows" && !env.empty())) && !format.empty() && format != "coff") {
    parts.resize(5);
    parts[4] = format;
  }
  parts.resize(form, "unknown");
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "-" : "") + parts[i];
  return out;
}

bool Triple::is_compatible_with(const Triple& o) const {
  // ARM and Thumb of the same width are interchangeable.
  auto arm_family = [](std::string_view a) -> std::string_view {
    if (a == "thumb") return "arm";
    if (a == "thumbeb") return "armeb";
    return a;
  };
  bool arch_ok = arch_kind_ == o.arch_kind_ || (!arch_kind_.empty() && arm_family(arch_kind_) == arm_family(o.arch_kind_));
  if (!arch_ok) return false;
  if ((amdgpu_names_ || o.amdgpu_names_) && is_amdgcn() && !amdgpu_subarches_compatible(amdgpu_subarch(), o.amdgpu_subarch()))
    return false;
  // Apple vendors ignore the OS version: compare kinds only, which is what we hold.
  return vendor_kind_ == o.vendor_kind_ && os_kind_ == o.os_kind_ && env_kind_ == o.env_kind_ &&
         objfmt_kind_ == o.objfmt_kind_;
}

}  // namespace ot::target

namespace ot::target {
namespace {

// LLVM 23's AMDGPU subarches (Triple::parseSubArch, PR #206480), each with the
// family's major subarch it belongs to ("" none). "9.5" and "10" are aliases
// of "9.4" and "10.1".
struct AmdgpuSubarch {
  std::string_view name, family;
};
constexpr AmdgpuSubarch kAmdgpuSubarches[] = {
    {"6", ""},      {"6.00", "6"},    {"6.01", "6"},    {"6.02", "6"},    {"7", ""},        {"7.00", "7"},
    {"7.01", "7"},  {"7.02", "7"},    {"7.03", "7"},    {"7.04", "7"},    {"7.05", "7"},    {"8", ""},
    {"8.01", "8"},  {"8.02", "8"},    {"8.03", "8"},    {"8.05", "8"},    {"8.10", ""},     {"9", ""},
    {"9.00", "9"},  {"9.02", "9"},    {"9.04", "9"},    {"9.06", "9"},    {"9.09", "9"},    {"9.0c", "9"},
    {"9.08", ""},   {"9.0a", ""},     {"9.4", ""},      {"9.42", "9.4"},  {"9.50", "9.4"},  {"10.1", ""},
    {"10.10", "10.1"}, {"10.11", "10.1"}, {"10.12", "10.1"}, {"10.13", "10.1"}, {"10.3", ""},
    {"10.30", "10.3"}, {"10.31", "10.3"}, {"10.32", "10.3"}, {"10.33", "10.3"}, {"10.34", "10.3"},
    {"10.35", "10.3"}, {"10.36", "10.3"}, {"11", ""},       {"11.00", "11"},   {"11.01", "11"},
    {"11.02", "11"},   {"11.03", "11"},   {"11.50", "11"},  {"11.51", "11"},   {"11.52", "11"},
    {"11.53", "11"},   {"11.54", "11"},   {"11.7", ""},     {"11.70", "11.7"}, {"11.71", "11.7"},
    {"11.72", "11.7"}, {"12", ""},        {"12.00", "12"},  {"12.01", "12"},   {"12.5", ""},
    {"12.50", "12.5"}, {"12.51", "12.5"}, {"13", ""},       {"13.10", "13"},
};

const AmdgpuSubarch* find_subarch(std::string_view s) {
  if (s == "9.5") s = "9.4";
  if (s == "10") s = "10.1";
  for (const AmdgpuSubarch& a : kAmdgpuSubarches)
    if (a.name == s) return &a;
  return nullptr;
}

}  // namespace

// Observed (docs/llvm23.md): no subarch on either side matches (unless the code
// object's subarch is unknown: it never matches); otherwise a subarch matches
// itself and its family's major subarch, in either direction, never a sibling.
bool amdgpu_subarches_compatible(std::string_view code, std::string_view target) {
  const AmdgpuSubarch* c = code.empty() ? nullptr : find_subarch(code);
  if (!code.empty() && !c) return false;
  if (code.empty() || target.empty()) return true;
  const AmdgpuSubarch* t = find_subarch(target);
  if (!t) return false;
  return c == t || c->family == t->name || t->family == c->name;
}

}  // namespace ot::target
