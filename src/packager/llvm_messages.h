// The exact texts LLVM's clang-offload-packager (19) and llvm-offload-binary
// (22) print after "<argv0>: error: " or "<argv0>: warning: ", in one place
// (the OffloadBinary parser's own texts are formats::llvm19_verdict_text, the
// same in 22). Unless a name says a release, a text is the same in 19 and 22.
#pragma once

#include <string_view>

namespace ot::packager::llvm_text {

inline constexpr std::string_view kModesExclusive =
    "Packaging to an output file and extracting from an input file are mutually exclusive.";
// A packaged image without them (19: both are needed, 22: only 'file'; the
// grammar is 22's own).
inline constexpr std::string_view kFileAndTripleRequired19 = "'file' and 'triple' are required image arguments";
inline constexpr std::string_view kFileRequired22 = "'file' is a required image arguments";
inline constexpr std::string_view kArchiveNeedsFile = "Image must have a 'file' argument.";
// 22, run under the old name: printed whole, without a program-name prefix,
// once the command line has parsed (so not for --help, --version or a usage
// error, which end inside the parser) and before anything else, -h's help included.
inline constexpr std::string_view kOldNameDeprecated22 =
    "warning: 'clang-offload-packager' is deprecated. Use 'llvm-offload-binary' instead.\n";
// Also offloadtool's own warning: the text says all there is to say.
inline constexpr std::string_view kMultipleMatches = "Multiple inputs match to a single file, '{}'";

}  // namespace ot::packager::llvm_text
