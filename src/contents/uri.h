// The code object URI ROCm's runtime and debugger name a code object by:
//   file://<absolute path, percent-encoded>#offset=<decimal>&size=<decimal>
// The path keeps RFC 3986's unreserved characters (A-Z a-z 0-9 - . _ ~) and
// '/'; every other byte is %XX (upper-case hex), as ROCm's URI encoding does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ot::contents {

std::string percent_encode_path(std::string_view path);
// `path` as given; made absolute (lexically, symlinks kept) against the current folder.
std::string code_object_uri(const std::string& path, std::uint64_t offset, std::uint64_t size);

}  // namespace ot::contents
