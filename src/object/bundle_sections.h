// Adding and removing whole sections of ELF and COFF relocatable objects: what
// clang-offload-bundler -type=o asks llvm-objcopy to do, done natively and
// streamed (payloads are copied from their inputs, never held in memory).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

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

}  // namespace ot::object
