#include "compat/code_object.h"

#include <fmt/format.h>

#include "target/processors.h"

namespace ot::compat {
namespace {

constexpr std::uint16_t kEmAmdgpu = 224;
constexpr std::uint16_t kEmCuda = 190;
constexpr std::uint64_t kElf64HeaderSize = 64;

}  // namespace

std::optional<CodeObjectTarget> amdgpu_code_object(Bytes data) {
  if (data.size() < kElf64HeaderSize) return std::nullopt;
  const std::byte* p = data.data();
  if (as_chars(data.first(4)) != "\x7f" "ELF") return std::nullopt;
  if (p[4] != std::byte{2} || p[5] != std::byte{1}) return std::nullopt;  // ELFCLASS64, ELFDATA2LSB
  if (load_le<std::uint16_t>(p + 18) != kEmAmdgpu) return std::nullopt;
  CodeObjectTarget t;
  t.e_flags = load_le<std::uint32_t>(p + 48);
  unsigned abi = std::to_integer<unsigned>(p[8]);  // EI_ABIVERSION
  t.code_object_version = abi + 2;
  t.mach = t.e_flags & 0xff;
  const target::ProcessorInfo* info = target::find_processor_by_elf_mach(t.mach);
  if (!info) return t;
  t.target_id = std::string(info->name);
  auto add = [&](std::string_view feature, bool on) {
    t.target_id += ':';
    t.target_id += feature;
    t.target_id += on ? '+' : '-';
  };
  if (abi < 2) {
    if (info->sramecc) add("sramecc", (t.e_flags & 0x200) != 0);
    if (info->xnack) add("xnack", (t.e_flags & 0x100) != 0);
    return t;
  }
  unsigned sramecc = t.e_flags & 0xc00, xnack = t.e_flags & 0x300;
  if (sramecc == 0x800 || sramecc == 0xc00) add("sramecc", sramecc == 0xc00);
  if (xnack == 0x200 || xnack == 0x300) add("xnack", xnack == 0x300);
  if (abi >= 4) t.generic_version = t.e_flags >> 24;
  return t;
}

std::optional<std::string> cuda_processor(Bytes d) {
  if (d.size() < 52 || as_chars(d.first(4)) != "\x7f" "ELF" || d[5] != std::byte{1}) return std::nullopt;
  if (load_le<std::uint16_t>(d.data() + 18) != kEmCuda) return std::nullopt;
  const bool elf64 = d[4] == std::byte{2};
  if (elf64 && d.size() < kElf64HeaderSize) return std::nullopt;
  const std::uint32_t flags = load_le<std::uint32_t>(d.data() + (elf64 ? 48 : 36));
  const unsigned sm = std::to_integer<unsigned>(d[8]) >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
  if (sm < 10) return std::nullopt;
  return fmt::format("sm_{}", sm);
}

namespace {

// PTX: the first directive after blank lines and // comments (none of them
// a text bundle's marker) is ".version",
// and ".target sm_XY[a|f]" follows (after more blank lines and comments).
std::optional<std::string> ptx_target(std::string_view text) {
  bool seen_version = false;
  while (!text.empty()) {
    std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    // A text bundle's markers are comments too: a text bundle of PTX is no bare PTX file.
    if (line.starts_with("//") && line.find("__CLANG_OFFLOAD_BUNDLE__") != std::string_view::npos) return std::nullopt;
    if (line.empty() || line.starts_with("//")) continue;
    if (!seen_version) {
      if (!line.starts_with(".version ") && !line.starts_with(".version\t")) return std::nullopt;
      seen_version = true;
      continue;
    }
    if (!line.starts_with(".target ") && !line.starts_with(".target\t")) return std::nullopt;
    line.remove_prefix(8);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    std::string_view arch = line.substr(0, line.find_first_of(", \t"));
    if (!arch.starts_with("sm_") || arch.size() < 5) return std::nullopt;
    std::string_view digits = arch.substr(3);
    if (digits.back() == 'a' || digits.back() == 'f') digits.remove_suffix(1);
    if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string_view::npos)
      return std::nullopt;
    return fmt::format("compute_{}", arch.substr(3));
  }
  return std::nullopt;
}

}  // namespace

std::string_view BareCode::description() const {
  switch (kind) {
    case Kind::AmdgpuCodeObject: return "AMDGPU code object";
    case Kind::Cubin: return "cubin";
    case Kind::Ptx: return "PTX";
  }
  return "";
}

std::optional<BareCode> bare_code(Bytes prefix) {
  if (prefix.size() >= 4 && as_chars(prefix.first(4)) == "\x7f" "ELF") {
    if (auto t = amdgpu_code_object(prefix)) {
      if (t->target_id.empty()) return BareCode{BareCode::Kind::AmdgpuCodeObject, fmt::format("EF_AMDGPU_MACH 0x{:x}", t->mach), false};
      return BareCode{BareCode::Kind::AmdgpuCodeObject, t->target_id, true};
    }
    if (prefix.size() >= 20 && load_le<std::uint16_t>(prefix.data() + 18) == kEmCuda) {
      if (auto sm = cuda_processor(prefix)) return BareCode{BareCode::Kind::Cubin, *sm, true};
      return BareCode{BareCode::Kind::Cubin, "EF_CUDA_SM unknown", false};
    }
    return std::nullopt;
  }
  if (auto t = ptx_target(as_chars(prefix.first(std::min(prefix.size(), kBareCodeSniff)))))
    return BareCode{BareCode::Kind::Ptx, *t, true};
  return std::nullopt;
}

}  // namespace ot::compat
