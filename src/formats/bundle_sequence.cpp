#include "formats/bundle_sequence.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "formats/bundle_binary.h"
#include "formats/compressed_bundle.h"

namespace ot::formats {
namespace {

// The bytes the binary bundle at the start of `src` occupies.
std::uint64_t binary_bundle_extent(const std::vector<BundleEntry>& entries) {
  std::uint64_t end = kBundleMagic.size() + 8;
  for (const BundleEntry& e : entries) end += 24 + e.id.size();
  for (const BundleEntry& e : entries) end = std::max(end, e.offset + e.size);  // read_binary_bundle bounds both
  return end;
}

// The offset of the first byte at or after `pos` that is not zero (the size
// when none is). `next` gets the bytes read from there on: the start of the
// next bundle, which the padding scan has read already (a second pread per
// bundle otherwise).
std::uint64_t skip_zeros(const ByteSource& src, std::uint64_t pos, std::vector<std::byte>& next) {
  static constexpr std::array<std::byte, 4096> kZeros{};
  std::array<std::byte, 4096> chunk;
  next.clear();
  while (std::uint64_t n = src.read(pos, chunk.data(), chunk.size())) {
    // memcmp first: a chunk of padding is all zeros, and it compares them
    // many at a time (a byte at a time was 6% of listing a ROCm library).
    if (std::memcmp(chunk.data(), kZeros.data(), n) != 0) {
      auto end = chunk.begin() + static_cast<std::ptrdiff_t>(n);
      auto it = std::find_if(chunk.begin(), end, [](std::byte b) { return b != std::byte{0}; });
      next.assign(it, end);
      return pos + static_cast<std::uint64_t>(it - chunk.begin());
    }
    pos += n;
  }
  return pos;
}

}  // namespace

std::vector<BundleSpan> split_bundles(Bytes blob, const std::string& file) {
  return split_bundles(ByteSource(blob), file);
}

std::vector<BundleSpan> split_bundles(const ByteSource& blob, const std::string& file) {
  std::vector<BundleSpan> spans;
  std::vector<std::byte> buf;  // the first bytes of `rest` as far as they are read (ByteSource::prefix)
  std::uint64_t pos = 0;
  while (pos < blob.size()) {
    ByteSource rest = blob.tail(pos);
    Bytes head = rest.prefix(std::max<std::size_t>(kBundleMagic.size(), kMaxCcobHeaderSize), buf);
    bool binary = has_binary_bundle_magic(head), compressed = has_ccob_magic(head);
    if (!binary && !compressed) {
      if (spans.empty()) return spans;  // not a bundle at all
      fail_at({file, pos}, "neither an offload bundle nor padding after the bundle ending at 0x{:x}",
              spans.back().offset + spans.back().size);
    }
    BundleSpan s{pos, 0, compressed};
    rebase_errors(pos, [&] {
      if (binary) {
        s.entries = read_binary_bundle(rest, file, buf);
        s.size = binary_bundle_extent(s.entries);
      } else {
        s.size = read_ccob_header(head, rest.size(), file).total_size.value_or(rest.size());
      }
    });
    spans.push_back(std::move(s));
    pos = skip_zeros(blob, pos + s.size, buf);
  }
  return spans;
}

}  // namespace ot::formats
