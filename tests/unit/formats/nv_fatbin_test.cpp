// formats/nv_fatbin against the CUDA 13 fixtures of tests/data/nvidia: what
// their entry headers hold is in tests/data/nvidia/expected.txt (written by
// describe.py from the format's facts, not by this reader), and the images
// are the files given to NVIDIA's fatbinary (tests/data/nvidia/inputs).
#include <doctest/doctest.h>


#include "formats/nv_fatbin.h"
#include "prune/prune.h"
#include "support/error.h"
#include "../test_files.h"

namespace ot::formats {
namespace {

std::vector<std::byte> read_all(const std::string& rel) {
  std::vector<std::byte> out = test::read_bytes(test::data_path(rel));
  REQUIRE(!out.empty());
  return out;
}

std::vector<std::string> targets(const Fatbin& f) {
  std::vector<std::string> out;
  for (const FatbinEntry& e : f.entries) out.push_back(e.target());
  return out;
}

}  // namespace

TEST_CASE("fatbin: arch-specific.fatbin's six entries, a/f targets from the flags") {
  const std::vector<std::byte> d = read_all("nvidia/arch-specific.fatbin");
  const std::vector<Fatbin> fs = read_fatbins(ByteSource(d), "arch-specific.fatbin");
  REQUIRE(fs.size() == 1);
  CHECK(fs[0].size == 24936);
  CHECK(targets(fs[0]) == std::vector<std::string>{"sm_80", "compute_80", "sm_90", "sm_90a", "compute_90a", "sm_100f"});
  const FatbinEntry& sm100 = fs[0].entries[5];
  CHECK(sm100.offset == 0x4208);
  CHECK(sm100.header_size == 112);
  CHECK(sm100.payload_offset() == 0x4278);
  CHECK(sm100.stored_size() == 7920);
  CHECK(sm100.kind_name() == "cubin");
  CHECK(fs[0].entries[1].kind_name() == "ptx");
  CHECK(fs[0].entries[1].stored_size() == 776);
  CHECK(fs[0].entries[1].compression() == FatbinCompression::None);
  // The plain cubins are the inputs, byte for byte.
  const std::vector<std::byte> sm90a = read_all("nvidia/inputs/k.sm_90a.cubin");
  const FatbinEntry& e = fs[0].entries[3];
  CHECK(fatbin_image(e, Bytes(d).subspan(e.payload_offset(), e.stored_size()), 1 << 20, "f", 0) == sm90a);
}

TEST_CASE("fatbin: LZ4 and zstd entries decode to fatbinary's inputs") {
  const std::vector<std::byte> cubin = read_all("nvidia/inputs/k.sm_80.cubin");
  for (const char* name : {"nvidia/lz4.fatbin", "nvidia/zstd.fatbin"}) {
    CAPTURE(name);
    const std::vector<std::byte> d = read_all(name);
    const std::vector<Fatbin> fs = read_fatbins(ByteSource(d), name);
    REQUIRE(fs.size() == 1);
    REQUIRE(fs[0].entries.size() == 2);
    const FatbinEntry& e = fs[0].entries[0];
    CHECK(e.compression() == (std::string(name).find("lz4") != std::string::npos ? FatbinCompression::Lz4
                                                                                 : FatbinCompression::Zstd));
    CHECK(e.uncompressed_size() == 4584);
    CHECK(e.stored_size() == (e.compression() == FatbinCompression::Lz4 ? 1402u : 912u));
    CHECK(fatbin_image(e, Bytes(d).subspan(e.payload_offset(), e.stored_size()), 1 << 20, name, 0) == cubin);
    const FatbinEntry& ptx = fs[0].entries[1];
    const std::vector<std::byte> text = fatbin_image(ptx, Bytes(d).subspan(ptx.payload_offset(), ptx.stored_size()),
                                                     1 << 20, name, 0);
    CHECK(text.size() == 773);
    CHECK(text.back() == std::byte{0});
    // Above the caller's limit: refused before decoding.
    CHECK_THROWS_AS(fatbin_image(e, Bytes(d).subspan(e.payload_offset(), e.stored_size()), 4000, name, 0), Error);
  }
}

TEST_CASE("fatbin: prune_fatbin keeps entries as stored under a new header") {
  const std::vector<std::byte> d = read_all("nvidia/arch-specific.fatbin");
  const Fatbin f = read_fatbins(ByteSource(d), "a")[0];
  std::array<std::byte, kFatbinHeaderSize> header{};
  const std::vector<Bytes> pieces = prune_fatbin(Bytes(d), f, {2, 3, 5}, header);
  std::vector<std::byte> out;
  for (Bytes p : pieces) out.insert(out.end(), p.begin(), p.end());
  // Entries 2 and 3 are one piece (contiguous), 5 another.
  CHECK(pieces.size() == 3);
  const std::uint64_t want = (f.entries[3].end() - f.entries[2].offset) + (f.entries[5].end() - f.entries[5].offset);
  CHECK(load_le<std::uint64_t>(out.data() + 8) == want);
  CHECK(out.size() == 16 + want);
  const std::vector<Fatbin> again = read_fatbins(ByteSource(out), "pruned");
  REQUIRE(again.size() == 1);
  CHECK(targets(again[0]) == std::vector<std::string>{"sm_90", "sm_90a", "sm_100f"});
  // An empty fatbin is its header alone, and reads back.
  const std::vector<Bytes> none = prune_fatbin(Bytes(d), f, {}, header);
  CHECK(none.size() == 1);
  CHECK(read_fatbins(ByteSource(none[0]), "empty")[0].entries.empty());
}

TEST_CASE("fatbin: what --keep and --drop keep, per the CUDA driver's rules") {
  const std::vector<std::byte> d = read_all("nvidia/arch-specific.fatbin");
  const Fatbin f = read_fatbins(ByteSource(d), "a")[0];  // sm_80 compute_80 sm_90 sm_90a compute_90a sm_100f
  auto kept = [&](prune::Selection::Mode mode, std::vector<std::string> t) {
    const std::vector<bool> k = prune::fatbin_keeps(prune::make_selection(mode, t), f);
    std::vector<std::string> out;
    for (std::size_t i = 0; i < k.size(); ++i)
      if (k[i]) out.push_back(f.entries[i].target());
    return out;
  };
  using V = std::vector<std::string>;
  using M = prune::Selection::Mode;
  CHECK(kept(M::Keep, {"sm_86"}) == V{"sm_80"});           // same major, highest minor not above
  CHECK(kept(M::Keep, {"sm_90"}) == V{"sm_90"});           // its own cubin before sm_90a's
  CHECK(kept(M::Keep, {"sm_103"}) == V{"sm_100f"});        // the family
  CHECK(kept(M::Keep, {"sm_120"}) == V{"compute_80"});     // no cubin; compute_90a is 9.0's only
  CHECK(kept(M::Keep, {"compute_90"}) == V{"compute_90a"});  // the PTX a 9.0 GPU JITs: the newest
  CHECK(kept(M::Keep, {"compute_86"}) == V{"compute_80"});
  CHECK(kept(M::Keep, {"sm_75"}) == V{});                  // nothing an sm_75 GPU loads
  CHECK(kept(M::Keep, {"sm_80", "compute_80"}) == V{"sm_80", "compute_80"});
  CHECK(kept(M::Drop, {"sm_90"}) == V{"sm_80", "compute_80", "sm_90a", "compute_90a", "sm_100f"});
  CHECK(kept(M::Keep, {"gfx90a"}) == V{});                 // not an NVIDIA target
}

TEST_CASE("fatbin: damaged headers are refused with the offset") {
  std::vector<std::byte> d = read_all("nvidia/lz4.fatbin");
  SUBCASE("payload past the fatbin") {
    store_le<std::uint64_t>(d.data() + 0x10 + 8, 1u << 20);
    try {
      read_fatbins(ByteSource(d), "x.fatbin", 0x100);
      FAIL("not refused");
    } catch (const Error& e) {
      CHECK(e.offset() == 0x100 + 0x18);
    }
  }
  SUBCASE("entry header smaller than 64") {
    store_le<std::uint32_t>(d.data() + 0x10 + 4, 32);
    CHECK_THROWS_AS(read_fatbins(ByteSource(d), "x.fatbin"), Error);
  }
  SUBCASE("LZ4 garbage") {
    const Fatbin f = read_fatbins(ByteSource(d), "x")[0];
    std::vector<std::byte> stored(f.entries[0].stored_size(), std::byte{0xff});
    CHECK_THROWS_AS(fatbin_image(f.entries[0], stored, 1 << 20, "x", 0), Error);
  }
}

}  // namespace ot::formats
