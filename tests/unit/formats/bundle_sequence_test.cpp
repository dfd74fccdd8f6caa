#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../test_files.h"
#include "formats/bundle_binary.h"
#include "formats/bundle_sequence.h"
#include "support/bytes.h"

using namespace ot;
using ot::test::golden;

namespace {

// `parts` one after another, each (but the first) starting at a multiple of `align`, gaps zero-filled.
std::vector<std::byte> concatenate(const std::vector<std::vector<std::byte>>& parts, std::size_t align) {
  std::vector<std::byte> out;
  for (const auto& p : parts) {
    out.resize((out.size() + align - 1) / align * align);
    out.insert(out.end(), p.begin(), p.end());
  }
  return out;
}

}  // namespace

TEST_CASE("LLVM 19's bundles and CCOBs, concatenated as the linker does, split at their headers' sizes") {
  auto a = golden("19-hip2.bc"), b = golden("19-hip2-compressed.bc"), c = golden("19-mixed.bc");
  auto blob = concatenate({a, b, c}, 4096);
  blob.resize(blob.size() + 100);  // trailing alignment padding
  auto spans = formats::split_bundles(blob, "fatbin");
  REQUIRE(spans.size() == 3);
  CHECK(spans[0].offset == 0);
  CHECK(spans[0].size == a.size());
  CHECK(!spans[0].compressed);
  CHECK(spans[1].offset == 4096);
  CHECK(spans[1].size == b.size());
  CHECK(spans[1].compressed);
  CHECK(spans[2].offset == 8192);
  CHECK(spans[2].size == c.size());

  SUBCASE("back to back, no padding") {
    auto tight = concatenate({b, a, b}, 1);
    auto s = formats::split_bundles(tight, "fatbin");
    REQUIRE(s.size() == 3);
    CHECK(s[1].offset == b.size());
    CHECK(s[2].offset == b.size() + a.size());
  }
  SUBCASE("a blob that is no bundle gives no spans") {
    CHECK(formats::split_bundles(golden("tgt1"), "x").empty());
    CHECK(formats::split_bundles({}, "x").empty());
  }
  SUBCASE("garbage after a bundle is an error at its offset") {
    blob[8192 + c.size() + 3] = std::byte{'x'};
    std::string expected = fmt::format(
        "fatbin: neither an offload bundle nor padding after the bundle ending at 0x{:x}, at offset 0x{:x}",
        8192 + c.size(), 8192 + c.size() + 3);
    CHECK_THROWS_WITH(formats::split_bundles(blob, "fatbin"), expected.c_str());
  }
  SUBCASE("a lying header in a later bundle is reported at its offset in the blob") {
    blob[4096 + 8] = std::byte{0xff};  // CCOB v2 total size, low byte
    blob[4096 + 9] = std::byte{0xff};
    blob[4096 + 10] = std::byte{0xff};
    std::uint32_t total = load_le<std::uint32_t>(blob.data() + 4096 + 8);
    std::string expected = fmt::format(
        "fatbin: compressed bundle total size 0x{:x} exceeds the file size 0x{:x}, at offset 0x1008", total,
        blob.size() - 4096);
    CHECK_THROWS_WITH(formats::split_bundles(blob, "fatbin"), expected.c_str());
  }
}

TEST_CASE("split through a reading source: the same spans and errors, and no payload byte read") {
  auto a = golden("19-hip2.bc"), b = golden("19-hip2-compressed.bc");
  auto blob = concatenate({a, a, b, a}, 4096);
  blob.resize(blob.size() + 5000);  // trailing padding, more than one chunk
  std::vector<std::pair<std::uint64_t, std::uint64_t>> reads;
  ByteSource src(blob, [&](std::uint64_t off, std::byte* to, std::uint64_t len) {
    reads.emplace_back(off, len);
    std::copy_n(blob.data() + off, len, to);
  });
  auto spans = formats::split_bundles(src, "fatbin");
  auto plain = formats::split_bundles(blob, "fatbin");
  REQUIRE(spans.size() == 4);
  for (std::size_t i = 0; i < spans.size(); ++i) {
    CHECK(spans[i].offset == plain[i].offset);
    CHECK(spans[i].size == plain[i].size);
    CHECK(spans[i].compressed == plain[i].compressed);
  }
  // Each bundle's table (and the zeros after it) is read, not its payloads:
  // a's first payload starts past its table.
  auto table = formats::read_binary_bundle(Bytes(a), "a");
  std::uint64_t first_payload = table[0].offset;
  for (const auto& e : table)
    if (e.size) first_payload = std::min(first_payload, e.offset);
  for (std::uint64_t at : {std::uint64_t{0}, std::uint64_t{4096 * ((a.size() + 4095) / 4096)}}) {
    bool payload_read = false;
    for (auto [off, len] : reads)
      if (off < at + a.size() && off + len > at + first_payload + 4096) payload_read = true;
    CHECK(!payload_read);
  }

  SUBCASE("an error names the same offset") {
    blob[blob.size() - 10] = std::byte{'x'};
    std::string expected = fmt::format(
        "fatbin: neither an offload bundle nor padding after the bundle ending at 0x{:x}, at offset 0x{:x}",
        spans[3].offset + spans[3].size, blob.size() - 10);
    CHECK_THROWS_WITH(formats::split_bundles(src, "fatbin"), expected.c_str());
  }
}
