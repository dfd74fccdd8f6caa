// Writes a RelocatableObject as a COFF object file for x86-64 Windows
// (IMAGE_FILE_MACHINE_AMD64): file header, section headers, each section's raw
// data followed by its relocations, the symbol table (a static symbol with a
// section-definition record per section first, as MSVC and LLVM do), and the
// string table for names longer than eight bytes. No timestamp: same object,
// same bytes.
#pragma once

#include <cstdint>

#include "object/relocatable.h"

namespace ot::object {

inline constexpr std::uint16_t kCoffMachineAmd64 = 0x8664;

// AMD64 relocation types used by the wrapper.
inline constexpr std::uint32_t kCoffRelAmd64Addr64 = 0x1;
inline constexpr std::uint32_t kCoffRelAmd64Addr32Nb = 0x3;
inline constexpr std::uint32_t kCoffRelAmd64Rel32 = 0x4;

// Relocation addends are ELF-style (S + A - P); the writer stores them in the
// section bytes as COFF expects (REL32 measures from the end of the field, so
// the stored value is A + 4). Throws ot::Error for a symbol or section index out
// of range, a section over 4 GiB or more than 0xffff relocations in a section
// (beyond IMAGE_SCN_LNK_NRELOC_OVFL, which the wrapper never needs).
ObjectBytes write_coff(const RelocatableObject& obj, std::uint16_t machine);

}  // namespace ot::object
