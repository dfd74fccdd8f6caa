// COFF on-disk structures (Microsoft PE/COFF specification), little-endian and
// alignment-free through ot::Packed: the regular and the /bigobj file header,
// section header, symbol records (16- and 32-bit section numbers), auxiliary
// records and relocations, plus the constants the readers and writers use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "support/bytes.h"

namespace ot::object::coff {

using il16 = Packed<std::int16_t, std::endian::little>;
using il32 = Packed<std::int32_t, std::endian::little>;

// Machine types
inline constexpr std::uint16_t IMAGE_FILE_MACHINE_UNKNOWN = 0x0, IMAGE_FILE_MACHINE_I386 = 0x14c,
                               IMAGE_FILE_MACHINE_ARMNT = 0x1c4, IMAGE_FILE_MACHINE_AMD64 = 0x8664,
                               IMAGE_FILE_MACHINE_ARM64 = 0xaa64, IMAGE_FILE_MACHINE_ARM64EC = 0xa641,
                               IMAGE_FILE_MACHINE_ARM64X = 0xa64e;

// File header characteristics
inline constexpr std::uint16_t IMAGE_FILE_RELOCS_STRIPPED = 0x1, IMAGE_FILE_EXECUTABLE_IMAGE = 0x2,
                               IMAGE_FILE_LARGE_ADDRESS_AWARE = 0x20, IMAGE_FILE_32BIT_MACHINE = 0x100,
                               IMAGE_FILE_DLL = 0x2000;

// Section characteristics
inline constexpr std::uint32_t IMAGE_SCN_TYPE_NO_PAD = 0x8, IMAGE_SCN_CNT_CODE = 0x20,
                               IMAGE_SCN_CNT_INITIALIZED_DATA = 0x40, IMAGE_SCN_CNT_UNINITIALIZED_DATA = 0x80,
                               IMAGE_SCN_LNK_OTHER = 0x100, IMAGE_SCN_LNK_INFO = 0x200,
                               IMAGE_SCN_LNK_REMOVE = 0x800, IMAGE_SCN_LNK_COMDAT = 0x1000,
                               IMAGE_SCN_GPREL = 0x8000, IMAGE_SCN_ALIGN_1BYTES = 0x100000,
                               IMAGE_SCN_ALIGN_2BYTES = 0x200000, IMAGE_SCN_ALIGN_4BYTES = 0x300000,
                               IMAGE_SCN_ALIGN_8BYTES = 0x400000, IMAGE_SCN_ALIGN_16BYTES = 0x500000,
                               IMAGE_SCN_ALIGN_MASK = 0xf00000, IMAGE_SCN_LNK_NRELOC_OVFL = 0x1000000,
                               IMAGE_SCN_MEM_DISCARDABLE = 0x2000000, IMAGE_SCN_MEM_NOT_CACHED = 0x4000000,
                               IMAGE_SCN_MEM_NOT_PAGED = 0x8000000, IMAGE_SCN_MEM_SHARED = 0x10000000,
                               IMAGE_SCN_MEM_EXECUTE = 0x20000000, IMAGE_SCN_MEM_READ = 0x40000000,
                               IMAGE_SCN_MEM_WRITE = 0x80000000;

// Special section numbers in symbols
inline constexpr std::int32_t IMAGE_SYM_UNDEFINED = 0, IMAGE_SYM_ABSOLUTE = -1, IMAGE_SYM_DEBUG = -2;

// Symbol storage classes
inline constexpr std::uint8_t IMAGE_SYM_CLASS_END_OF_FUNCTION = 0xff, IMAGE_SYM_CLASS_NULL = 0,
                              IMAGE_SYM_CLASS_AUTOMATIC = 1, IMAGE_SYM_CLASS_EXTERNAL = 2,
                              IMAGE_SYM_CLASS_STATIC = 3, IMAGE_SYM_CLASS_REGISTER = 4,
                              IMAGE_SYM_CLASS_LABEL = 6, IMAGE_SYM_CLASS_FUNCTION = 101,
                              IMAGE_SYM_CLASS_FILE = 103, IMAGE_SYM_CLASS_SECTION = 104,
                              IMAGE_SYM_CLASS_WEAK_EXTERNAL = 105, IMAGE_SYM_CLASS_CLR_TOKEN = 107;
// Symbol type: the complex part (bits 4..5) marks functions
inline constexpr std::uint16_t IMAGE_SYM_DTYPE_FUNCTION = 2, IMAGE_SYM_TYPE_NULL = 0;

// COMDAT selection
inline constexpr std::uint8_t IMAGE_COMDAT_SELECT_NODUPLICATES = 1, IMAGE_COMDAT_SELECT_ANY = 2,
                              IMAGE_COMDAT_SELECT_ASSOCIATIVE = 5;

// Relocation types used by data-only wrapper objects
inline constexpr std::uint16_t IMAGE_REL_AMD64_ADDR64 = 0x1, IMAGE_REL_AMD64_ADDR32NB = 0x3,
                               IMAGE_REL_AMD64_REL32 = 0x4, IMAGE_REL_AMD64_SECREL = 0xb;
inline constexpr std::uint16_t IMAGE_REL_I386_DIR32 = 0x6, IMAGE_REL_I386_DIR32NB = 0x7,
                               IMAGE_REL_I386_SECREL = 0xb, IMAGE_REL_I386_REL32 = 0x14;
inline constexpr std::uint16_t IMAGE_REL_ARM64_ADDR32NB = 0x2, IMAGE_REL_ARM64_BRANCH26 = 0x3,
                               IMAGE_REL_ARM64_SECREL = 0x8, IMAGE_REL_ARM64_ADDR64 = 0xe;

// "Big object" (/bigobj) signature: the UUID that follows the version.
inline constexpr std::uint8_t kBigObjMagic[16] = {0xc7, 0xa1, 0xba, 0xd1, 0xee, 0xba, 0xa9, 0x4b,
                                                  0xaf, 0x20, 0xfa, 0xf6, 0x6a, 0xa4, 0xdc, 0xb8};
// cl.exe /GL (LTCG) intermediate objects share the bigobj prefix with this UUID.
inline constexpr std::uint8_t kClGlObjMagic[16] = {0x38, 0xfe, 0xb3, 0x0c, 0xa5, 0xd9, 0xab, 0x4d,
                                                   0xac, 0x9b, 0xd6, 0xb6, 0x22, 0x26, 0x53, 0xc2};
inline constexpr std::uint16_t kBigObjMinVersion = 2;

inline constexpr std::size_t kNameSize = 8;

struct FileHeader {
  ul16 Machine;
  ul16 NumberOfSections;
  ul32 TimeDateStamp;
  ul32 PointerToSymbolTable;
  ul32 NumberOfSymbols;
  ul16 SizeOfOptionalHeader;
  ul16 Characteristics;
};

struct BigObjHeader {
  ul16 Sig1;  // IMAGE_FILE_MACHINE_UNKNOWN
  ul16 Sig2;  // 0xffff
  ul16 Version;
  ul16 Machine;
  ul32 TimeDateStamp;
  std::uint8_t UUID[16];
  ul32 unused1;
  ul32 unused2;
  ul32 unused3;
  ul32 unused4;
  ul32 NumberOfSections;
  ul32 PointerToSymbolTable;
  ul32 NumberOfSymbols;
};

struct SectionHeader {
  char Name[kNameSize];
  ul32 VirtualSize;
  ul32 VirtualAddress;
  ul32 SizeOfRawData;
  ul32 PointerToRawData;
  ul32 PointerToRelocations;
  ul32 PointerToLinenumbers;
  ul16 NumberOfRelocations;
  ul16 NumberOfLinenumbers;
  ul32 Characteristics;
};

// A symbol record; SecNum is il16 in regular objects (18 bytes) and il32 in
// bigobj files (20 bytes). Auxiliary records have the same size as the symbol.
template <typename SecNum>
struct Symbol {
  char Name[kNameSize];  // short name, or 4 zero bytes + ul32 string table offset
  ul32 Value;
  SecNum SectionNumber;
  ul16 Type;
  std::uint8_t StorageClass;
  std::uint8_t NumberOfAuxSymbols;
};
using Symbol16 = Symbol<il16>;
using Symbol32 = Symbol<il32>;

// Auxiliary format 5: follows a section's static symbol.
struct AuxSectionDefinition {
  ul32 Length;
  ul16 NumberOfRelocations;
  ul16 NumberOfLinenumbers;
  ul32 CheckSum;
  ul16 Number;  // associated section (IMAGE_COMDAT_SELECT_ASSOCIATIVE), low 16 bits
  std::uint8_t Selection;
  std::uint8_t bReserved;
  ul16 HighNumber;  // bigobj: high 16 bits of Number
};

// Auxiliary format 3: follows an IMAGE_SYM_CLASS_WEAK_EXTERNAL symbol.
struct AuxWeakExternal {
  ul32 TagIndex;
  ul32 Characteristics;
};

// Auxiliary format 1: follows a function definition symbol.
struct AuxFunctionDefinition {
  ul32 TagIndex;
  ul32 TotalSize;
  ul32 PointerToLinenumber;
  ul32 PointerToNextFunction;
};

struct Relocation {
  ul32 VirtualAddress;
  ul32 SymbolTableIndex;
  ul16 Type;
};

static_assert(sizeof(FileHeader) == 20 && sizeof(BigObjHeader) == 56 && sizeof(SectionHeader) == 40 &&
              sizeof(Symbol16) == 18 && sizeof(Symbol32) == 20 && sizeof(AuxSectionDefinition) == 18 &&
              sizeof(AuxWeakExternal) == 8 && sizeof(AuxFunctionDefinition) == 16 && sizeof(Relocation) == 10 &&
              std::is_trivially_copyable_v<SectionHeader>);

// Offset of the UUID inside BigObjHeader, i.e. the bytes identify_object needs.
inline constexpr std::size_t kBigObjUuidOffset = 12;

}  // namespace ot::object::coff
