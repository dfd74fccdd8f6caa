// Reading `ar` archives: GNU (long names through the "//" table, "/" and
// "/SYM64/" symbol tables) and BSD ("#1/<len>" names, "__.SYMDEF" tables), the
// members named as LLVM's Archive::Child::getName() names them. Members are
// views into the archive's bytes, so nested containers can be parsed and
// payloads copied without loading anything twice.
//
// Not libarchive, deliberately: libarchive rejects GNU long names that contain
// a '/' ("Invalid string table"), and clang-offload-packager --archive names
// every member by its input path, e.g. "dir/multi.bin".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/bytes.h"
#include "target/llvm_release.h"

namespace ot::archive {

bool is_archive(Bytes data);       // "!<arch>\n"
bool is_thin_archive(Bytes data);  // "!<thin>\n"

struct Member {
  // The symbol tables and the long-name table come only from a MemberReader
  // asked for them; their name is the header's, trimmed ("/", "/SYM64/", "//").
  enum class Kind { Regular, SymbolTable, SymbolTable64, LongNames, BsdSymbolTable };
  Kind kind = Kind::Regular;
  std::string name;          // long names resolved, GNU's trailing '/' and padding removed
  Bytes data;                // points into the archive's bytes
  std::uint64_t offset = 0;  // of `data` inside the archive
  std::uint64_t header_offset = 0;
};

// The regular members in file order; symbol tables ("/", "/SYM64/",
// "__.SYMDEF...") and the GNU long-name table ("//") are left out. Every
// header, size and name is bounds-checked; errors name `file` and the offset
// of the member header. Thin archives are rejected.
std::vector<Member> read_members(Bytes archive, const std::string& file);

// The same one member at a time, for scans that let go of what they passed
// (read_members collects these). The magic is checked at construction; a
// damaged header fails when next() reaches it.
class MemberReader {
 public:
  // `with_indexes`: next() also returns the symbol and long-name tables.
  // `llvm`: whose archive reader's texts the errors carry (Error::llvm_text).
  MemberReader(Bytes archive, std::string file, bool with_indexes = false,
               target::LlvmRelease llvm = target::LlvmRelease::Llvm19);
  // The next regular member, or nullopt at the end of the archive.
  std::optional<Member> next();

 private:
  Bytes data_;
  std::string file_;
  std::uint64_t off_ = 0;
  bool with_indexes_ = false;
  target::LlvmRelease llvm_;
  std::string_view names_;  // the GNU "//" member, once seen
  // LLVM 19's reader checks the headers up to the first regular member when it
  // opens an archive, and clang-offload-bundler stops quietly at a damaged one
  // after that: only errors before this is set carry LLVM's text.
  bool returned_one_ = false;
};

}  // namespace ot::archive
