// A blob may hold several offload bundles one after another: the linker
// concatenates the .hip_fatbin sections of every translation unit (each
// aligned, the gaps zero-filled), and ROCm libraries ship such sections. This
// splits a blob into its bundles, each bounded by its own header's sizes --
// never by searching for the next magic, which payload bytes could contain.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "formats/bundle_binary.h"
#include "support/bytes.h"

namespace ot::formats {

struct BundleSpan {
  std::uint64_t offset = 0;  // inside the blob
  std::uint64_t size = 0;    // binary bundle: header and payloads; CCOB: its total size
  bool compressed = false;   // a CCOB
  // A binary bundle's entries as its header was read (offsets from the
  // bundle's start), so that a caller need not read the header again.
  std::vector<BundleEntry> entries = {};
};

// The bundles of `blob` in order. A binary bundle ends after its header and
// its last payload, a CCOB v2/v3 at its total size, a CCOB v1 (which records
// no total size) at the end of the blob. Zero bytes between bundles and after
// the last one are alignment padding. Anything else is an error naming `file`
// and the offset; a blob that does not start with a bundle gives no spans.
std::vector<BundleSpan> split_bundles(Bytes blob, const std::string& file);
// The same through a source that may read the headers and padding with pread
// (payloads are not read): splitting a large blob maps none of its pages in.
std::vector<BundleSpan> split_bundles(const ByteSource& blob, const std::string& file);

}  // namespace ot::formats
