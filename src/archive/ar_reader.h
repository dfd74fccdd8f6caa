// Reading `ar` archives (GNU and BSD variants) through libarchive. Members are
// views into the archive's bytes, so nested containers can be parsed and
// payloads copied without loading anything twice.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/bytes.h"

namespace ot::archive {

bool is_archive(Bytes data);       // "!<arch>\n"
bool is_thin_archive(Bytes data);  // "!<thin>\n"

struct Member {
  std::string name;          // as LLVM's Archive::Child::getName(): long names resolved, trailing '/' removed
  Bytes data;                // points into the archive's bytes
  std::uint64_t offset = 0;  // of `data` inside the archive (0 for an empty member)
};

// The regular members in file order; the symbol table ("/", "/SYM64/",
// "__.SYMDEF...") and the GNU long-name table ("//") are left out. Throws
// ot::Error naming `file` for malformed archives and for thin archives.
std::vector<Member> read_members(Bytes archive, const std::string& file);

}  // namespace ot::archive
