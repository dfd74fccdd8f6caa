// The code object URI ROCm's runtime and debugger name a code object by:
//   file://<absolute path, percent-encoded>#offset=<decimal>&size=<decimal>
// The path is encoded as ROCm's roc-obj-ls writes it (Perl's URI::Encode):
// RFC 3986's unreserved (A-Z a-z 0-9 - . _ ~) and reserved characters
// (! * ' ( ) ; : @ & = + $ , / [ ]) stay, every other byte is %XX (upper-case
// hex) -- and so are '#' and '?', which roc-obj-ls leaves bare although they
// end the path (its URIs for such paths do not name the file).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace ot::contents {

std::string percent_encode_path(std::string_view path);
// "file://<path>": `path` as given, made absolute (lexically, symlinks kept)
// against the current folder, encoded. Once per file: a listing of 888
// entries asked for the current folder 888 times.
std::string file_uri(const std::string& path);
// file_uri(path) + "#offset=<offset>&size=<size>"
std::string code_object_uri(std::string_view file_uri, std::uint64_t offset, std::uint64_t size);
// Appends `prefix` + "#offset=<offset>&size=<size>" to `out`: the code
// object's URI when `prefix` is file_uri(path) (a listing makes one per entry;
// `list --json` passes the URI as the opening of a JSON string).
void append_code_object_uri(fmt::memory_buffer& out, std::string_view prefix, std::uint64_t offset, std::uint64_t size);

}  // namespace ot::contents
