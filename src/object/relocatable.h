// A format-neutral relocatable object: sections, symbols and relocations as
// the wrapper builds them. elf_writer and coff_writer turn it into bytes;
// large section contents stay references into mapped input files so that a
// multi-GB device image is streamed, never copied into memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/bytes.h"
#include "support/mapped_file.h"

namespace ot {
class OutputFile;
}

namespace ot::object {

// A run of output bytes: owned bytes, or [offset, offset+size) of an input file.
struct Chunk {
  std::vector<std::byte> bytes;
  std::shared_ptr<const InputFile> file;
  std::uint64_t file_offset = 0;
  std::uint64_t file_size = 0;

  static Chunk owned(std::vector<std::byte> b) { return Chunk{std::move(b), nullptr, 0, 0}; }
  static Chunk zeros(std::uint64_t n) { return Chunk{std::vector<std::byte>(n), nullptr, 0, 0}; }
  static Chunk of_file(std::shared_ptr<const InputFile> f, std::uint64_t off, std::uint64_t n) {
    return Chunk{{}, std::move(f), off, n};
  }
  std::uint64_t size() const { return file ? file_size : bytes.size(); }
};

// What a section holds; each writer maps it to its own type and flags.
enum class SectionKind : std::uint8_t {
  Code,        // ELF PROGBITS "ax"; COFF CNT_CODE|EXECUTE|READ
  ReadOnly,    // ELF .rodata "a"; COFF .rdata
  RelRo,       // read-only after relocation: ELF .data.rel.ro "aw"; COFF .rdata
  Data,        // ELF "aw"; COFF .data
  Bss,         // ELF NOBITS "aw"; COFF .bss
  InitArray,   // ELF INIT_ARRAY "aw"; COFF .CRT$XC* / .ctors.* (read-write data)
  FiniArray,   // ELF FINI_ARRAY "aw"; COFF .CRT$XT* / .dtors.*
  Offloading,  // ELF SHT_LLVM_OFFLOADING "a" (what LLVM 19 gives .llvm.offloading); COFF .rdata-like
  EntryTable,  // an offload-entry table bound (ELF "a"; COFF read-only data, 8-aligned)
  GnuStack,    // ELF .note.GNU-stack (no flags: non-executable stack); not written on COFF
  Directive,   // COFF .drectve (linker directives); not written on ELF
};

struct Section {
  std::string name;
  SectionKind kind = SectionKind::ReadOnly;
  std::uint64_t align = 1;
  std::vector<Chunk> data;     // empty for Bss
  std::uint64_t bss_size = 0;  // Bss only

  std::uint64_t size() const {
    if (kind == SectionKind::Bss) return bss_size;
    std::uint64_t n = 0;
    for (const Chunk& c : data) n += c.size();
    return n;
  }
};

enum class Binding : std::uint8_t { Local, Global, Weak };
enum class SymbolType : std::uint8_t { NoType, Object, Func };

constexpr std::int32_t kUndefined = -1;

struct Symbol {
  std::string name;
  std::int32_t section = kUndefined;  // index into RelocatableObject::sections
  std::uint64_t value = 0;
  std::uint64_t size = 0;
  Binding binding = Binding::Local;
  SymbolType type = SymbolType::NoType;
  bool hidden = false;
  std::uint8_t elf_other_flags = 0;  // extra st_other bits (ppc64 ELFv2 local-entry offset)
  // COFF: a weak external resolved to this symbol when nothing else defines it.
  std::int32_t weak_default = -1;
};

// A relocation with the arch's raw type number. The addend is ELF-style
// (S + A - P for PC-relative types); writers of REL formats (ELF32 i386/arm,
// COFF) store it in the section bytes in the form their format expects.
struct Reloc {
  std::uint32_t section = 0;
  std::uint64_t offset = 0;
  std::uint32_t type = 0;
  std::uint32_t symbol = 0;
  std::int64_t addend = 0;
};

struct RelocatableObject {
  std::string source_name;  // ELF STT_FILE / COFF .file symbol
  std::vector<Section> sections;
  std::vector<Symbol> symbols;
  std::vector<Reloc> relocs;

  std::uint32_t add_section(Section s) {
    sections.push_back(std::move(s));
    return static_cast<std::uint32_t>(sections.size() - 1);
  }
  std::uint32_t add_symbol(Symbol s) {
    symbols.push_back(std::move(s));
    return static_cast<std::uint32_t>(symbols.size() - 1);
  }
};

// A finished file as a list of chunks, laid out back to back.
struct ObjectBytes {
  std::vector<Chunk> chunks;
  std::uint64_t size() const {
    std::uint64_t n = 0;
    for (const Chunk& c : chunks) n += c.size();
    return n;
  }
  void write_to(OutputFile& out) const;
  std::vector<std::byte> flatten() const;  // for tests and small outputs
};

}  // namespace ot::object
