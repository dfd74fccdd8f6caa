// Object files as the bundler sees them: is this an object (and which kind),
// and what sections does it have. Below the public API are the validated ELF
// and COFF views that bundle_sections.cpp (and the tests) build on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "object/coff_types.h"
#include "object/elf_types.h"
#include "support/bytes.h"

namespace ot::object {

enum class ObjectKind { NotObject, Elf, Coff, OtherObject };  // OtherObject: Mach-O, Wasm, XCOFF, GOFF magic

// What LLVM 19's createBinary() turns into an ObjectFile, which decides the
// bundler's object handler versus the binary handler: ELF of any class and
// byte order whose section header table LLVM can index, COFF objects (the
// machine values LLVM recognises, bigobj too) whose headers, section table and
// string table fit, and the magic of Mach-O, Wasm, XCOFF, GOFF and PE images.
// Bitcode, archives, import libraries and arbitrary bytes are NotObject.
ObjectKind identify_object(Bytes data);

struct SectionInfo {
  std::string name;
  std::uint64_t offset;  // file offset of the contents
  std::uint64_t size;    // sh_size / SizeOfRawData
  bool has_data;         // false for SHT_NOBITS and COFF sections without raw data
  std::uint32_t type = 0;  // ELF sh_type (the packager looks for SHT_LLVM_OFFLOADING); 0 for COFF
};

// All sections in section-table order (ELF: including the null section 0, as
// LLVM's section iterator does; PE images: object::PeImage's, their data up to
// VirtualSize). Throws ot::Error naming `file` and the offset
// of the bad header, table or name for any malformed structure; data of every
// section that has data must lie inside the file.
std::vector<SectionInfo> read_sections(Bytes data, const std::string& file);

// ---------------------------------------------------------------------------
// Validated views.

enum class ElfClass { Elf32LE, Elf32BE, Elf64LE, Elf64BE };

// The class and byte order in e_ident; nullopt when `data` does not start with
// the ELF magic or names an unknown class or byte order.
std::optional<ElfClass> elf_class_of(Bytes data);

// Calls f(E{}) with the traits type of `c`.
template <typename F>
decltype(auto) visit_elf_class(ElfClass c, F&& f) {
  switch (c) {
    case ElfClass::Elf32LE: return f(elf::Elf32LE{});
    case ElfClass::Elf32BE: return f(elf::Elf32BE{});
    case ElfClass::Elf64LE: return f(elf::Elf64LE{});
    case ElfClass::Elf64BE: break;
  }
  return f(elf::Elf64BE{});
}

// The section header table of an ELF file, checked: header size, e_shentsize,
// table range, the extended e_shnum / e_shstrndx forms, the section name
// string table and every name, and each section's data range.
template <typename E>
struct ElfFile {
  static ElfFile parse(Bytes data, const std::string& file);

  Bytes data;
  std::string file;
  elf::ElfEhdr<E> ehdr{};
  std::uint32_t shstrndx = 0;  // resolved through section 0 when e_shstrndx is SHN_XINDEX
  std::vector<elf::ElfShdr<E>> shdrs;
  std::vector<std::string> names;

  bool has_data(std::size_t i) const { return shdrs[i].sh_type != elf::SHT_NOBITS; }
  Bytes contents(std::size_t i) const;  // empty for SHT_NOBITS
  // File offset of section header i (for error messages).
  std::uint64_t header_offset(std::size_t i) const { return ehdr.e_shoff + i * sizeof(elf::ElfShdr<E>); }
};

extern template struct ElfFile<elf::Elf32LE>;
extern template struct ElfFile<elf::Elf32BE>;
extern template struct ElfFile<elf::Elf64LE>;
extern template struct ElfFile<elf::Elf64BE>;

// A COFF object (regular or bigobj), checked: headers, section table, symbol
// and string table ranges, section names, raw data and relocation ranges.
struct CoffFile {
  static CoffFile parse(Bytes data, const std::string& file);

  Bytes data;
  std::string file;
  bool bigobj = false;
  std::uint16_t machine = 0;
  std::uint64_t section_table_offset = 0;  // right after the file (and optional) header
  std::uint32_t symbol_table_offset = 0;   // 0 when there is no symbol table
  std::uint32_t symbol_count = 0;          // records, auxiliary ones included
  std::uint64_t symbol_size = 18;          // 20 in bigobj files
  std::uint64_t string_table_offset = 0;   // right after the symbols; 0 without a symbol table
  std::uint32_t string_table_size = 0;     // including its 4-byte size field; 0 when absent
  std::vector<coff::SectionHeader> sections;
  std::vector<std::string> names;

  bool has_data(std::size_t i) const { return sections[i].PointerToRawData != 0; }
  Bytes contents(std::size_t i) const;
  // Relocation count, resolving IMAGE_SCN_LNK_NRELOC_OVFL (the count is then
  // in the first relocation, which itself is not a relocation).
  std::uint32_t relocation_count(std::size_t i) const;
  std::uint64_t header_offset(std::size_t i) const { return section_table_offset + i * sizeof(coff::SectionHeader); }
  std::uint64_t section_table_end() const { return section_table_offset + sections.size() * sizeof(coff::SectionHeader); }
};

// "/123" and "//AAAAAA" section name references into the COFF string table.
std::optional<std::uint32_t> coff_long_name_offset(std::string_view field);
// The 8-byte name field for a string table offset: "/<decimal>" when it fits,
// else "//<base64>".
std::string coff_long_name_field(std::uint32_t offset);

}  // namespace ot::object
