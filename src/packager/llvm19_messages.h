// The exact texts LLVM 19's clang-offload-packager prints after
// "<argv0>: error: " or "<argv0>: warning: ", in one place (the OffloadBinary
// parser's own texts are formats::llvm19_verdict_text).
#pragma once

#include <string_view>

namespace ot::packager::llvm19 {

inline constexpr std::string_view kModesExclusive =
    "Packaging to an output file and extracting from an input file are mutually exclusive.";
inline constexpr std::string_view kFileAndTripleRequired = "'file' and 'triple' are required image arguments";
inline constexpr std::string_view kArchiveNeedsFile = "Image must have a 'file' argument.";
// Also offloadtool's own warning: the text says all there is to say.
inline constexpr std::string_view kMultipleMatches = "Multiple inputs match to a single file, '{}'";

}  // namespace ot::packager::llvm19
