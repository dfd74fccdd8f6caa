// The symbol table LLVM stores in a bitcode file (the SYMTAB_BLOCK blob, an
// "irsymtab", with its names in the STRTAB_BLOCK blob that follows it). LLVM
// builds it from the same ModuleSymbolTable that llvm-ar and writeArchive use
// for bitcode members, so it answers "which symbols go into an archive's
// symbol table" without parsing the IR itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/bytes.h"

namespace ot::formats {

struct BitcodeSymbol {
  // storage::Symbol::FlagBits of llvm/Object/IRSymtab.h
  static constexpr std::uint32_t kUndefined = 1u << 3, kWeak = 1u << 4, kCommon = 1u << 5, kIndirect = 1u << 6,
                                 kGlobal = 1u << 10, kFormatSpecific = 1u << 11, kExecutable = 1u << 13;
  std::string name;  // the mangled name
  std::uint32_t flags = 0;
};

struct BitcodeSymtab {
  std::uint32_t version = 0;
  std::string producer;  // LLVM version that wrote it, e.g. "19.1.7"
  std::vector<BitcodeSymbol> symbols;
};

// The symbol table of the first module, or nullopt when the file carries none.
// Walks only the top-level blocks (skipping the module by its length).
// Throws ot::Error naming `file` and the byte offset on malformed bitstream.
std::optional<BitcodeSymtab> read_bitcode_symtab(Bytes data, const std::string& file);

}  // namespace ot::formats
