// Writes a RelocatableObject as an ELF relocatable file (ET_REL).
//
// Layout: ELF header, section contents in object order (each at its
// alignment), the relocation sections, .symtab, one shared .strtab for section
// and symbol names, then the section header table. Locals precede globals in
// .symtab as ELF requires; everything else keeps the object's order, so the
// same object always gives the same bytes.
#pragma once

#include <cstdint>

#include "object/relocatable.h"

namespace ot::object {

struct ElfTarget {
  bool is64 = true;
  bool big_endian = false;
  std::uint16_t machine = 0;  // EM_*
  std::uint32_t flags = 0;    // e_flags (ppc64 ELFv2: 2; arm EABI5: 0x05000000)
  bool rela = true;           // SHT_RELA (64-bit targets) or SHT_REL with in-place addends (i386, arm)
};

// Machine numbers and the section type the writers need.
inline constexpr std::uint16_t kEmI386 = 3;
inline constexpr std::uint16_t kEmPpc64 = 21;
inline constexpr std::uint16_t kEmArm = 40;
inline constexpr std::uint16_t kEmX86_64 = 62;
inline constexpr std::uint16_t kEmAArch64 = 183;
inline constexpr std::uint32_t kShtLlvmOffloading = 0x6fff4c0b;

// Lays the file out and returns it as chunks (device images stay file references).
// Throws ot::Error when a relocation or symbol refers to something that does not exist.
ObjectBytes write_elf(const RelocatableObject& obj, const ElfTarget& target);

}  // namespace ot::object
