// The parts of llvm::Triple that leak into offload-bundler behaviour: the
// 4-field split, the known-architecture test (isTripleValid) and the enum-level
// comparison behind Triple::isCompatibleWith.
#pragma once

#include <string>
#include <string_view>

namespace ot::target {

class Triple {
 public:
  Triple() = default;
  explicit Triple(std::string_view text);                  // llvm::Triple(text): str() is the text as given
  // The 4-argument constructor: always 3 dashes. `amdgpu_names`: LLVM 23's
  // parser, which takes "amdgpu" and "amdgpu<subarch>" for the AMDGPU arch.
  Triple(std::string_view arch, std::string_view vendor, std::string_view os, std::string_view env,
         bool amdgpu_names = false);

  const std::string& str() const { return text_; }
  std::string_view arch_name() const { return arch_; }
  std::string_view vendor_name() const { return vendor_; }
  std::string_view os_name() const { return os_; }
  std::string_view environment_name() const { return env_; }

  // Canonical enum spellings ("" = unknown), as llvm::Triple's parsers map them.
  std::string_view arch() const { return arch_kind_; }
  std::string_view vendor() const { return vendor_kind_; }
  std::string_view os() const { return os_kind_; }
  std::string_view environment() const { return env_kind_; }
  std::string_view object_format() const { return objfmt_kind_; }

  bool has_known_arch() const { return !arch_kind_.empty(); }
  bool is_amdgcn() const { return arch_kind_ == "amdgcn"; }
  bool is_amdgpu() const { return arch_kind_ == "amdgcn" || arch_kind_ == "r600"; }
  bool is_nvptx() const { return arch_kind_ == "nvptx" || arch_kind_ == "nvptx64"; }
  bool is_windows() const { return os_kind_ == "windows"; }
  bool is_darwin() const { return os_kind_ == "darwin" || os_kind_ == "macosx" || os_kind_ == "ios"; }

  // LLVM 23's AMDGPU subarch: the arch text after "amdgpu" ("9.06", "" for
  // amdgcn and amdgpu). Only meaningful for an amdgcn triple.
  std::string_view amdgpu_subarch() const {
    return std::string_view(arch_).starts_with("amdgpu") ? std::string_view(arch_).substr(6) : std::string_view();
  }

  // Triple::isCompatibleWith, `this` the code object's triple, `other` the
  // request's (23's AMDGPU subarches match asymmetrically).
  bool is_compatible_with(const Triple& other) const;

 private:
  void classify();
  std::string text_, arch_, vendor_, os_, env_;
  bool amdgpu_names_ = false;
  std::string_view arch_kind_, vendor_kind_, os_kind_, env_kind_, objfmt_kind_;
};

// llvm::Triple::normalize(text, form): components moved to the positions they
// parse as (arch, vendor, OS, environment), empty ones "unknown", Windows
// spellings made canonical, then cut or padded to `form` components (3 or 4).
std::string normalize_triple(std::string_view text, std::size_t form, bool amdgpu_names = false);

// LLVM 23's subarch rule for an AMDGPU code object (`code`) serving a request
// (`target`); "" is no subarch (amdgcn, amdgpu).
bool amdgpu_subarches_compatible(std::string_view code, std::string_view target);

}  // namespace ot::target
