// The packager engine behind `offloadtool package` and the clang-offload-
// packager personality: packaging images into concatenated OffloadBinaries,
// and extracting images selected by key=value arguments (LLVM 19 semantics,
// llvm-behaviour.md 3.5). Payloads are streamed from the mapped inputs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "packager/find_binaries.h"
#include "packager/image_args.h"
#include "target/llvm_release.h"

namespace ot::packager {

// ---- Packaging ---------------------------------------------------------------

// One OffloadBinary per image file, in order, written to `output` ("-" =
// stdout); no images gives an empty file. Each image needs `file`, and
// `triple` too except under Llvm19 diagnostics of a release that dropped the
// rule (22; the native applet always wants it);
// `file` may name several files (a repeated key joins them with ','), each
// giving a binary with the image's other keys. The
// image kind comes from bitcode magic or the file's extension, the offload
// kind from `kind` in `release`'s numbering (hip: 3 or 4, sycl: 0 or 8);
// every other key becomes a string entry, in LLVM's order.
// Every input is opened before the output is created, as in LLVM.
// Llvm19 diagnostics use LLVM's texts (an unreadable file is reported by its
// errno text alone), `release`'s where they differ.
void create_package(const std::vector<ImageArgs>& images, const std::string& output, Diagnostics diagnostics,
                    target::LlvmRelease release);

// The image kind LLVM of `release` gives `path` with contents starting with `head`.
formats::ImageKind image_kind_for(const std::string& path, Bytes head, target::LlvmRelease release);

// ---- Extraction --------------------------------------------------------------

// All of `args` hold for the image: `file` always, any key but `kind` by exact
// string value (a missing key reads as ""). `kind` as LLVM of `kind_release`
// compares it: by that release's number, so 22's kind=hip (4) misses a
// 19-packed HIP image (3) and 19's misses 22's; without a release, by name
// (formats::offload_kind_name: kind=hip selects 3 and 4).
bool image_matches(const ImageArgs& args, const formats::OffloadEntry& entry,
                   std::optional<target::LlvmRelease> kind_release);

struct ExtractOptions {
  std::vector<ImageArgs> selectors;  // --image arguments, in order
  bool archive = false;              // --archive: matches of a selector go to one static archive
  std::string directory;             // where generated names go ("" = current directory)
  std::uint64_t sym64_threshold = std::uint64_t{1} << 32;
  std::optional<target::LlvmRelease> kind_release;  // how kind= selects (image_matches)
  // Whose llvm-offload-binary Llvm19 diagnostics impersonate: its reader's
  // words (formats::llvm_verdict), and with ReleaseTraits::packager_extracts_all
  // (23) its extraction: every image when there are no selectors, an image
  // that is an OffloadBinary replaced by its images (recursively), the names
  // "<stem>-<triple>.<n>.<ext>" where the arch is empty, "spv" for SPIR-V.
  target::LlvmRelease release = target::LlvmRelease::Llvm19;
  // Called at once with "Multiple inputs match to a single file, '<file>'".
  std::function<void(const std::string&)> warn = [](const std::string&) {};
};

struct ExtractResult {
  std::vector<std::string> written;    // output paths, in order
  std::vector<std::string> generated;  // those written under generated names, as named (23 reports them)
};

// Extracts from `input` ("-" = stdin) per selector, as LLVM 19 does: no match
// writes nothing; with --archive the matches form one archive named by `file`
// (members named by each binary's origin); else with `file` the last match
// is written there (a warning when there are several); else each match goes
// to "<stem>-<triple>-<arch>.<n>.<ext>", n counting from 0 per selector (LLVM
// 23: see ExtractOptions::release). Everything is validated before the
// first byte is written and all outputs are committed together (LLVM writes
// each as it goes, so an error in a later selector, or in 23 in a nested
// binary, leaves earlier files).
ExtractResult extract_package(const std::string& input, const ExtractOptions& options, Diagnostics diagnostics);

}  // namespace ot::packager
