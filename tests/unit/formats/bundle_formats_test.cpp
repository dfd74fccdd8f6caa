#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../bundle_builder.h"
#include "../test_files.h"
#include "codec/codec.h"
#include "formats/bundle_binary.h"
#include "formats/bundle_text.h"
#include "formats/compressed_bundle.h"
#include "support/llvm_stringmap.h"
#include "support/md5.h"

using namespace ot;
using ot::test::assemble_binary;
using ot::test::golden;

TEST_CASE("binary bundle layout equals LLVM 19's bytes") {
  auto t1 = golden("tgt1"), t2 = golden("tgt2"), host = golden("host.i");
  std::vector<std::string> hip2 = {"hip-amdgcn-amd-amdhsa--gfx900", "hip-amdgcn-amd-amdhsa--gfx906"};
  CHECK(assemble_binary(hip2, {t1, t2}, 1) == golden("19-hip2.bc"));
  CHECK(assemble_binary(hip2, {t1, t2}, 16) == golden("19-hip2-align16.bc"));
  CHECK(assemble_binary({"host-x86_64-unknown-linux-gnu-", "openmp-nvptx64-nvidia-cuda--sm_70",
                         "hip-amdgcn-amd-amdhsa--gfx90a:xnack+"},
                        {host, t1, t2}, 1) == golden("19-mixed.bc"));
}

TEST_CASE("binary bundle reading, in file order, and LLVM's -list order") {
  auto data = golden("19-mixed.bc");
  auto entries = formats::read_binary_bundle(data, "19-mixed.bc");
  REQUIRE(entries.size() == 3);
  CHECK(entries[0].id == "host-x86_64-unknown-linux-gnu-");
  CHECK(entries[2].size == 25);
  std::vector<std::string> ids;
  for (auto& e : entries) ids.push_back(e.id);
  auto order = stringmap_order(ids);
  // LLVM 19's `-list` of this golden file (tests/data/reference/golden/README.txt).
  CHECK(ids[order[0]] == "hip-amdgcn-amd-amdhsa--gfx90a:xnack+");
  CHECK(ids[order[1]] == "openmp-nvptx64-nvidia-cuda--sm_70");
  CHECK(ids[order[2]] == "host-x86_64-unknown-linux-gnu-");
}

TEST_CASE("malformed binary bundles are errors with file and offset") {
  auto data = golden("19-hip2.bc");
  std::vector<std::byte> cut(data.begin(), data.begin() + 40);
  CHECK_THROWS_WITH_AS(formats::read_binary_bundle(cut, "t.bc"),
                       "t.bc: bundle entry count 2 does not fit in the file (0x28 bytes), at offset 0x18", Error);
  auto lying = data;
  store_le<std::uint64_t>(lying.data() + 40, 0x1000);  // entry 0 size
  CHECK_THROWS_WITH_AS(formats::read_binary_bundle(lying, "t.bc"),
                       "t.bc: bundle entry 0 ('hip-amdgcn-amd-amdhsa--gfx900') payload at 0x8a of 0x1000 bytes extends "
                       "past the end of the file (0xbc bytes), at offset 0x20",
                       Error);
  auto overflow = data;
  store_le<std::uint64_t>(overflow.data() + 32, ~0ull);
  CHECK_THROWS_AS(formats::read_binary_bundle(overflow, "t.bc"), Error);
  auto dup = data;
  // Entry 1 starts at 0x55 (32 + 24 + 29); its ID at 0x6d. ...gfx906 -> ...gfx900:
  REQUIRE(dup.size() > 0x6d + 28);
  dup[0x6d + 28] = std::byte{'0'};
  CHECK_THROWS_WITH_AS(formats::read_binary_bundle(dup, "t.bc"),
                       "t.bc: duplicate bundle entry id 'hip-amdgcn-amd-amdhsa--gfx900', at offset 0x55", Error);
}

TEST_CASE("text bundles: LLVM's markers and reading") {
  auto data = golden("19-text.i");
  auto entries = formats::read_text_bundle(data, "//", "19-text.i");
  REQUIRE(entries.size() == 3);
  CHECK(entries[0].id == "host-x86_64-unknown-linux-gnu-");
  CHECK(entries[1].id == "openmp-x86_64-pc-linux-gnu-");
  CHECK(entries[2].id == "hip-amdgcn-amd-amdhsa--gfx900");
  std::string_view text = as_chars(data);
  CHECK(text.substr(entries[0].offset, entries[0].size) == "int x;\n");
  CHECK(text.substr(entries[2].offset, entries[2].size) == "Content of device file 2\n");
  // Rebuild with the writer's markers: byte-identical to LLVM's file.
  std::string rebuilt;
  for (const auto& e : entries)
    rebuilt += formats::text_start_marker("//") + e.id + "\n" + std::string(text.substr(e.offset, e.size)) +
               formats::text_end_marker("//") + e.id + "\n";
  CHECK(rebuilt == text);
  std::string broken = formats::text_start_marker("#") + "host-x86_64--linux-\nabc";
  CHECK_THROWS_WITH_AS(formats::read_text_bundle(ot::test::bytes_of(broken), "#", "b.s"),
                       "b.s: text bundle entry 'host-x86_64--linux-' has no end marker, at offset 0x0", Error);
}

TEST_CASE("CCOB: header and zstd stream equal LLVM 19's bytes (levels 3 and 9)") {
  auto plain = golden("19-hip2.bc");
  for (auto [name, level] : {std::pair{"19-hip2-compressed.bc", 3}, std::pair{"19-hip2-compressed-l9.bc", 9}}) {
    CAPTURE(name);
    auto expected = golden(name);
    std::vector<std::byte> body;
    codec::Params params;
    params.level = level;
    codec::Compressor c(params, plain.size(), [&](Bytes b) { body.insert(body.end(), b.begin(), b.end()); });
    // Feed in two pieces: streaming must not change the bytes.
    c.write(Bytes(plain).first(50));
    c.write(Bytes(plain).subspan(50));
    c.finish();
    formats::CcobHeader h;
    h.version = 2;
    h.uncompressed_size = plain.size();
    Md5 md5;
    md5.update(plain);
    h.hash = md5.truncated();
    h.total_size = 24 + body.size();
    auto out = formats::write_ccob_header(h);
    out.insert(out.end(), body.begin(), body.end());
    CHECK(out == expected);

    auto parsed = formats::read_ccob_header(expected, name);
    CHECK(parsed.version == 2);
    CHECK(parsed.hash == 0x2bcafb899a29dc94ull);
    CHECK(codec::decompress(parsed.method, formats::ccob_payload(expected, parsed), parsed.uncompressed_size) == plain);
  }
}

TEST_CASE("CCOB: lying headers are refused before allocating") {
  auto data = golden("19-hip2-compressed.bc");
  auto big = data;
  store_le<std::uint32_t>(big.data() + 8, 0x10000);
  CHECK_THROWS_WITH_AS(formats::read_ccob_header(big, "c.bc"),
                       "c.bc: compressed bundle total size 0x10000 exceeds the file size 0x89, at offset 0x8", Error);
  auto version = data;
  store_le<std::uint16_t>(version.data() + 4, 7);
  CHECK_THROWS_WITH_AS(formats::read_ccob_header(version, "c.bc"), "c.bc: unknown compressed bundle version 7, at offset 0x4",
                       Error);
  auto h = formats::read_ccob_header(data, "c.bc");
  CHECK_THROWS_WITH_AS(codec::decompress(h.method, formats::ccob_payload(data, h), 1ull << 40),
                       "declared uncompressed size 0x10000000000 is more than 0x71 compressed bytes can hold", Error);
  CHECK_THROWS_WITH_AS(codec::decompress(h.method, formats::ccob_payload(data, h), 100),
                       "Destination buffer is too small", Error);
}

TEST_CASE("zlib streams round-trip and report LLVM's error names") {
  auto plain = golden("19-mixed.bc");
  codec::Params params;
  params.method = codec::Method::Zlib;
  params.level = 6;
  std::vector<std::byte> z;
  codec::Compressor c(params, plain.size(), [&](Bytes b) { z.insert(z.end(), b.begin(), b.end()); });
  c.write(plain);
  c.finish();
  CHECK(codec::decompress(codec::Method::Zlib, z, plain.size()) == plain);
  auto bad = z;
  bad[5] ^= std::byte{0xff};
  CHECK_THROWS_AS(codec::decompress(codec::Method::Zlib, bad, plain.size()), Error);
}

TEST_CASE("zlib decompression reports what LLVM's uncompress() reports") {
  auto plain = golden("19-mixed.bc");
  codec::Params params;
  params.method = codec::Method::Zlib;
  params.level = 6;
  auto z = codec::compress_all(params, plain);
  std::vector<std::byte> cut(z.begin(), z.end() - 10);  // data missing, not just the trailer
  CHECK_THROWS_WITH_AS(codec::decompress(codec::Method::Zlib, cut, plain.size()), "zlib error: Z_DATA_ERROR", Error);
  CHECK_THROWS_WITH_AS(codec::decompress(codec::Method::Zlib, z, plain.size() - 1), "zlib error: Z_BUF_ERROR", Error);
  auto empty = codec::compress_all(params, {});
  CHECK(codec::decompress(codec::Method::Zlib, empty, 0).empty());
}

TEST_CASE("one-shot zstd equals LLVM 19's CCOB payload") {
  auto plain = golden("19-hip2.bc");
  auto expected = golden("19-hip2-compressed.bc");
  codec::Params params;
  auto body = codec::compress_all(params, plain);
  CHECK(std::vector<std::byte>(expected.begin() + 24, expected.end()) == body);
}

TEST_CASE("streamed decompression gives the one-shot bytes and the same verdicts") {
  auto expected = golden("19-hip2-compressed.bc");
  auto h = formats::read_ccob_header(expected, "c.bc");
  auto payload = formats::ccob_payload(expected, h);
  std::vector<std::byte> got;
  std::uint64_t consumed = 0;
  codec::decompress_stream(
      h.method, payload, h.uncompressed_size, [&](Bytes b) { got.insert(got.end(), b.begin(), b.end()); },
      [&](std::uint64_t n) { consumed = n; });
  CHECK(got == golden("19-hip2.bc"));
  CHECK(consumed == payload.size());
  auto sink = [](Bytes) {};
  CHECK_THROWS_WITH_AS(codec::decompress_stream(h.method, payload, h.uncompressed_size - 1, sink),
                       "Destination buffer is too small", Error);
  CHECK_THROWS_WITH_AS(codec::decompress_stream(h.method, payload.first(payload.size() - 4), h.uncompressed_size, sink),
                       "Src size is incorrect", Error);
  codec::Params zp;
  zp.method = codec::Method::Zlib;
  auto plain = golden("19-mixed.bc");
  auto z = codec::compress_all(zp, plain);
  got.clear();
  codec::decompress_stream(codec::Method::Zlib, z, plain.size(), [&](Bytes b) { got.insert(got.end(), b.begin(), b.end()); });
  CHECK(got == plain);
  CHECK_THROWS_WITH_AS(codec::decompress_stream(codec::Method::Zlib, Bytes(z).first(z.size() - 10), plain.size(), sink),
                       "zlib error: Z_DATA_ERROR", Error);
}
