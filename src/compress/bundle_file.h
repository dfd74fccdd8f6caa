// File-level work of `offloadtool compress`: a file holds one bundle or several
// concatenated ones (a .hip_fatbin section), each uncompressed or a CCOB; they
// are found with formats::split_bundles (each bounded by its own header) and
// compressed, decompressed, recompressed or described one by one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compress/ccob.h"

namespace ot::compress {

enum class Action { Compress, Decompress, Recompress };

struct RecodeOptions {
  Action action = Action::Compress;
  CcobOptions ccob;          // for Compress and Recompress
  // What a stored hash that does not match the decompressed bundle means when
  // decompressing: Check = an error, Warn = a warning, Skip = not computed at
  // all (LLVM's unbundling never checks it).
  enum class Hash { Check, Warn, Skip } hash = Hash::Check;
  std::function<void(const std::string&)> warn;
  // How far the work has come through the input: `done` of its `total` bytes.
  std::function<void(std::uint64_t done, std::uint64_t total)> progress = {};
};

// Read `input`, write `output` (atomically: nothing is left behind on failure,
// an existing output stays untouched). Compress: every uncompressed bundle
// becomes a CCOB (a CCOB in the input is an error: use Recompress). Decompress:
// every CCOB becomes its bundle (uncompressed ones are copied). Recompress: every
// bundle becomes a CCOB with the new settings. A file that is not a binary
// bundle (a text bundle, say) is one bundle as a whole when compressing.
// Several bundles are written one after another, each starting at the
// alignment the input's bundles had (the largest power of two up to 4096
// dividing all their offsets), zero-filled between them.
void recode_file(const std::string& input, const std::string& output, const RecodeOptions& options);

struct BundleInfo {
  std::uint64_t offset = 0;  // in the file
  std::uint64_t size = 0;    // bytes the bundle occupies (a CCOB: its total size)
  bool compressed = false;
  std::optional<DecodedCcob> ccob;        // compressed: header, sizes, hashes
  std::optional<StreamInfo> stream;       // compressed: what the zstd/zlib header says
};

// Every bundle of `input`, each CCOB decoded (streaming, nothing kept) to
// recompute its hash. Decoding errors are thrown; hash mismatches are reported
// in the result.
std::vector<BundleInfo> inspect_file(const std::string& input);
// The same for one bundle `item` found `offset` bytes into `file` (errors name them).
BundleInfo inspect_bundle(Bytes item, bool compressed, const std::string& file, std::uint64_t offset);

}  // namespace ot::compress
