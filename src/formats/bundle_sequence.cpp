#include "formats/bundle_sequence.h"

#include <algorithm>

#include "formats/bundle_binary.h"
#include "formats/compressed_bundle.h"

namespace ot::formats {
namespace {

// The bytes the binary bundle at the start of `data` occupies.
std::uint64_t binary_bundle_extent(Bytes data, const std::string& file) {
  std::vector<BundleEntry> entries = read_binary_bundle(data, file);
  std::uint64_t end = kBundleMagic.size() + 8;
  for (const BundleEntry& e : entries) end += 24 + e.id.size();
  for (const BundleEntry& e : entries) end = std::max(end, e.offset + e.size);  // read_binary_bundle bounds both
  return end;
}

}  // namespace

std::vector<BundleSpan> split_bundles(Bytes blob, const std::string& file) {
  std::vector<BundleSpan> spans;
  std::uint64_t pos = 0;
  while (pos < blob.size()) {
    Bytes rest = blob.subspan(pos);
    bool binary = has_binary_bundle_magic(rest), compressed = has_ccob_magic(rest);
    if (!binary && !compressed) {
      if (spans.empty()) return spans;  // not a bundle at all
      fail_at({file, pos}, "neither an offload bundle nor padding after the bundle ending at 0x{:x}",
              spans.back().offset + spans.back().size);
    }
    BundleSpan s{pos, 0, compressed};
    s.size = rebase_errors(pos, [&] {
      return binary ? binary_bundle_extent(rest, file) : read_ccob_header(rest, file).total_size.value_or(rest.size());
    });
    spans.push_back(s);
    auto next = std::find_if(rest.begin() + static_cast<std::ptrdiff_t>(s.size), rest.end(),
                             [](std::byte b) { return b != std::byte{0}; });
    pos += static_cast<std::uint64_t>(next - rest.begin());
  }
  return spans;
}

}  // namespace ot::formats
