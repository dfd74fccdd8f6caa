#include "packager/find_binaries.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "support/mapped_file.h"
#include "unit/archive/reference_data.h"

using namespace ot;
using packager::Diagnostics;
using packager::FoundImage;

namespace {

template <std::size_t N>
std::vector<std::byte> copy(const unsigned char (&a)[N]) {
  return {reinterpret_cast<const std::byte*>(a), reinterpret_cast<const std::byte*>(a) + N};
}

std::vector<std::byte> golden3() {
  auto f = InputFile::open(std::string(OT_TEST_DATA) + "/reference/golden/19-packager-3.bin");
  return {f->bytes().begin(), f->bytes().end()};
}

std::vector<FoundImage> find(std::string name, std::vector<std::byte> data, Diagnostics d = Diagnostics::Native) {
  std::shared_ptr<const InputFile> in = InputFile::from_memory(std::move(name), std::move(data));
  return packager::find_offload_images(in, d);
}

std::string image(const std::vector<std::byte>& data, const FoundImage& f) {
  CHECK(std::equal(data.begin(), data.end(), f.source->bytes().begin(), f.source->bytes().end()));
  return std::string(as_chars(Bytes(data).subspan(f.entry.image_offset, f.entry.image_size)));
}

std::string image(const FoundImage& f) {
  return std::string(as_chars(f.source->bytes().subspan(f.entry.image_offset, f.entry.image_size)));
}

std::vector<std::string> arches(const std::vector<FoundImage>& v) {
  std::vector<std::string> out;
  for (const auto& f : v) out.emplace_back(f.entry.triple());
  return out;
}

}  // namespace

// The expected images are those `llvm-objdump --offloading` and
// clang-offload-packager 19 find in the same files (make_reference_data.py).
TEST_CASE("raw concatenated binaries") {
  auto data = golden3();
  auto v = find("p3.bin", data);
  REQUIRE(v.size() == 3);
  CHECK(v[0].origin == "p3.bin");
  CHECK(v[0].container == "raw");
  CHECK(v[1].binary_offset == 0xb0);
  CHECK(image(data, v[0]) == "Content of device file 1\n");
  CHECK(image(data, v[2]) == "int x;\n");
  CHECK(find("-", data)[0].origin == "<stdin>");
}

TEST_CASE("ELF: every SHT_LLVM_OFFLOADING section, whatever its name; PROGBITS ignored") {
  auto data = copy(testdata::kOffloadElf);
  auto v = find("e.o", data);
  CHECK(arches(v) == std::vector<std::string>{"amdgcn-amd-amdhsa", "nvptx64-nvidia-cuda", "x86_64-unknown-linux-gnu",
                                              "x86_64-unknown-linux-gnu"});
  CHECK(v[3].container == "section .other_name");
  CHECK(image(data, v[1]) == "Content of device file 2\n");
  CHECK(image(data, v[3]) == "int x;\n");
}

TEST_CASE("COFF: sections named .llvm.offloading*, unaligned data") {
  auto data = copy(testdata::kOffloadCoff);
  auto v = find("c.obj", data);
  REQUIRE(v.size() == 2);
  CHECK(v[0].entry.get("foo") == "bar,baz");
  CHECK(v[0].binary_offset % 8 != 0);
  CHECK(v[1].container == "section .llvm.offloading$aux");
  CHECK(image(data, v[1]) == "int x;\n");
}

TEST_CASE("archives: every member, recursively; origin is the member name") {
  auto data = copy(testdata::kNestedArchive);  // off.a (e.o, c.obj, p3.bin), p3.bin
  auto v = find("nest.a", data);
  REQUIRE(v.size() == 4 + 2 + 3 + 3);
  CHECK(v[0].origin == "e.o");
  CHECK(v[0].container == "nest.a(off.a)(e.o), section .llvm.offloading");
  CHECK(v[4].origin == "c.obj");
  CHECK(v[6].origin == "p3.bin");
  CHECK(v[6].container == "nest.a(off.a)(p3.bin), raw");
  CHECK(v[9].container == "nest.a(p3.bin), raw");
  CHECK(image(data, v[5]) == "int x;\n");
  CHECK(image(data, v[11]) == "int x;\n");
  CHECK(find("sym.a", copy(testdata::kSymArchive)).empty());  // x.o and y.bc hold no offload sections
  // A text file, an empty file: no images, no error.
  CHECK(find("t.c", {}).empty());
  CHECK(find("t.c", std::vector<std::byte>(100, std::byte{'x'})).empty());
}

TEST_CASE("damaged binaries: our words natively, LLVM 19's in the personality") {
  auto data = golden3();
  data.resize(data.size() - 8);
  CHECK_THROWS_WITH_AS(find("p3.bin", data),
                       "p3.bin: offload binary size 0x88 extends past the end of the data (0x80 bytes left), at "
                       "offset 0x188",
                       Error);
  CHECK_THROWS_WITH_AS(find("p3.bin", data, Diagnostics::Llvm19), "The end of the file was unexpectedly encountered",
                       LlvmError);
  data = golden3();
  data.push_back(std::byte{0});
  CHECK_THROWS_WITH_AS(find("p3.bin", data, Diagnostics::Llvm19), "Invalid data was encountered while parsing the file",
                       LlvmError);
  // A damaged section inside an object names the object and the offset in it.
  auto elf = copy(testdata::kOffloadElf);
  elf[0x40] = std::byte{0};
  CHECK_THROWS_WITH_AS(find("e.o", elf), "e.o: bad offload binary magic (expected 10 ff 10 ad), at offset 0x40", Error);
}

TEST_CASE("bitcode: the globals in .llvm.offloading (clang -fembed-offload-object)") {
  CHECK(find("y.bc", copy(testdata::kBitcode)).empty());
  auto v = find("emb.bc", copy(testdata::kEmbeddedBitcode));
  REQUIRE(v.size() == 6);
  CHECK(v[0].origin == "emb.bc");
  CHECK(v[0].container == "bitcode global 0 in .llvm.offloading");
  CHECK(v[3].container == "bitcode global 1 in .llvm.offloading");
  CHECK(v[4].entry.get("foo") == "bar,baz");
  CHECK(image(v[1]) == "Content of device file 2\n");
  CHECK(image(v[5]) == "int x;\n");
  CHECK(v[5].source->bytes().size() == golden3().size());
  auto bc = copy(testdata::kEmbeddedBitcode);
  bc.resize(bc.size() / 2);
  CHECK_THROWS_WITH_AS(find("emb.bc", bc), "emb.bc: bitcode block of 0xc3 words extends past the end, at offset 0x420", Error);
}
