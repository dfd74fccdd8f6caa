// Adding and removing whole sections of ELF and COFF relocatable objects: what
// clang-offload-bundler -type=o asks llvm-objcopy to do, done natively and
// streamed (payloads are copied from their inputs, never held in memory).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "object/layout.h"
#include "support/mapped_file.h"
#include "support/output_file.h"

namespace ot::object {

struct AddedSection {
  std::string name;
  std::shared_ptr<const InputFile> contents;  // nullptr: one zero byte (the bundler's host marker)
};

// Writes `host` with `sections` appended, like
//   llvm-objcopy --add-section=N=F --set-section-flags=N=readonly,exclude
// ELF: SHT_PROGBITS, SHF_EXCLUDE (no SHF_ALLOC/SHF_WRITE), alignment 1.
// COFF: IMAGE_SCN_LNK_REMOVE | IMAGE_SCN_MEM_READ (0x40000800, as
// llvm-objcopy writes them), long names as "/<offset>".
// The host's bytes are kept as they are; only its headers change.
void write_with_added_sections(const InputFile& host, std::span<const AddedSection> sections, OutputFile& out);

// Writes `obj` without every section whose name satisfies `remove`, also
// dropping relocation sections for removed sections, symbols defined in them
// and (COFF) sections associated with them; every section index, symbol index
// and file offset that changes is fixed up. Throws ot::Error when the object
// cannot be rewritten safely (a kept section or relocation still refers to a
// removed one, dynamic symbols would change, ...).
void write_without_sections(const InputFile& obj, const std::function<bool(std::string_view)>& remove,
                            OutputFile& out);

// A section given new contents by edit_object.
struct NewContents {
  Layout bytes;
  // Where a place in the old contents (a symbol's value, a relocation's symbol
  // plus addend; the end of the section included) lies in the new ones;
  // nullopt where it lies nowhere, which is refused.
  std::function<std::optional<std::uint64_t>(std::uint64_t)> move;
  std::string places;  // what `move` maps, for the error ("the start of a bundle")
};

struct ObjectEdit {
  std::function<bool(std::string_view)> remove;  // the sections to remove, by name (none when empty)
  // Kept sections with new contents, by index into ElfFile::shdrs (section 0
  // the null section) or CoffFile::sections.
  std::map<std::size_t, NewContents> replace;
  // Refuse to remove a section that defines a symbol (other than its section
  // symbol) instead of dropping the symbol with it.
  bool keep_defined_symbols = false;
};

// The ELF or COFF relocatable object `obj`, which lies `base` bytes into `in`
// (an archive member, or all of `in`), laid out again with
// write_without_sections' rules and `edit` applied: removed sections
// renumbered away; symbols in replaced sections and the places relocations
// point at in them (ELF RELA addends, COFF addends in the relocated bytes)
// moved with `move`. Nothing may relocate a replaced section's own contents,
// and ELF SHT_REL relocations into one are refused. Errors name `file` and the
// offset inside `obj`.
Layout edit_object(const InputFile& in, std::uint64_t base, Bytes obj, const std::string& file, ObjectEdit edit);

}  // namespace ot::object
