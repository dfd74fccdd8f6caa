// ELF on-disk structures for all four classes, mold style: one traits type per
// (class, byte order) and structs templated on it, built from ot::Packed so a
// struct is exactly its on-disk bytes at any alignment. Read them from input
// with ByteReader::read<T>() (memcpy), never by casting pointers into input.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "support/bytes.h"

namespace ot::object::elf {

// e_ident
inline constexpr unsigned char kMagic[4] = {0x7f, 'E', 'L', 'F'};
inline constexpr std::size_t EI_CLASS = 4, EI_DATA = 5, EI_VERSION = 6, EI_OSABI = 7, EI_ABIVERSION = 8,
                             EI_NIDENT = 16;
inline constexpr std::uint8_t ELFCLASS32 = 1, ELFCLASS64 = 2;
inline constexpr std::uint8_t ELFDATA2LSB = 1, ELFDATA2MSB = 2;
inline constexpr std::uint8_t EV_CURRENT = 1;
inline constexpr std::uint8_t ELFOSABI_NONE = 0, ELFOSABI_GNU = 3, ELFOSABI_AMDGPU_HSA = 64;

// e_type
inline constexpr std::uint16_t ET_NONE = 0, ET_REL = 1, ET_EXEC = 2, ET_DYN = 3, ET_CORE = 4;

// e_machine
inline constexpr std::uint16_t EM_NONE = 0, EM_386 = 3, EM_MIPS = 8, EM_PPC = 20, EM_PPC64 = 21, EM_S390 = 22,
                               EM_ARM = 40, EM_SPARCV9 = 43, EM_X86_64 = 62, EM_AARCH64 = 183, EM_CUDA = 190,
                               EM_AMDGPU = 224, EM_RISCV = 243, EM_LOONGARCH = 258;

// special section indices
inline constexpr std::uint16_t SHN_UNDEF = 0, SHN_LORESERVE = 0xff00, SHN_ABS = 0xfff1, SHN_COMMON = 0xfff2,
                               SHN_XINDEX = 0xffff;

// sh_type
inline constexpr std::uint32_t SHT_NULL = 0, SHT_PROGBITS = 1, SHT_SYMTAB = 2, SHT_STRTAB = 3, SHT_RELA = 4,
                               SHT_HASH = 5, SHT_DYNAMIC = 6, SHT_NOTE = 7, SHT_NOBITS = 8, SHT_REL = 9,
                               SHT_SHLIB = 10, SHT_DYNSYM = 11, SHT_INIT_ARRAY = 14, SHT_FINI_ARRAY = 15,
                               SHT_PREINIT_ARRAY = 16, SHT_GROUP = 17, SHT_SYMTAB_SHNDX = 18, SHT_RELR = 19,
                               SHT_CREL = 0x40000014, SHT_ANDROID_REL = 0x60000001, SHT_ANDROID_RELA = 0x60000002,
                               SHT_LLVM_ADDRSIG = 0x6fff4c03, SHT_LLVM_OFFLOADING = 0x6fff4c0b,
                               SHT_GNU_HASH = 0x6ffffff6,
                               SHT_GNU_verdef = 0x6ffffffd, SHT_GNU_verneed = 0x6ffffffe,
                               SHT_GNU_versym = 0x6fffffff;

// sh_flags
inline constexpr std::uint64_t SHF_WRITE = 0x1, SHF_ALLOC = 0x2, SHF_EXECINSTR = 0x4, SHF_MERGE = 0x10,
                               SHF_STRINGS = 0x20, SHF_INFO_LINK = 0x40, SHF_LINK_ORDER = 0x80,
                               SHF_OS_NONCONFORMING = 0x100, SHF_GROUP = 0x200, SHF_TLS = 0x400,
                               SHF_COMPRESSED = 0x800, SHF_GNU_RETAIN = 0x200000, SHF_EXCLUDE = 0x80000000;

// section groups
inline constexpr std::uint32_t GRP_COMDAT = 1;

// symbols
inline constexpr std::uint8_t STB_LOCAL = 0, STB_GLOBAL = 1, STB_WEAK = 2;
inline constexpr std::uint8_t STT_NOTYPE = 0, STT_OBJECT = 1, STT_FUNC = 2, STT_SECTION = 3, STT_FILE = 4,
                              STT_COMMON = 5, STT_TLS = 6;
inline constexpr std::uint8_t STV_DEFAULT = 0, STV_INTERNAL = 1, STV_HIDDEN = 2, STV_PROTECTED = 3;
constexpr std::uint8_t st_bind(std::uint8_t info) { return info >> 4; }
constexpr std::uint8_t st_type(std::uint8_t info) { return info & 0xf; }
constexpr std::uint8_t st_info(std::uint8_t bind, std::uint8_t type) {
  return static_cast<std::uint8_t>((bind << 4) | (type & 0xf));
}

// program headers
inline constexpr std::uint32_t PF_X = 0x1, PF_W = 0x2, PF_R = 0x4;
inline constexpr std::uint32_t PT_NULL = 0, PT_LOAD = 1, PT_DYNAMIC = 2, PT_INTERP = 3, PT_NOTE = 4, PT_PHDR = 6,
                               PT_TLS = 7;

// Relocation types a data-only wrapper object needs: one absolute pointer-sized
// relocation per machine (the code stubs keep their own relocations beside them).
inline constexpr std::uint32_t R_X86_64_64 = 1, R_X86_64_PC32 = 2, R_X86_64_PLT32 = 4;
inline constexpr std::uint32_t R_386_32 = 1, R_386_PC32 = 2;
inline constexpr std::uint32_t R_AARCH64_ABS64 = 257, R_AARCH64_CALL26 = 283;
inline constexpr std::uint32_t R_ARM_ABS32 = 2, R_ARM_CALL = 28;
inline constexpr std::uint32_t R_PPC64_ADDR64 = 38;
inline constexpr std::uint32_t R_PPC_ADDR32 = 1;
inline constexpr std::uint32_t R_390_64 = 22;
inline constexpr std::uint32_t R_MIPS_32 = 2;
inline constexpr std::uint32_t R_RISCV_64 = 2;

// One (class, byte order) combination.
template <bool Is64, std::endian End>
struct ElfTraits {
  static constexpr bool is_64 = Is64;
  static constexpr std::endian endian = End;
  static constexpr bool is_le = End == std::endian::little;
  static constexpr std::uint8_t ei_class = Is64 ? ELFCLASS64 : ELFCLASS32;
  static constexpr std::uint8_t ei_data = is_le ? ELFDATA2LSB : ELFDATA2MSB;
  static constexpr std::uint64_t word_size = Is64 ? 8 : 4;
  static constexpr const char* name = Is64 ? (is_le ? "elf64-le" : "elf64-be") : (is_le ? "elf32-le" : "elf32-be");

  using U16 = Packed<std::uint16_t, End>;
  using U32 = Packed<std::uint32_t, End>;
  using U64 = Packed<std::uint64_t, End>;
  using I32 = Packed<std::int32_t, End>;
  using I64 = Packed<std::int64_t, End>;
  // Elf_Addr / Elf_Off / Elf_Xword-or-Word: the class-sized fields
  using Word = std::conditional_t<Is64, U64, U32>;
  using SWord = std::conditional_t<Is64, I64, I32>;
  using uint = std::conditional_t<Is64, std::uint64_t, std::uint32_t>;
};

using Elf32LE = ElfTraits<false, std::endian::little>;
using Elf32BE = ElfTraits<false, std::endian::big>;
using Elf64LE = ElfTraits<true, std::endian::little>;
using Elf64BE = ElfTraits<true, std::endian::big>;

template <typename E>
struct ElfEhdr {
  unsigned char e_ident[EI_NIDENT];
  typename E::U16 e_type;
  typename E::U16 e_machine;
  typename E::U32 e_version;
  typename E::Word e_entry;
  typename E::Word e_phoff;
  typename E::Word e_shoff;
  typename E::U32 e_flags;
  typename E::U16 e_ehsize;
  typename E::U16 e_phentsize;
  typename E::U16 e_phnum;
  typename E::U16 e_shentsize;
  typename E::U16 e_shnum;
  typename E::U16 e_shstrndx;
};

template <typename E>
struct ElfShdr {
  typename E::U32 sh_name;
  typename E::U32 sh_type;
  typename E::Word sh_flags;
  typename E::Word sh_addr;
  typename E::Word sh_offset;
  typename E::Word sh_size;
  typename E::U32 sh_link;
  typename E::U32 sh_info;
  typename E::Word sh_addralign;
  typename E::Word sh_entsize;
};

template <typename E>
struct ElfPhdr;

template <typename E>
  requires(E::is_64)
struct ElfPhdr<E> {
  typename E::U32 p_type;
  typename E::U32 p_flags;
  typename E::U64 p_offset;
  typename E::U64 p_vaddr;
  typename E::U64 p_paddr;
  typename E::U64 p_filesz;
  typename E::U64 p_memsz;
  typename E::U64 p_align;
};

template <typename E>
  requires(!E::is_64)
struct ElfPhdr<E> {
  typename E::U32 p_type;
  typename E::U32 p_offset;
  typename E::U32 p_vaddr;
  typename E::U32 p_paddr;
  typename E::U32 p_filesz;
  typename E::U32 p_memsz;
  typename E::U32 p_flags;
  typename E::U32 p_align;
};

template <typename E>
struct ElfSym;

template <typename E>
  requires(E::is_64)
struct ElfSym<E> {
  typename E::U32 st_name;
  std::uint8_t st_info;
  std::uint8_t st_other;
  typename E::U16 st_shndx;
  typename E::U64 st_value;
  typename E::U64 st_size;
};

template <typename E>
  requires(!E::is_64)
struct ElfSym<E> {
  typename E::U32 st_name;
  typename E::U32 st_value;
  typename E::U32 st_size;
  std::uint8_t st_info;
  std::uint8_t st_other;
  typename E::U16 st_shndx;
};

template <typename E>
struct ElfRel {
  typename E::Word r_offset;
  typename E::Word r_info;
};

template <typename E>
struct ElfRela {
  typename E::Word r_offset;
  typename E::Word r_info;
  typename E::SWord r_addend;
};

// r_info packing. MIPS64 little-endian stores r_sym as the first 32-bit word and
// the three type bytes after it, which reads as (types << 32 | sym) in a
// little-endian 64-bit load; every other ELF64 target uses (sym << 32 | type).
template <typename E>
constexpr std::uint32_t r_sym(typename E::uint info, std::uint16_t machine) {
  if constexpr (E::is_64) {
    if (E::is_le && machine == EM_MIPS) return static_cast<std::uint32_t>(info & 0xffffffffu);
    return static_cast<std::uint32_t>(info >> 32);
  } else {
    (void)machine;
    return info >> 8;
  }
}

template <typename E>
constexpr typename E::uint with_r_sym(typename E::uint info, std::uint32_t sym, std::uint16_t machine) {
  if constexpr (E::is_64) {
    if (E::is_le && machine == EM_MIPS) return (info & ~std::uint64_t{0xffffffffu}) | sym;
    return (static_cast<std::uint64_t>(sym) << 32) | (info & 0xffffffffu);
  } else {
    (void)machine;
    return (sym << 8) | (info & 0xffu);
  }
}

template <typename E>
constexpr typename E::uint r_info(std::uint32_t sym, std::uint32_t type) {
  if constexpr (E::is_64)
    return (static_cast<std::uint64_t>(sym) << 32) | type;
  else
    return (sym << 8) | (type & 0xffu);
}

#define OT_ELF_LAYOUT(E, EH, SH, PH, SYM, REL, RELA)                                                          \
  static_assert(sizeof(ElfEhdr<E>) == EH && sizeof(ElfShdr<E>) == SH && sizeof(ElfPhdr<E>) == PH &&         \
                sizeof(ElfSym<E>) == SYM && sizeof(ElfRel<E>) == REL && sizeof(ElfRela<E>) == RELA &&       \
                alignof(ElfEhdr<E>) == 1 && std::is_trivially_copyable_v<ElfShdr<E>>)
OT_ELF_LAYOUT(Elf32LE, 52, 40, 32, 16, 8, 12);
OT_ELF_LAYOUT(Elf32BE, 52, 40, 32, 16, 8, 12);
OT_ELF_LAYOUT(Elf64LE, 64, 64, 56, 24, 16, 24);
OT_ELF_LAYOUT(Elf64BE, 64, 64, 56, 24, 16, 24);
#undef OT_ELF_LAYOUT

}  // namespace ot::object::elf
