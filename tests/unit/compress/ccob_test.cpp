#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../bundle_builder.h"
#include "../test_files.h"
#include "compress/ccob.h"
#include "support/mapped_file.h"
#include "support/output_file.h"
#include "formats/bundle_binary.h"
#include "support/bytes.h"
#include "support/md5.h"

using namespace ot;
using ot::test::golden;

namespace {

// Decoded through a sink (decode_ccob) or into a file's mapping after a few
// bytes already written (decode_ccob_to): the same bytes, header and errors.
std::vector<std::byte> decode_all(Bytes ccob, compress::DecodedCcob* info = nullptr, std::uint64_t base = 0,
                                  bool to_file = false) {
  std::vector<std::byte> out;
  compress::DecodedCcob d;
  if (to_file) {
    OutputFile f = OutputFile::scratch("");
    f.write(std::string_view("abc"));
    d = compress::decode_ccob_to(f, ccob, "f.ccob", base, true);
    std::shared_ptr<InputFile> back = f.map("scratch");
    out.assign(back->bytes().begin() + 3, back->bytes().end());
  } else {
    d = compress::decode_ccob(ccob, "f.ccob", base, [&](Bytes b) { out.insert(out.end(), b.begin(), b.end()); });
  }
  if (info) *info = d;
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// Pseudo-random bytes (xorshift), compressible by about 2x: every other
// 64-byte run repeats the one before.
std::vector<std::byte> noise(std::size_t n, std::uint64_t seed) {
  std::vector<std::byte> out(n);
  std::uint64_t x = seed | 1;
  for (std::size_t i = 0; i < n; ++i) {
    if ((i / 64) % 2 == 1) {
      out[i] = out[i - 64];
      continue;
    }
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    out[i] = static_cast<std::byte>(x);
  }
  return out;
}

// A binary bundle of `payloads` (aligned to 4096, as clang's HIP bundles).
std::vector<std::byte> make_bundle(const std::vector<std::vector<std::byte>>& payloads) {
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < payloads.size(); ++i) ids.push_back("hipv4-amdgcn-amd-amdhsa--gfx90" + std::to_string(i));
  return test::assemble_binary(ids, payloads, 4096);
}

}  // namespace

TEST_CASE("make_ccob reproduces LLVM 19's -compress bytes (default and -compression-level=9)") {
  auto plain = golden("19-hip2.bc");
  compress::CcobOptions o;
  CHECK(compress::make_ccob(plain, o, "b") == golden("19-hip2-compressed.bc"));
  o.params.level = 9;
  CHECK(compress::make_ccob(plain, o, "b") == golden("19-hip2-compressed-l9.bc"));
  // version 3: the 32-byte header, the same compressed data
  o.params.level = 3;
  o.version = 3;
  auto v3 = compress::make_ccob(plain, o, "b");
  auto v2 = golden("19-hip2-compressed.bc");
  CHECK(v3.size() == v2.size() + 8);
  CHECK(std::equal(v3.begin() + 32, v3.end(), v2.begin() + 24));
  CHECK(load_le<std::uint64_t>(v3.data() + 8) == v3.size());
}

TEST_CASE("decode_ccob: LLVM's CCOB back to the bundle, hash recomputed, stream header read") {
  auto ccob = golden("19-hip2-compressed.bc");
  compress::DecodedCcob d;
  CHECK(decode_all(ccob, nullptr, 0, true) == golden("19-hip2.bc"));  // into a file, too
  CHECK(decode_all(ccob, &d) == golden("19-hip2.bc"));
  CHECK(d.header.version == 2);
  CHECK(d.compressed_size == 113);
  CHECK(d.header.uncompressed_size == 188);
  CHECK(d.recomputed_hash == 0x2bcafb899a29dc94u);
  CHECK(d.hash_matches());
  auto info = compress::stream_info(codec::Method::Zstd, formats::ccob_payload(ccob, d.header));
  REQUIRE(info);
  CHECK(info->content_size == 188);
  CHECK(info->window_log == 8);  // single-segment frame: the window is the content
}

TEST_CASE("decode_ccob: a stored hash that does not match is reported, with the field's offset") {
  auto ccob = golden("19-hip2-compressed.bc");
  ccob[16] ^= std::byte{1};
  compress::DecodedCcob d, to_file;
  decode_all(ccob, &to_file, 0x1000, true);
  CHECK(to_file.recomputed_hash == 0x2bcafb899a29dc94u);
  decode_all(ccob, &d, 0x1000);
  CHECK(!d.hash_matches());
  CHECK(std::string(compress::hash_mismatch_error(d, "f.ccob", 0x1000).what()) ==
        "f.ccob: stored hash 0x2bcafb899a29dc95 does not match the decompressed bundle's 0x2bcafb899a29dc94, "
        "at offset 0x1010");
  // not computed when not asked for: nothing to mismatch
  auto skipped = compress::decode_ccob(ccob, "f.ccob", 0, [](Bytes) {}, false);
  CHECK(!skipped.recomputed_hash);
  CHECK(skipped.hash_matches());
}

TEST_CASE("decode_ccob: lying headers are errors naming the file offset, nothing allocated for absurd sizes") {
  for (bool to_file : {false, true}) {
    CAPTURE(to_file);
    auto decode_all = [&](Bytes c, compress::DecodedCcob* info = nullptr, std::uint64_t base = 0) {
      return ::decode_all(c, info, base, to_file);
    };
    auto good = golden("19-hip2-compressed.bc");
    auto ccob = good;
    store_le<std::uint32_t>(ccob.data() + 12, 189);  // one byte more than the data holds
    CHECK(error_of([&] { decode_all(ccob, nullptr, 0x2000); }) ==
          "f.ccob: zstd data of 0x71 bytes does not decompress to 0xbd bytes: declared uncompressed size 0xbd but the "
          "data decompresses to 0xbc bytes, at offset 0x2018");
    store_le<std::uint32_t>(ccob.data() + 12, 0xffffffffu);  // 4 GiB from 113 bytes: refused before any allocation
    CHECK(error_of([&] { decode_all(ccob); }) ==
          "f.ccob: zstd data of 0x71 bytes does not decompress to 0xffffffff bytes: declared uncompressed size "
          "0xffffffff is more than 0x71 compressed bytes can hold, at offset 0x18");
    ccob = good;
    store_le<std::uint32_t>(ccob.data() + 8, 0x1000);  // total size past the end
    CHECK(error_of([&] { decode_all(ccob, nullptr, 0x3000); }) ==
          "f.ccob: compressed bundle total size 0x1000 exceeds the file size 0x89, at offset 0x3008");
    ccob = good;
    store_le<std::uint32_t>(ccob.data() + 8, 0x60);  // total size cuts the frame short
    CHECK(error_of([&] { decode_all(ccob); }) ==
          "f.ccob: zstd data of 0x48 bytes does not decompress to 0xbc bytes: Src size is incorrect, at offset 0x18");
    ccob = good;
    ccob[24] ^= std::byte{0x55};  // not a zstd frame
    CHECK(error_of([&] { decode_all(ccob); }) ==
          "f.ccob: zstd data of 0x71 bytes does not decompress to 0xbc bytes: Unknown frame descriptor, at offset 0x18");
    ccob = good;
    store_le<std::uint16_t>(ccob.data() + 4, 7);
    CHECK(error_of([&] { decode_all(ccob, nullptr, 0x10); }) == "f.ccob: unknown compressed bundle version 7, at offset 0x14");
  }
}

TEST_CASE("zlib CCOBs: written as LLVM's compress2 output, read back, window bits reported") {
  auto plain = golden("19-hip2.bc");
  compress::CcobOptions o;
  o.params.method = codec::Method::Zlib;
  o.params.level = 6;
  auto ccob = compress::make_ccob(plain, o, "b");
  CHECK(load_le<std::uint16_t>(ccob.data() + 6) == 0);
  compress::DecodedCcob d;
  CHECK(decode_all(ccob, &d) == plain);
  CHECK(d.hash_matches());
  auto info = compress::stream_info(codec::Method::Zlib, formats::ccob_payload(ccob, d.header));
  REQUIRE(info);
  CHECK(info->window_log == 15);
  CHECK(!info->content_size);
}

TEST_CASE("multi-threaded zstd: the same bytes for 1, 2, 3 and 8 threads, over several jobs") {
  // 3 entries of 7 MiB: more than two 8 MiB jobs, entries repeat across job borders
  auto e = noise(7u << 20, 42);
  auto bundle = make_bundle({e, e, noise(7u << 20, 43)});
  compress::CcobOptions o;
  std::vector<std::vector<std::byte>> outs;
  for (int threads : {1, 2, 3, 8}) {
    o.params.threads = threads;
    outs.push_back(compress::make_ccob(bundle, o, "b"));
  }
  CHECK(outs[0] == outs[1]);
  CHECK(outs[0] == outs[2]);
  CHECK(outs[0] == outs[3]);
  o.params.threads = 0;
  auto single = compress::make_ccob(bundle, o, "b");
  CHECK(single != outs[0]);  // not LLVM's single-threaded bytes (documented)
  // the repeated entry is found across jobs: about the size of two entries' halves
  CHECK(outs[0].size() < bundle.size() * 4 / 10);
  CHECK(decode_all(outs[0]) == bundle);
}

TEST_CASE("auto_window_log: covers the distance between entries, 0 when the library's window already does") {
  std::vector<std::byte> three(3u << 20);
  auto bundle = make_bundle({three, three});
  codec::Params p;
  // with long-distance matching zstd's window is 2^27 (shrunk to the input): it covers
  CHECK(compress::auto_window_log(bundle, p) == 0);
  // without, level 3 keeps a 2^21 window: 3 MiB + 3/8 MiB between entries needs 2^22
  p.long_distance = false;
  CHECK(compress::auto_window_log(bundle, p) == 22);
  // zlib has no window to choose
  p.method = codec::Method::Zlib;
  CHECK(compress::auto_window_log(bundle, p) == 0);
  // not a binary bundle: the whole size
  p.method = codec::Method::Zstd;
  std::vector<std::byte> text(5u << 20, std::byte{'x'});
  CHECK(compress::auto_window_log(text, p) == 23);
}

TEST_CASE("make_ccob: version 2 limits and unknown versions") {
  compress::CcobOptions o;
  o.version = 4;
  auto plain = golden("19-hip2.bc");
  CHECK(error_of([&] { compress::make_ccob(plain, o, "b"); }) == "b: cannot write compressed bundle version 4 (1, 2 or 3)");
}

namespace {

std::uint64_t md5_of(Bytes b) {
  Md5 md5;
  md5.update(b);
  return md5.truncated();
}

}  // namespace

TEST_CASE("make_ccob: the same bytes whether the hash runs beside the compressor or not, LLVM's one-call bytes") {
  auto bundle = make_bundle({noise((3u << 20) + 123, 1), noise(2u << 20, 2)});
  const std::uint64_t hash = md5_of(bundle);
  struct Case {
    const char* name;
    codec::Method method;
    int threads;
  };
  for (const Case& c : {Case{"zstd, LLVM's bytes", codec::Method::Zstd, 0},
                        Case{"zstd, 2 threads", codec::Method::Zstd, 2},
                        Case{"zlib", codec::Method::Zlib, 0}}) {
    if (c.threads > codec::max_threads()) continue;  // a libzstd without worker threads
    CAPTURE(c.name);
    compress::CcobOptions o;
    o.params.method = c.method;
    o.params.level = codec::default_level(c.method);
    o.params.threads = c.threads;
    const std::vector<std::byte> beside = compress::make_ccob(bundle, o, "b");
    o.hash_beside = false;
    CHECK(compress::make_ccob(bundle, o, "b") == beside);
    CHECK(load_le<std::uint64_t>(beside.data() + 16) == hash);
    if (c.threads == 0) {  // LLVM's bytes: one ZSTD_compress2 / compress2 call (zlib: deflate streamed)
      auto one_call = codec::compress_all(o.params, bundle);
      CHECK(std::equal(beside.begin() + 24, beside.end(), one_call.begin(), one_call.end()));
    }
  }
}

TEST_CASE("compress_ccob over many pieces of a mapping dropped behind it: the hash of every byte, beside or not") {
  // 70 MiB in a scratch file: 1 MiB of noise, each 64 KiB of every copy
  // stamped with its offset (fast to compress, yet no two MiB alike).
  constexpr std::size_t kMiB = 1u << 20, kSize = 70 * kMiB;
  std::vector<std::byte> piece = noise(kMiB, 5);
  OutputFile f = OutputFile::scratch("");
  for (std::size_t off = 0; off < kSize; off += kMiB) {
    for (std::size_t at = 0; at < kMiB; at += 64u << 10) store_le<std::uint64_t>(piece.data() + at, off + at);
    f.write(Bytes(piece));
  }
  std::shared_ptr<InputFile> in = f.map("big");
  Bytes plain = in->bytes();
  REQUIRE(plain.size() == kSize);
  const std::uint64_t hash = md5_of(plain);
  std::vector<std::vector<std::byte>> outs;
  for (bool beside : {true, false}) {
    CAPTURE(beside);
    compress::CcobOptions o;
    o.hash_beside = beside;
    std::vector<std::byte> data;
    std::uint64_t consumed = 0;
    int calls = 0;
    formats::CcobHeader h = compress::compress_ccob(
        plain, o, "big", [&](Bytes b) { data.insert(data.end(), b.begin(), b.end()); },
        [&](std::uint64_t n) {
          CHECK(n >= consumed);
          consumed = n;
          ++calls;
          in->release(0, kSize);  // all of it, the hash likely behind: read back from the file
        });
    CHECK(calls > 1);
    CHECK(h.hash == hash);
    CHECK(h.uncompressed_size == kSize);
    outs.push_back(formats::write_ccob_header(h));
    outs.back().insert(outs.back().end(), data.begin(), data.end());
  }
  CHECK(outs[0] == outs[1]);
  compress::DecodedCcob d;
  CHECK(decode_all(outs[0], &d).size() == kSize);
  CHECK(d.hash_matches());
}

namespace {

// IDs, offsets and sizes of `got`, as ccob_bundle_entries gives them, against
// the table of the uncompressed bundle `plain`.
bool same_table(const std::optional<std::vector<formats::BundleEntry>>& got, Bytes plain) {
  if (!got) return false;
  std::vector<formats::BundleEntry> want = formats::read_binary_bundle(plain, "plain");
  return std::ranges::equal(*got, want, [](const formats::BundleEntry& a, const formats::BundleEntry& b) {
    return a.id == b.id && a.offset == b.offset && a.size == b.size;
  });
}

}  // namespace

TEST_CASE("ccob_bundle_entries: the table from the first bytes of a CCOB, nullopt until they reach it") {
  const auto plain = make_bundle({noise(3 << 20, 1), noise(3 << 20, 2)});
  for (std::uint16_t version : {2, 3}) {
    compress::CcobOptions o;
    o.version = version;
    const auto ccob = compress::make_ccob(plain, o, "b");
    REQUIRE(ccob.size() > (2u << 20));
    CHECK(same_table(compress::ccob_bundle_entries(ccob, "b.ccob"), plain));
    // Not even the header, the header alone, a few bytes of the frame: read more.
    for (std::size_t n : {0, 3, 10, 24, 40})
      CHECK_FALSE(compress::ccob_bundle_entries(Bytes(ccob).first(n), "b.ccob"));
    // The first 256 KiB (the first zstd blocks) hold the table.
    CHECK(same_table(compress::ccob_bundle_entries(Bytes(ccob).first(256 << 10), "b.ccob"), plain));
    // So a CCOB whose second half is garbage gives its table all the same.
    auto damaged = ccob;
    std::fill(damaged.begin() + static_cast<std::ptrdiff_t>(damaged.size() / 2), damaged.end(), std::byte{0xa5});
    CHECK(same_table(compress::ccob_bundle_entries(damaged, "b.ccob"), plain));
    const std::string error = error_of([&] { decode_all(damaged); });  // what reads it all meets the garbage
    CHECK(error.starts_with("f.ccob: "));
    CHECK(error.find(", at offset 0x") != std::string::npos);
  }
}

TEST_CASE("ccob_bundle_entries: no CCOB, no binary bundle in it, undecodable data: errors naming the file") {
  CHECK(error_of([] { compress::ccob_bundle_entries(as_bytes(std::string_view("BUNDLE__")), "x.bin"); }) ==
        "x.bin: not a compressed offload bundle (no CCOB magic), at offset 0x0");
  const std::string text = "; __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-\n"
                           "; __CLANG_OFFLOAD_BUNDLE____END__ host-x86_64-unknown-linux-gnu-\n";
  const auto ccob = compress::make_ccob(as_bytes(std::string_view(text)), {}, "t");
  CHECK(error_of([&] { compress::ccob_bundle_entries(ccob, "t.ccob"); }) ==
        "t.ccob: the compressed bundle holds no binary bundle, at offset 0x18");
  auto bad = compress::make_ccob(make_bundle({noise(1 << 10, 3)}), {}, "b");
  std::fill(bad.begin() + 24, bad.end(), std::byte{0xff});  // no zstd frame
  const std::string error = error_of([&] { compress::ccob_bundle_entries(bad, "b.ccob"); });
  CHECK(error.starts_with("b.ccob: cannot decompress the compressed bundle: "));
  CHECK(error.ends_with(", at offset 0x18"));
}
