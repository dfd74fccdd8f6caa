// Writing GNU `ar` archives byte-identical to LLVM 19's writeArchive(...,
// SymtabWritingMode::NormalSymtab, K_GNU, Deterministic=true, Thin=false)
// (llvm-behaviour.md 1.6): "!<arch>\n", a "/" symbol table when any member
// has archive symbols ("/SYM64/" once member offsets need 64 bits), the "//"
// long-name table, then the members with mtime/uid/gid 0 and mode 644, each
// padded to an even size with '\n'. Payloads are streamed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "support/bytes.h"

namespace ot {
class InputFile;
class OutputFile;
}  // namespace ot

namespace ot::archive {

struct NewMember {
  std::string name;                   // stored verbatim (a path stays a path)
  Bytes data;                         // the contents
  // When set, `data` lies inside source->bytes(), and from 1 MiB up it is
  // copied by the kernel without passing through this process.
  const InputFile* source = nullptr;
  // When set, archive_symbols(data, name) worked out beforehand.
  const std::vector<std::string>* symbols = nullptr;
};

struct WriteOptions {
  bool symbol_table = true;  // NormalSymtab; false = NoSymtab
  // Member header offset from which the 64-bit symbol table is used. LLVM
  // reads the same value from the SYM64_THRESHOLD environment variable (for
  // tests); callers that want that behaviour pass it here.
  std::uint64_t sym64_threshold = std::uint64_t{1} << 32;
  // Payloads of a source file (below the kernel-copy size) are read from its
  // descriptor (pread) into a buffer of this writer's, not through its
  // mapping: for a source whose mapped pages were let go of, reading them
  // back through the mapping would fault each in again and need letting go
  // of again.
  bool read_sources = false;
};

// Appends the archive to `out`; returns the number of bytes written.
std::uint64_t write_gnu_archive(OutputFile& out, std::span<const NewMember> members, const WriteOptions& options = {});

}  // namespace ot::archive
