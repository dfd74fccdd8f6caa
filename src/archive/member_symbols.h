// Which symbols LLVM 19's archive writer lists for a member: the global,
// defined, not format-specific symbols of ELF objects (their .symtab) and of
// LLVM bitcode (its stored symbol table), in the member's own order. Data
// that is no symbolic file has none.
#pragma once

#include <string>
#include <vector>

#include "support/bytes.h"

namespace ot::archive {

// `name` labels errors (a damaged ELF symbol table fails, as in LLVM).
std::vector<std::string> archive_symbols(Bytes member, const std::string& name);

}  // namespace ot::archive
