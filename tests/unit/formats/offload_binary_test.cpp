#include "formats/offload_binary.h"

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "support/mapped_file.h"

using namespace ot::formats;
using ot::Bytes;

namespace {

const std::string kGolden = std::string(OT_TEST_DATA) + "/reference/golden/";

std::vector<std::byte> file_bytes(const std::string& path) {
  auto f = ot::InputFile::open(path);
  return {f->bytes().begin(), f->bytes().end()};
}


std::string image_of(const std::vector<std::byte>& data, const OffloadEntry& e) {
  return std::string(ot::as_chars(Bytes(data).subspan(e.image_offset, e.image_size)));
}

void put64(std::vector<std::byte>& b, std::size_t off, std::uint64_t v) { ot::store_le<std::uint64_t>(b.data() + off, v); }
void put32(std::vector<std::byte>& b, std::size_t off, std::uint32_t v) { ot::store_le<std::uint32_t>(b.data() + off, v); }

// A small valid v1 binary made by LLVM 19 (llvm19-packager-cli.txt, y.bin):
// clang-offload-packager -o y.bin --image=file=../a.o,triple=x,foo,bar=  with a.o = "IMAGE-A"
std::vector<std::byte> y_bin() {
  OffloadImageDesc d;
  d.image_kind = 1;
  d.strings = {{"bar", ""}, {"triple", "x"}, {"foo", ""}};
  return write_offload_binary_v1(d, ot::as_bytes("IMAGE-A"));
}

const unsigned char kYBin[] = {
    0x10, 0xff, 0x10, 0xad, 0x01, 0x00, 0x00, 0x00, 0x98, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x48, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x90,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7b, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x78, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x83, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x79, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x78, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x78, 0x00, 0x62, 0x61, 0x72, 0x00, 0x66, 0x6f, 0x6f, 0x00, 0x74, 0x72,
    0x69, 0x70, 0x6c, 0x65, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x49, 0x4d, 0x41, 0x47, 0x45, 0x2d, 0x41, 0x00};

}  // namespace

TEST_CASE("enumerations use LLVM 19's names and numbers") {
  CHECK(image_kind_from_extension("o") == ImageKind::Object);
  CHECK(image_kind_from_extension("bc") == ImageKind::Bitcode);
  CHECK(image_kind_from_extension("cubin") == ImageKind::Cubin);
  CHECK(image_kind_from_extension("fatbin") == ImageKind::Fatbinary);
  CHECK(image_kind_from_extension("s") == ImageKind::Ptx);
  CHECK(image_kind_from_extension("O") == ImageKind::None);
  CHECK(image_kind_from_extension("") == ImageKind::None);
  CHECK(image_kind_extension(5) == "s");
  CHECK(image_kind_extension(0) == "");
  CHECK(image_kind_extension(77) == "");
  CHECK(image_kind_description(2) == "llvm ir");
  CHECK(image_kind_description(9) == "<none>");
  CHECK(is_llvm_bitcode(ot::as_bytes("BC\xC0\xDE rest")));
  CHECK(is_llvm_bitcode(ot::as_bytes("\xDE\xC0\x17\x0B")));
  CHECK_FALSE(is_llvm_bitcode(ot::as_bytes("BC\xC0")));
}

TEST_CASE("v1 writer reproduces LLVM 19's bytes") {
  SUBCASE("y.bin: empty values, a key without '='") {
    auto mine = y_bin();
    CHECK(mine == std::vector<std::byte>(reinterpret_cast<const std::byte*>(kYBin),
                                         reinterpret_cast<const std::byte*>(kYBin) + sizeof kYBin));
  }
  SUBCASE("golden 19-packager-1.bin") {
    OffloadImageDesc d;
    d.image_kind = 0;  // "tgt1" has no extension
    d.offload_kind = 1;
    d.strings = {{"arch", "gfx908"}, {"triple", "amdgcn-amd-amdhsa"}};
    CHECK(write_offload_binary_v1(d, ot::as_bytes("Content of device file 1\n")) ==
          file_bytes(kGolden + "19-packager-1.bin"));
  }
  SUBCASE("golden 19-packager-3.bin: three binaries concatenated") {
    OffloadImageDesc a, b, c;
    a.offload_kind = 1;
    a.strings = {{"arch", "gfx908"}, {"triple", "amdgcn-amd-amdhsa"}};
    b.offload_kind = 2;
    b.strings = {{"arch", "sm_70"}, {"triple", "nvptx64-nvidia-cuda"}, {"foo", "bar,baz"}};
    c.offload_kind = 3;
    c.strings = {{"triple", "x86_64-unknown-linux-gnu"}};
    auto out = write_offload_binary_v1(a, ot::as_bytes("Content of device file 1\n"));
    auto mb = write_offload_binary_v1(b, ot::as_bytes("Content of device file 2\n"));
    auto mc = write_offload_binary_v1(c, ot::as_bytes("int x;\n"));
    out.insert(out.end(), mb.begin(), mb.end());
    out.insert(out.end(), mc.begin(), mc.end());
    CHECK(out == file_bytes(kGolden + "19-packager-3.bin"));
  }
  SUBCASE("frame: head, streamed image, tail padding") {
    OffloadImageDesc d;
    d.strings = {{"triple", "t"}};
    d.image_size = 13;
    auto f = frame_offload_binary_v1(d);
    CHECK(f.head.size() == 0x68);
    CHECK(f.tail_padding == 3);
    CHECK(f.total_size() == 0x78);
  }
}

TEST_CASE("reader: LLVM 19 golden files") {
  auto data = file_bytes(kGolden + "19-packager-3.bin");
  auto bins = read_offload_binaries(data, "p3.bin");
  REQUIRE(bins.size() == 3);
  CHECK(bins[0].offset == 0);
  CHECK(bins[1].offset == 0xb0);
  CHECK(bins[2].offset == 0x180);
  CHECK(bins[2].size == 0x88);
  REQUIRE(bins[1].entries.size() == 1);
  const OffloadEntry& e = bins[1].entries[0];
  CHECK(e.image_kind == 0);
  CHECK(e.offload_kind == 2);
  CHECK(e.triple() == "nvptx64-nvidia-cuda");
  CHECK(e.arch() == "sm_70");
  CHECK(e.get("foo") == "bar,baz");
  CHECK(e.get("missing") == "");
  CHECK(e.strings == std::vector<OffloadString>{{"arch", "sm_70"}, {"triple", "nvptx64-nvidia-cuda"}, {"foo", "bar,baz"}});
  CHECK(e.image_offset == 0xb0 + 0xb0);
  CHECK(image_of(data, e) == "Content of device file 2\n");
  CHECK(image_of(data, bins[2].entries[0]) == "int x;\n");
  CHECK(bins[2].entries[0].arch() == "");
}

TEST_CASE("reader: version 2 with two entries and length-delimited values") {
  // header(32) | 2 entries (80) | 3 string entries (72) | strtab | images back to back
  std::vector<std::byte> b(0x140);
  const char magic[] = "\x10\xff\x10\xad";
  std::memcpy(b.data(), magic, 4);
  put32(b, 4, 2);
  put64(b, 8, b.size());
  put64(b, 16, 32);
  put64(b, 24, 2);
  const std::size_t strings = 32 + 80, strtab = strings + 72;  // 0xb8
  const char table[] = "\0triple\0arch\0gfx90a\0amdgcn-amd-amdhsa\0v\0al\0";
  std::memcpy(b.data() + strtab, table, sizeof table);
  const std::size_t img = 0x120;
  std::memcpy(b.data() + img, "AAAABBBBBB", 10);
  auto entry = [&](std::size_t at, std::uint16_t ik, std::uint16_t ok, std::uint64_t so, std::uint64_t n,
                   std::uint64_t io, std::uint64_t is) {
    ot::store_le<std::uint16_t>(b.data() + at, ik);
    ot::store_le<std::uint16_t>(b.data() + at + 2, ok);
    put64(b, at + 8, so);
    put64(b, at + 16, n);
    put64(b, at + 24, io);
    put64(b, at + 32, is);
  };
  entry(32, 1, 4, strings, 2, img, 4);
  entry(72, 2, 1, strings + 48, 1, img + 4, 6);
  auto str = [&](std::size_t at, std::uint64_t k, std::uint64_t v, std::uint64_t n) {
    put64(b, at, strtab + k);
    put64(b, at + 8, strtab + v);
    put64(b, at + 16, n);
  };
  str(strings, 1, 20, 17);      // triple = amdgcn-amd-amdhsa
  str(strings + 24, 8, 13, 6);  // arch = gfx90a
  str(strings + 48, 1, 38, 4);  // triple = "v\0al" (values may hold NULs in v2)
  auto bins = read_offload_binaries(b, "v2.bin");
  REQUIRE(bins.size() == 1);
  CHECK(bins[0].version == 2);
  REQUIRE(bins[0].entries.size() == 2);
  CHECK(bins[0].entries[0].offload_kind == 4);
  CHECK(bins[0].entries[0].triple() == "amdgcn-amd-amdhsa");
  CHECK(bins[0].entries[0].arch() == "gfx90a");
  CHECK(image_of(b, bins[0].entries[0]) == "AAAA");
  CHECK(bins[0].entries[1].triple() == std::string_view("v\0al", 4));
  CHECK(image_of(b, bins[0].entries[1]) == "BBBBBB");
  CHECK(llvm19_verdict(b) == Llvm19Verdict::Accepted);

  put64(b, 24, 0x0400000000000001ULL);  // entry count whose byte size overflows
  CHECK_THROWS_WITH_AS(read_offload_binaries(b, "v2.bin"),
                       "v2.bin: 0x400000000000001 entries at 0x20 extend past the end of the binary (0x140 bytes), "
                       "at offset 0x10",
                       ot::Error);
  put64(b, 24, 2);
  put64(b, strings + 48 + 16, 0x100);  // value length past the end
  CHECK_THROWS_WITH_AS(read_offload_binaries(b, "v2.bin"),
                       "v2.bin: entry 1: string 0: value (0x100 bytes at 0xde) extends past the end of the binary "
                       "(0x140 bytes), at offset 0xa8",
                       ot::Error);
}

TEST_CASE("reader: binaries follow each other by their size, with a base offset") {
  auto one = y_bin();
  std::vector<std::byte> two = one;
  two.insert(two.end(), one.begin(), one.end());
  auto bins = read_offload_binaries(two, "s.o", 0x1000);
  REQUIRE(bins.size() == 2);
  CHECK(bins[1].offset == 0x98);
  CHECK(bins[1].entries[0].image_offset == 0x98 + 0x90);
  REQUIRE(two.size() > 8);
  const std::vector<std::byte> cut(two.begin(), two.end() - 8);  // (resize() trips a GCC 12 -O2 false warning)
  CHECK_THROWS_WITH_AS(read_offload_binaries(cut, "s.o", 0x1000),
                       "s.o: offload binary size 0x98 extends past the end of the data (0x90 bytes left), at offset "
                       "0x10a0",
                       ot::Error);
}

TEST_CASE("reader: every bad field is reported with file and offset") {
  auto b = y_bin();
  auto expect = [&](const std::vector<std::byte>& data, const std::string& message) {
    CHECK_THROWS_WITH_AS(read_offload_binaries(data, "y.bin"), message.c_str(), ot::Error);
  };
  SUBCASE("truncated header") {
    expect(std::vector<std::byte>(b.begin(), b.begin() + 20),
           "y.bin: truncated offload binary header: 0x14 bytes left, the header needs 0x20, at offset 0x0");
  }
  SUBCASE("bad magic") {
    b[3] = std::byte{0xAE};
    expect(b, "y.bin: bad offload binary magic (expected 10 ff 10 ad), at offset 0x0");
  }
  SUBCASE("unknown version") {
    put32(b, 4, 3);
    expect(b, "y.bin: unsupported offload binary version 3 (1 and 2 are supported), at offset 0x4");
    CHECK(llvm19_verdict(b) == Llvm19Verdict::ParseFailed);
  }
  SUBCASE("size smaller than a header") {
    put64(b, 8, 8);
    expect(b, "y.bin: offload binary size 0x8 is smaller than its header (0x20 bytes), at offset 0x8");
    CHECK(llvm19_verdict(b) == Llvm19Verdict::UnexpectedEof);
  }
  SUBCASE("size overflowing") {
    put64(b, 8, ~0ULL);
    expect(b, "y.bin: offload binary size 0xffffffffffffffff extends past the end of the data (0x98 bytes left), at "
              "offset 0x8");
  }
  SUBCASE("entry past the end") {
    put64(b, 16, 0x90);
    expect(b, "y.bin: 0x1 entries at 0x90 extend past the end of the binary (0x98 bytes), at offset 0x10");
    CHECK(llvm19_verdict(b) == Llvm19Verdict::UnexpectedEof);
  }
  SUBCASE("string entries past the end") {
    put64(b, 48, 0x1000000000000000ULL);
    expect(b, "y.bin: entry 0: 0x1000000000000000 string entries at 0x48 extend past the end of the binary (0x98 "
              "bytes), at offset 0x28");
    CHECK(llvm19_verdict(b) == Llvm19Verdict::Accepted);  // LLVM 19 would read wild memory here
  }
  SUBCASE("key offset past the end") {
    put64(b, 0x58, 0x98);
    expect(b, "y.bin: entry 0: string 1: key offset 0x98 is past the end of the binary (0x98 bytes), at offset 0x58");
  }
  SUBCASE("value without a terminating NUL") {
    b[0x8f] = std::byte{'x'};  // the padding after the string table
    put64(b, 0x60, 0x8f);
    for (std::size_t i = 0x90; i < 0x98; ++i) b[i] = std::byte{'y'};
    expect(b, "y.bin: entry 0: string 1: value at 0x8f has no terminating NUL before the end of the binary (0x98 "
              "bytes), at offset 0x60");
  }
  SUBCASE("image past the end") {
    put64(b, 64, 9);
    expect(b, "y.bin: entry 0: image (0x9 bytes at 0x90) extends past the end of the binary (0x98 bytes), at offset "
              "0x38");
  }
  SUBCASE("image overlapping the header") {
    put64(b, 56, 8);
    expect(b, "y.bin: entry 0: image at 0x8 overlaps the header, at offset 0x38");
  }
  SUBCASE("image offset past the end: LLVM 19 says unexpected EOF") {
    put64(b, 56, 0x1000);
    CHECK(llvm19_verdict(b) == Llvm19Verdict::UnexpectedEof);
    CHECK(llvm19_verdict_text(Llvm19Verdict::UnexpectedEof) == "The end of the file was unexpectedly encountered");
  }
  SUBCASE("LLVM 19 needs header and entry") {
    CHECK(llvm19_verdict(Bytes(b).first(71)) == Llvm19Verdict::ParseFailed);
    CHECK(llvm19_verdict_text(Llvm19Verdict::ParseFailed) == "Invalid data was encountered while parsing the file");
  }
}

TEST_CASE("LLVM 23's verdict (as llvm-offload-binary 23.1.4 answers, docs/llvm23.md)") {
  using ot::target::LlvmRelease;
  auto b = y_bin();  // version 1, 0x98 bytes, its entry at 0x20
  CHECK(llvm23_verdict(b) == Llvm19Verdict::Accepted);
  SUBCASE("a version 1's field at 0x18 is not read") {
    put64(b, 24, 0x1000);
    CHECK(llvm23_verdict(b) == Llvm19Verdict::Accepted);
    CHECK(llvm19_verdict(b) == Llvm19Verdict::UnexpectedEof);
    CHECK(llvm_verdict(b, LlvmRelease::Llvm23) == Llvm19Verdict::Accepted);
    CHECK(llvm_verdict(b, LlvmRelease::Llvm22) == Llvm19Verdict::UnexpectedEof);
  }
  SUBCASE("versions 0 and 3") {
    put32(b, 4, 0);
    CHECK(llvm23_verdict(b) == Llvm19Verdict::ParseFailed);
    put32(b, 4, 3);
    CHECK(llvm23_verdict(b) == Llvm19Verdict::ParseFailed);
  }
  SUBCASE("string records count 24 bytes, version 1 too") {
    put64(b, 0x28, 0x98 - 40);
    put64(b, 0x30, 2);  // 32 bytes fit, 48 do not
    CHECK(llvm23_verdict(b) == Llvm19Verdict::UnexpectedEof);
    CHECK(llvm19_verdict(b) == Llvm19Verdict::Accepted);
  }
  SUBCASE("version 2: entries past the size, whatever the count") {
    put32(b, 4, 2);
    put64(b, 24, 1000);
    CHECK(llvm23_verdict(b) == Llvm19Verdict::UnexpectedEof);
    put64(b, 24, (1ULL << 61) + 1);  // 40 times that wraps to 40 in LLVM
    CHECK(llvm23_verdict(b) == Llvm19Verdict::UnexpectedEof);
    put64(b, 24, 0);
    CHECK(llvm23_verdict(b) == Llvm19Verdict::Accepted);
  }
  SUBCASE("image offset past the size") {
    put64(b, 0x38, 0x99);
    CHECK(llvm23_verdict(b) == Llvm19Verdict::UnexpectedEof);
  }
  SUBCASE("under 72 bytes") {
    CHECK(llvm23_verdict(Bytes(b).first(71)) == Llvm19Verdict::ParseFailed);
  }
}

TEST_CASE("offload kind numbers: hip and sycl by release, names for any release") {
  using ot::target::LlvmRelease;
  // The numbers each release's getOffloadKind gives (reference notes 2.1:
  // only hip and sycl differ).
  for (LlvmRelease r : {LlvmRelease::Llvm19, LlvmRelease::Llvm22}) {
    CAPTURE(static_cast<int>(r));
    CHECK(offload_kind_number("openmp", r) == 1);
    CHECK(offload_kind_number("cuda", r) == 2);
    CHECK(offload_kind_number("HIP", r) == 0);
    CHECK(offload_kind_number("openacc", r) == 0);
    CHECK(offload_kind_number("none", r) == 0);
    CHECK(offload_kind_number("", r) == 0);
  }
  CHECK(offload_kind_number("hip", LlvmRelease::Llvm19) == 3);
  CHECK(offload_kind_number("hip", LlvmRelease::Llvm22) == 4);
  CHECK(offload_kind_number("sycl", LlvmRelease::Llvm19) == 0);
  CHECK(offload_kind_number("sycl", LlvmRelease::Llvm22) == 8);

  // Reading does not know the writer's release: every release's number is named.
  CHECK(offload_kind_name(0) == "none");
  CHECK(offload_kind_name(1) == "openmp");
  CHECK(offload_kind_name(2) == "cuda");
  CHECK(offload_kind_name(3) == "hip");
  CHECK(offload_kind_name(4) == "hip");
  CHECK(offload_kind_name(8) == "sycl");
  CHECK(offload_kind_name(5) == "none");
  CHECK(offload_kind_name(0xffff) == "none");

  // The kind field (offset 0x22) of what each release writes for kind=hip.
  OffloadImageDesc d;
  d.strings = {{"triple", "amdgcn-amd-amdhsa"}};
  d.offload_kind = offload_kind_number("hip", LlvmRelease::Llvm22);
  const std::vector<std::byte> b = write_offload_binary_v1(d, ot::as_bytes("x"));
  CHECK(static_cast<int>(b[0x22]) == 4);
  CHECK(static_cast<int>(b[0x23]) == 0);
  CHECK(read_offload_binary(b, 0, "h.bin").entries.at(0).id() == "hip-amdgcn-amd-amdhsa-");
}
