// The device-code entries of any file a runtime could load from: binary and
// text bundles, CCOBs, blobs of several concatenated ones, archives (each
// member), and host objects or executables with embedded device code
// (__CLANG_OFFLOAD_BUNDLE__<id> sections, .hip_fatbin sections holding
// bundles, OffloadBinary .llvm.offloading sections).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/bytes.h"

namespace ot::compat {

struct FoundEntry {
  std::string id;          // the bundle entry ID as stored (OffloadBinary: "<kind>-<triple>-<arch>")
  std::string container;   // where the bundle holding it is: "lib.a(x.o), section .hip_fatbin, bundle 1 at 0x1000"
  std::uint64_t index = 0;  // entry number inside its container
  std::uint64_t offset = 0;  // of the payload: in the file, or in the decompressed bundle when `compressed`
  std::uint64_t size = 0;
  bool compressed = false;
  // The target ID in the payload's AMDGPU ELF header (compat/code_object.h);
  // "" when the payload is not an AMDGPU code object.
  std::string code_object;
  std::string location() const;  // container + ", entry <index>"
};

// A container the rules of `verify` apply to: one bundle, one object's set of
// bundle sections, one offload binary.
struct FoundContainer {
  std::string name;
  std::vector<FoundEntry> entries;
  std::vector<std::string> refused_duplicates;  // IDs the bundle stores twice (its reader refuses the bundle)
};

// Every container with device code in `data`, in file order. Errors name
// `file` (archive members as "file(member)") and the offset in the file (in
// the member for archive members, in the decompressed data inside a CCOB).
// A file with no device code gives an empty list.
std::vector<FoundContainer> find_containers(Bytes data, const std::string& file);

}  // namespace ot::compat
