// The packager engine behind `offloadtool package` and the clang-offload-
// packager personality: packaging images into concatenated OffloadBinaries,
// and extracting images selected by key=value arguments (LLVM 19 semantics,
// llvm-behaviour.md 3.5). Payloads are streamed from the mapped inputs.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "packager/find_binaries.h"
#include "packager/image_args.h"

namespace ot::packager {

// ---- Packaging ---------------------------------------------------------------

// One OffloadBinary per image file, in order, written to `output` ("-" =
// stdout); no images gives an empty file. Each image needs `file` and `triple`;
// `file` may name several files (a repeated key joins them with ','), each
// giving a binary with the image's other keys. The
// image kind comes from bitcode magic or the file's extension, the offload
// kind from `kind`; every other key becomes a string entry, in LLVM's order.
// Every input is opened before the output is created, as in LLVM.
// Llvm19 diagnostics use LLVM's texts (an unreadable file is reported by its
// errno text alone).
void create_package(const std::vector<ImageArgs>& images, const std::string& output, Diagnostics diagnostics);

// The image kind LLVM 19 gives `path` with contents starting with `head`.
formats::ImageKind image_kind_for(const std::string& path, Bytes head);

// ---- Extraction --------------------------------------------------------------

// All of `args` hold for the image: `file` always, `kind` by offload kind
// number, any other key by exact string value (a missing key reads as "").
bool image_matches(const ImageArgs& args, const formats::OffloadEntry& entry);

struct ExtractOptions {
  std::vector<ImageArgs> selectors;  // --image arguments, in order
  bool archive = false;              // --archive: matches of a selector go to one static archive
  std::string directory;             // where generated names go ("" = current directory)
  std::uint64_t sym64_threshold = std::uint64_t{1} << 32;
  // Called at once with "Multiple inputs match to a single file, '<file>'".
  std::function<void(const std::string&)> warn = [](const std::string&) {};
};

struct ExtractResult {
  std::vector<std::string> written;  // output paths, in order
};

// Extracts from `input` ("-" = stdin) per selector, as LLVM 19 does: no match
// writes nothing; with --archive the matches form one archive named by `file`
// (members named by each binary's origin); else with `file` the last match
// is written there (a warning when there are several); else each match goes
// to "<stem>-<triple>-<arch>.<n>.<ext>". Everything is validated before the
// first byte is written and all outputs are committed together (LLVM writes
// each as it goes, so an error in a later selector leaves earlier files).
ExtractResult extract_package(const std::string& input, const ExtractOptions& options, Diagnostics diagnostics);

}  // namespace ot::packager
