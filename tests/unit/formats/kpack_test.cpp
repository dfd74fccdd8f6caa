// formats/kpack against AMD's two test archives (tests/data/kpack, written by
// generate.py with Debian's msgpack and zstandard, byte-identical to the files
// ROCm/rocm-kpack commits: its --check verifies that), and hostile archives
// and markers. What the archives hold is AMD's generate_test_data.py's input,
// copied here as facts.
#include <doctest/doctest.h>

// msgpack-c++ is header-only; without Boost (meson.build says why).
#ifndef MSGPACK_NO_BOOST
#define MSGPACK_NO_BOOST
#endif
#include <msgpack.hpp>

#include <cstring>
#include <string>

#include "formats/kpack.h"
#include "support/error.h"
#include "../test_files.h"

namespace ot::formats {
namespace {

std::vector<std::byte> fixture(const std::string& name) {
  std::vector<std::byte> out = test::read_bytes(test::data_path("kpack/" + name));
  REQUIRE(!out.empty());
  return out;
}

std::vector<std::byte> repeat(std::string_view head, char c, std::size_t n, char c2 = 0, std::size_t n2 = 0) {
  std::string s(head);
  s += std::string(n, c);
  s += std::string(n2, c2);
  return test::bytes_of(s);
}

struct Want {
  std::string binary, arch;
  std::uint32_t ordinal;
  std::vector<std::byte> code;
};

// AMD's generate_test_data.py: the kernels in add_kernel order.
std::vector<Want> noop_kernels() {
  return {{"lib/libtest.so#0", "gfx900", 0, repeat("KERNEL1_GFX900_DATA", '\0', 100)},
          {"lib/libtest.so#0", "gfx906", 1, repeat("KERNEL2_GFX906_DATA", '\0', 200)},
          {"bin/testapp#0", "gfx900", 2, repeat("KERNEL3_APP_GFX900", '\xff', 150)}};
}
std::vector<Want> zstd_kernels() {
  return {{"lib/libhip.so#0", "gfx1100", 0, repeat("HIP_KERNEL_GFX1100_", 'A', 500, 'B', 500)},
          {"lib/libhip.so#0", "gfx1101", 1, repeat("HIP_KERNEL_GFX1101_", 'X', 300, 'Y', 300)},
          {"bin/hiptest#0", "gfx1100", 2, repeat("TEST_APP_KERNEL___", '\x42', 1000)}};
}

void check_archive(const std::string& name, const std::vector<Want>& want, KpackScheme scheme, const char* family,
                   std::vector<std::string> arches, std::uint64_t toc_offset) {
  const std::vector<std::byte> d = fixture(name);
  const KpackArchive a = read_kpack(d, name);
  CHECK(a.toc_offset == toc_offset);
  CHECK(a.group_name == "test");
  CHECK(a.gfx_arch_family == family);
  CHECK(a.gfx_arches == arches);
  CHECK(a.scheme == scheme);
  REQUIRE(a.kernels.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    const KpackKernel& k = a.kernels[i];
    CHECK(k.binary == want[i].binary);
    CHECK(k.arch == want[i].arch);
    CHECK(k.type == "hsaco");
    CHECK(k.ordinal == want[i].ordinal);
    CHECK(k.original_size == want[i].code.size());
    CHECK(kpack_code_object(a.scheme, k, Bytes(d).subspan(k.offset, k.stored_size), name) == want[i].code);
  }
  // Written again from what was read: the same bytes (frames copied, not recompressed).
  std::vector<Bytes> stored;
  for (const KpackKernel& k : a.kernels) stored.push_back(Bytes(d).subspan(k.offset, k.stored_size));
  std::vector<Bytes> by_ordinal(stored.size());
  for (std::size_t i = 0; i < a.kernels.size(); ++i) by_ordinal[a.kernels[i].ordinal] = stored[i];
  CHECK(write_kpack(a, by_ordinal) == d);
}

// The archive's header and TOC for `want` (AMD's inputs), without blobs.
KpackArchive archive_of(const std::vector<Want>& want, KpackScheme scheme, const char* family,
                        std::vector<std::string> arches) {
  KpackArchive a;
  a.group_name = "test";
  a.gfx_arch_family = family;
  a.gfx_arches = std::move(arches);
  a.scheme = scheme;
  for (const Want& w : want) {
    KpackKernel k;
    k.binary = w.binary;
    k.arch = w.arch;
    k.ordinal = w.ordinal;
    k.original_size = w.code.size();
    a.kernels.push_back(k);
  }
  return a;
}

// The archive written from scratch: AMD's inputs, compressed here where the scheme says.
std::vector<std::byte> write_fresh(const std::vector<Want>& want, KpackScheme scheme, const char* family,
                                   std::vector<std::string> arches) {
  const KpackArchive a = archive_of(want, scheme, family, std::move(arches));
  std::vector<std::vector<std::byte>> frames;
  for (const Want& w : want) frames.push_back(scheme == KpackScheme::None ? w.code : kpack_compress(w.code));
  std::vector<Bytes> stored(frames.begin(), frames.end());
  return write_kpack(a, stored);
}

// An archive of `area` (from offset 64) and a TOC packed by `toc`.
template <typename F>
std::vector<std::byte> with_toc(Bytes area, F toc) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> p(buf);
  toc(p);
  std::vector<std::byte> out(64 + area.size() + buf.size());
  std::memcpy(out.data(), "KPAK", 4);
  store_le<std::uint32_t>(out.data() + 4, 1);
  store_le<std::uint64_t>(out.data() + 8, 64 + area.size());
  if (!area.empty()) std::memcpy(out.data() + 64, area.data(), area.size());
  std::memcpy(out.data() + 64 + area.size(), buf.data(), buf.size());
  return out;
}

using Packer = msgpack::packer<msgpack::sbuffer>;

// {toc: {<binary>: {<arch>: {ordinal, original_size}}}, compression_scheme: none, blobs: [{offset, size}]}
std::vector<std::byte> one_blob(std::string binary, std::string arch, std::uint64_t ordinal, std::uint64_t original,
                                std::uint64_t offset, std::uint64_t size) {
  const std::vector<std::byte> area = test::bytes_of("CODE");
  return with_toc(area, [&](Packer& p) {
    p.pack_map(3);
    p.pack(std::string("toc"));
    p.pack_map(1);
    p.pack(binary);
    p.pack_map(1);
    p.pack(arch);
    p.pack_map(2);
    p.pack(std::string("ordinal"));
    p.pack(ordinal);
    p.pack(std::string("original_size"));
    p.pack(original);
    p.pack(std::string("compression_scheme"));
    p.pack(std::string("none"));
    p.pack(std::string("blobs"));
    p.pack_array(1);
    p.pack_map(2);
    p.pack(std::string("offset"));
    p.pack(offset);
    p.pack(std::string("size"));
    p.pack(size);
  });
}

std::string error_of(Bytes d) {
  try {
    read_kpack(d, "t.kpack");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("kpack: AMD's test_noop.kpack, read, decoded and written again byte for byte") {
  check_archive("test_noop.kpack", noop_kernels(), KpackScheme::None, "gfx900X", {"gfx900", "gfx906"}, 570);
  const KpackArchive a = read_kpack(fixture("test_noop.kpack"), "n");
  CHECK(a.kernels[0].offset == 64);
  CHECK(a.kernels[0].stored_size == 119);
  CHECK(a.kernels[2].offset == 64 + 119 + 219);
  CHECK(a.find("bin/testapp#0", "gfx900") == &a.kernels[2]);
  CHECK(a.find("bin/testapp#0", "gfx906") == nullptr);
}

TEST_CASE("kpack: AMD's test_zstd.kpack, read, decoded and written again byte for byte") {
  check_archive("test_zstd.kpack", zstd_kernels(), KpackScheme::ZstdPerKernel, "gfx110X", {"gfx1100", "gfx1101"}, 198);
  const KpackArchive a = read_kpack(fixture("test_zstd.kpack"), "z");
  CHECK(a.zstd_offset == 64);
  CHECK(a.zstd_size == 198 - 64);
  CHECK(a.kernels[0].offset == 64 + 4 + 4);  // after the count and the frame's size
}

TEST_CASE("kpack: written from AMD's inputs, the archives are AMD's byte for byte") {
  CHECK(write_fresh(noop_kernels(), KpackScheme::None, "gfx900X", {"gfx900", "gfx906"}) == fixture("test_noop.kpack"));
  CHECK(write_fresh(zstd_kernels(), KpackScheme::ZstdPerKernel, "gfx110X", {"gfx1100", "gfx1101"}) ==
        fixture("test_zstd.kpack"));
}

// The same archive written streaming: each blob written by the caller (the
// frames by the streaming kpack_compress), the header's TOC offset and the
// frame sizes patched in afterwards, as split writes it.
std::vector<std::byte> write_streamed(const std::vector<Want>& want, KpackScheme scheme, const char* family,
                                      std::vector<std::string> arches) {
  const KpackArchive a = archive_of(want, scheme, family, std::move(arches));
  std::vector<const Want*> by_ordinal(want.size());
  for (const Want& w : want) by_ordinal.at(w.ordinal) = &w;
  std::vector<std::byte> out;
  auto put = [&](Bytes b) { out.insert(out.end(), b.begin(), b.end()); };
  write_kpack(a, [&](std::size_t i) -> std::uint64_t {
    const std::size_t before = out.size();
    if (scheme == KpackScheme::None)
      put(by_ordinal[i]->code);
    else
      kpack_compress(by_ordinal[i]->code, put, [](std::uint64_t) {});
    return out.size() - before;
  }, [&](Bytes b, bool) { put(b); }, [&](std::uint64_t at, Bytes b) {
    REQUIRE(at + b.size() <= out.size());
    std::memcpy(out.data() + at, b.data(), b.size());
  });
  return out;
}

TEST_CASE("kpack: written streaming from AMD's inputs, the archives are AMD's byte for byte") {
  CHECK(write_streamed(noop_kernels(), KpackScheme::None, "gfx900X", {"gfx900", "gfx906"}) == fixture("test_noop.kpack"));
  CHECK(write_streamed(zstd_kernels(), KpackScheme::ZstdPerKernel, "gfx110X", {"gfx1100", "gfx1101"}) ==
        fixture("test_zstd.kpack"));
}

TEST_CASE("kpack: a frame compressed streaming from its bytes in place is ZSTD_compress's, past the window") {
  // 6 MiB (level 3's window is 2 MiB): runs of bytes from a small generator,
  // repeating at distances inside and beyond the window.
  std::vector<std::byte> code(6u << 20);
  std::uint32_t x = 1;
  for (std::size_t i = 0; i < code.size();) {
    x = x * 1664525u + 1013904223u;
    const std::size_t run = 1 + (x >> 24) % 64;
    const std::size_t back = (x >> 8) % 3 == 0 && i > (3u << 20) ? (3u << 20) : 0;
    for (std::size_t k = 0; k < run && i < code.size(); ++k, ++i)
      code[i] = back ? code[i - back] : static_cast<std::byte>((x >> 16) & 0x1f);
  }
  std::vector<std::byte> streamed;
  std::uint64_t consumed = 0;
  kpack_compress(code, [&](Bytes b) { streamed.insert(streamed.end(), b.begin(), b.end()); },
                 [&](std::uint64_t n) { consumed = n; });
  CHECK(streamed == kpack_compress(code));
  CHECK(consumed > 0);
  CHECK(consumed < code.size());
}

TEST_CASE("kpack: headers that lie") {
  std::vector<std::byte> d = fixture("test_noop.kpack");
  CHECK(error_of(Bytes(d).first(10)) ==
        "t.kpack: the kpack header (16 bytes) extends past the end of the file (0xa bytes), at offset 0x0");
  std::vector<std::byte> v = d;
  v[4] = std::byte{2};
  CHECK(error_of(v) == "t.kpack: unsupported kpack version 2 (1 is known), at offset 0x4");
  v = d;
  store_le<std::uint64_t>(v.data() + 8, d.size());
  CHECK(error_of(v) ==
        "t.kpack: the TOC offset 0x387 lies outside the file (0x387 bytes past the 16-byte header), at offset 0x8");
  v = d;
  store_le<std::uint64_t>(v.data() + 8, ~0ull);
  CHECK(error_of(v).starts_with("t.kpack: the TOC offset 0xffffffffffffffff lies outside the file"));
  // The TOC cut short: msgpack runs out of bytes.
  CHECK(error_of(Bytes(d).first(d.size() - 5)) ==
        "t.kpack: the TOC (MessagePack, 0x148 bytes) is truncated, at offset 0x23a");
  // A TOC that is a string, not a map.
  v = with_toc({}, [](Packer& p) { p.pack(std::string("toc")); });
  CHECK(error_of(v) == "t.kpack: the TOC is a string, not a map, at offset 0x40");
  // A map declaring 2^32-1 entries in 5 bytes: refused by the limits, nothing reserved.
  const std::byte huge[] = {std::byte{0xdf}, std::byte{0xff}, std::byte{0xff}, std::byte{0xff}, std::byte{0xff}};
  v = with_toc(huge, [](Packer& p) { p.pack_nil(); });
  store_le<std::uint64_t>(v.data() + 8, 64);
  CHECK(error_of(v) ==
        "t.kpack: the TOC (MessagePack) declares more elements or bytes than its 0x6 bytes hold, at offset 0x40");
  // Arrays nested 1000 deep.
  v = with_toc({}, [](Packer& p) {
    for (int i = 0; i < 1000; ++i) p.pack_array(1);
    p.pack_nil();
  });
  CHECK(error_of(v) == "t.kpack: the TOC (MessagePack) nests more than 16 deep, at offset 0x40");
}

TEST_CASE("kpack: entries that lie") {
  CHECK(error_of(one_blob("lib/a.so#0", "gfx900", 0, 4, 64, 4)) == "no error");
  CHECK(error_of(one_blob("lib/a.so#0", "gfx900", 1, 4, 64, 4)) ==
        "t.kpack: toc['lib/a.so#0']['gfx900'] has ordinal 1, but the archive stores 1 blobs, at offset 0x44");
  CHECK(error_of(one_blob("lib/a.so#0", "gfx900", 0, 4, 64, 0x1000)) ==
        "t.kpack: blob 0 (0x1000 bytes at 0x40) lies outside the file (0xa6 bytes past the header), at offset 0x40");
  CHECK(error_of(one_blob("lib/a.so#0", "gfx900", 0, 4, ~0ull, 4)).starts_with(
      "t.kpack: blob 0 (0x4 bytes at 0xffffffffffffffff) lies outside the file"));
  CHECK(error_of(one_blob("lib/a.so#0", "gfx900", 0, 0x100000, 64, 4)) ==
        "t.kpack: toc['lib/a.so#0']['gfx900'] declares an original size of 0x100000 bytes, its blob holds 0x4, at "
        "offset 0x40");
  CHECK(error_of(one_blob("../../etc/passwd#0", "gfx900", 0, 4, 64, 4)) ==
        "t.kpack: the binary key '../../etc/passwd#0' has a '..' path component, at offset 0x44");
  CHECK(error_of(one_blob("lib/../../x#0", "gfx900", 0, 4, 64, 4)) ==
        "t.kpack: the binary key 'lib/../../x#0' has a '..' path component, at offset 0x44");
  CHECK(error_of(one_blob("/usr/lib/x.so#0", "gfx900", 0, 4, 64, 4)) ==
        "t.kpack: the binary key '/usr/lib/x.so#0' is an absolute path, at offset 0x44");
  CHECK(error_of(one_blob("lib/x.so#0", "../gfx900", 0, 4, 64, 4)) ==
        "t.kpack: the binary key 'lib/x.so#0' has the architecture key '../gfx900', which is not a target ID, at "
        "offset 0x44");
}

TEST_CASE("kpack: a zstd frame whose original_size lies (a bomb) is refused before decoding") {
  std::vector<Want> w = zstd_kernels();
  KpackArchive a;
  a.scheme = KpackScheme::ZstdPerKernel;
  KpackKernel k;
  k.binary = "lib/x.so#0";
  k.arch = "gfx1100";
  k.original_size = 1ull << 40;  // the frame says 1019
  a.kernels.push_back(k);
  const std::vector<std::byte> frame = kpack_compress(w[0].code);
  const std::vector<Bytes> stored{frame};
  CHECK(error_of(write_kpack(a, stored)) ==
        "t.kpack: 'lib/x.so#0' for gfx1100 declares an original size of 0x10000000000 bytes, its zstd frame 0x3fb (a "
        "decompression bomb?), at offset 0x48");
  // A count of frames beyond the loader's bound, and a frame running past the area.
  std::vector<std::byte> d = fixture("test_zstd.kpack");
  std::vector<std::byte> v = d;
  store_le<std::uint32_t>(v.data() + 64, 1u << 21);
  CHECK(error_of(v) == "t.kpack: the zstd area declares 2097152 kernels (more than the loader's 1048576), at offset 0x40");
  v = d;
  store_le<std::uint32_t>(v.data() + 68, 0x10000);
  CHECK(error_of(v) ==
        "t.kpack: zstd frame 0 (0x10000 bytes) extends past the zstd area (ends at 0xc6), at offset 0x48");
}

TEST_CASE("kpack marker: AMD's example, 89 bytes, read back") {
  KpackRef r{{"../.kpack/rand_lib_@GFXARCH@.kpack"}, "lib/librocrand.so.1"};
  const std::vector<std::byte> m = write_kpack_ref(r);
  REQUIRE(m.size() == 89);
  CHECK(m[0] == std::byte{0x82});
  CHECK(m[1] == std::byte{0xb2});
  CHECK(m[20] == std::byte{0x91});
  CHECK(m[21] == std::byte{0xd9});  // str8: 34 bytes
  CHECK(m[22] == std::byte{0x22});
  std::vector<std::byte> with_padding = m;
  with_padding.resize(200);  // the loader stops at the end of the object
  const KpackRef back = read_kpack_ref(with_padding, "lib.so", 0x3000);
  CHECK(back.kernel_name == r.kernel_name);
  CHECK(back.search_paths == r.search_paths);
  CHECK(expand_gfxarch(back.search_paths[0], "gfx1100") == "../.kpack/rand_lib_gfx1100.kpack");
  CHECK(expand_gfxarch("a_@GFXARCH@/b_@GFXARCH@", "gfx90a") == "a_gfx90a/b_@GFXARCH@");  // the first only
}

TEST_CASE("kpack marker: markers that lie") {
  auto err = [](Bytes b) {
    try {
      read_kpack_ref(b, "lib.so", 0x3000);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::vector<std::byte> m = write_kpack_ref({{"x_@GFXARCH@.kpack"}, "lib/x.so"});
  CHECK(err(Bytes(m).first(m.size() - 1)) == "lib.so: the kpack marker (MessagePack, 0x3b bytes) is truncated, at offset 0x3000");
  CHECK(err(write_kpack_ref({{}, "lib/x.so"})) == "lib.so: the kpack marker names no search path, at offset 0x3000");
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_array(2);
  p.pack(1);
  p.pack(2);
  const auto* b = reinterpret_cast<const std::byte*>(buf.data());
  CHECK(err(Bytes(b, buf.size())) == "lib.so: the kpack marker is an array, not a map, at offset 0x3000");
}

}  // namespace ot::formats
