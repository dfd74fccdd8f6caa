#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "codec/codec.h"
#include "support/mapped_file.h"

using namespace ot;
using codec::Compressor;

namespace {

// Compressible data with repeats further apart than small zstd windows: 64 KiB
// blocks, each a random block or a lightly changed copy of one ~2 MiB back.
std::vector<std::byte> test_data(std::size_t blocks) {
  std::mt19937 rng(7);
  std::vector<std::byte> d;
  constexpr std::size_t kBlock = 64u << 10;
  for (std::size_t b = 0; b < blocks; ++b) {
    if (b >= 32 && rng() % 2) {
      std::size_t from = (b - 32) * kBlock;
      for (std::size_t i = 0; i < kBlock; ++i) d.push_back(i % 977 ? d[from + i] : std::byte{0x5a});
    } else {
      for (std::size_t i = 0; i < kBlock; ++i) d.push_back(static_cast<std::byte>(i % 4 ? rng() : 0));
    }
  }
  return d;
}

std::vector<std::byte> compress_stable(const codec::Params& p, Bytes data, std::size_t first_piece) {
  std::vector<std::byte> out;
  Compressor c(p, data.size(), [&](Bytes b) { out.insert(out.end(), b.begin(), b.end()); }, Compressor::Input::Stable);
  // Irregular pieces, each continuing the previous one in memory.
  for (std::size_t off = 0, n = first_piece; off < data.size(); off += n, n = n * 3 / 2 + 4093)
    c.write(data.subspan(off, std::min(n, data.size() - off)));
  c.finish();
  return out;
}

}  // namespace

TEST_CASE("a stable input gives the one-call bytes (LLVM's) however it is cut, past the window too") {
  const std::vector<std::byte> data = test_data(96);  // 6 MiB, more than the windows of levels 1 and 3 without LDM
  struct Case {
    codec::Method method;
    int level;
    bool ldm;
  };
  for (Case k : {Case{codec::Method::Zstd, 1, false}, Case{codec::Method::Zstd, 3, false},
                 Case{codec::Method::Zstd, 3, true}, Case{codec::Method::Zstd, 9, true},
                 Case{codec::Method::Zlib, 6, false}}) {
    CAPTURE(k.level);
    CAPTURE(k.ldm);
    codec::Params p;
    p.method = k.method;
    p.level = k.level;
    p.long_distance = k.ldm;
    const std::vector<std::byte> one_call = codec::compress_all(p, data);
    CHECK(compress_stable(p, data, 1) == one_call);
    CHECK(compress_stable(p, data, 100000) == one_call);
    CHECK(compress_stable(p, data, data.size()) == one_call);
  }
}

TEST_CASE("the window a stable-input caller must keep, and writes that do not continue the input") {
  codec::Params p;  // LLVM's: zstd level 3 with long-distance matching
  std::vector<std::byte> data(1000);
  Compressor ldm(p, std::uint64_t{1} << 32, [](Bytes) {}, Compressor::Input::Stable);
  CHECK(ldm.window_size() == std::uint64_t{1} << 27);  // ZSTD_LDM_DEFAULT_WINDOW_LOG
  p.long_distance = false;
  Compressor small(p, 1000, [](Bytes) {}, Compressor::Input::Stable);
  CHECK(small.window_size() <= 1024);  // zstd shrinks the window to the input
  small.write(Bytes(data).first(10));
  CHECK_THROWS_AS(small.write(Bytes(data).subspan(20, 10)), std::logic_error);
  p.method = codec::Method::Zlib;
  p.level = 6;
  Compressor zlib(p, 1000, [](Bytes) {}, Compressor::Input::Stable);
  CHECK(zlib.window_size() == 32768);
}

TEST_CASE("decompress_into reports progress in steps of a few MiB however compressible the frame") {
  // Handed over whole (or by input size), the decoder would write most pages
  // in one call, before the caller could drop any: 64 MiB of zeros compress to
  // a few KiB; of two equal 16 MiB halves, the second is a few bytes a block.
  std::vector<std::byte> zeros(64u << 20), halves(32u << 20);
  std::mt19937 rng(3);
  for (std::size_t i = 0; i < halves.size() / 2; ++i)
    halves[i] = halves[i + halves.size() / 2] = static_cast<std::byte>(rng());
  for (const std::vector<std::byte>* data : {&zeros, &halves}) {
    codec::Params p;  // LLVM's settings: zstd 3 with long-distance matching
    const std::vector<std::byte> packed = codec::compress_all(p, *data);
    REQUIRE(packed.size() < data->size() * 6 / 10);
    std::vector<std::byte> out(data->size(), std::byte{1});
    std::uint64_t last = 0, largest_step = 0, calls = 0;
    codec::decompress_into(p.method, packed, out, [&](std::uint64_t n) {
      largest_step = std::max(largest_step, n - last);
      last = n;
      ++calls;
    });
    CHECK(out == *data);
    CHECK(last == data->size());
    CHECK(largest_step <= (2u << 20));
    CHECK(calls >= 16);
  }
}

TEST_CASE("decompress_to_file: decompress's bytes in a mapped scratch file, each piece seen once") {
  const std::vector<std::byte> data = test_data(96);
  for (codec::Method m : {codec::Method::Zstd, codec::Method::Zlib}) {
    codec::Params p;
    p.method = m;
    const std::vector<std::byte> packed = codec::compress_all(p, data);
    std::vector<std::byte> seen;
    std::shared_ptr<InputFile> f = codec::decompress_to_file(
        m, packed, data.size(), "", "plain", [&](Bytes b) { seen.insert(seen.end(), b.begin(), b.end()); });
    REQUIRE(f);
    CHECK(f->size() == data.size());
    CHECK(std::equal(data.begin(), data.end(), f->bytes().begin(), f->bytes().end()));
    CHECK(seen == data);
    // A declared size the data does not decode to is the decoder's error.
    CHECK_THROWS_AS(codec::decompress_to_file(m, packed, data.size() + 1, "", "plain"), Error);
  }
}

TEST_CASE("decompress_into gives decompress's bytes and errors, using the destination as its window") {
  const std::vector<std::byte> data = test_data(96);
  for (bool zstd : {true, false}) {
    codec::Params p;
    p.method = zstd ? codec::Method::Zstd : codec::Method::Zlib;
    p.level = zstd ? 1 : 6;  // zstd level 1: a 512 KiB window, far shorter than the data
    const std::vector<std::byte> packed = codec::compress_all(p, data);
    std::vector<std::byte> out(data.size());
    std::uint64_t last = 0, consumed = 0;
    codec::decompress_into(
        p.method, packed, out,
        [&](std::uint64_t n) {
          CHECK(n >= last);
          last = n;
        },
        [&](std::uint64_t n) { consumed = n; });
    CHECK(out == data);
    CHECK(last == data.size());
    CHECK(consumed == packed.size());
    if (!zstd) continue;
    // The same failures as decompress (LLVM's texts).
    auto fails = [&](Bytes src, std::uint64_t size) -> std::string {
      std::vector<std::byte> dst(size);
      try {
        codec::decompress_into(p.method, src, dst, {});
      } catch (const Error& e) {
        return e.message();
      }
      return "";
    };
    CHECK(fails(Bytes(packed).first(packed.size() - 100), data.size()) == "Src size is incorrect");
    std::vector<std::byte> trailing = packed;
    trailing.push_back(std::byte{0});
    CHECK(fails(trailing, data.size()) != "");
    CHECK(fails(packed, data.size() - 1) != "");
    CHECK(fails(packed, data.size() + 1) ==
          fmt::format("declared uncompressed size 0x{:x} but the data decompresses to 0x{:x} bytes", data.size() + 1,
                      data.size()));
  }
}
