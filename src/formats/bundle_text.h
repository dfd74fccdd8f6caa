// The text offload-bundle layout (reference section 2.9): for each entry
//   "\n<comment> __CLANG_OFFLOAD_BUNDLE____START__ <id>\n" <payload>
//   "\n<comment> __CLANG_OFFLOAD_BUNDLE____END__ <id>\n"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "formats/bundle_binary.h"

namespace ot::formats {

// The comment string of a text file type (i ii cui hipi -> "//", d s -> "#",
// ll -> ";"), or nullopt for types that are not text.
std::optional<std::string_view> text_comment_for_type(std::string_view type);

// The comment string of the first of "//", "#", ";" whose start marker occurs
// in `data` (the order the bundler's readers try them), or nullopt.
std::optional<std::string_view> find_text_comment(Bytes data);

std::string text_start_marker(std::string_view comment);  // "\n// __CLANG_OFFLOAD_BUNDLE____START__ "
std::string text_end_marker(std::string_view comment);

// Entries in file order, found exactly as LLVM finds them: a start marker, the ID
// up to the next newline, the payload up to the next end marker. A start marker
// without an ID line ends the list (as in LLVM); one without an end marker is an
// error (LLVM would take the rest of the file, or read out of bounds).
std::vector<BundleEntry> read_text_bundle(Bytes data, std::string_view comment, const std::string& file);

}  // namespace ot::formats
