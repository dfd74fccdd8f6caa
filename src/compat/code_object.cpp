#include "compat/code_object.h"

#include "target/processors.h"

namespace ot::compat {
namespace {

constexpr std::uint16_t kEmAmdgpu = 224;
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

}  // namespace ot::compat
