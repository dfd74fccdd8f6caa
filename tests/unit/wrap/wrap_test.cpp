#include <doctest/doctest.h>

#include "formats/offload_binary.h"
#include "object/elf_writer.h"
#include "wrap/wrap.h"

using namespace ot;

namespace {

std::shared_ptr<const InputFile> mem(const char* name, std::string_view text) {
  auto b = as_bytes(text);
  return InputFile::from_memory(name, std::vector<std::byte>(b.begin(), b.end()));
}

wrap::Options openmp(std::vector<wrap::Image> images, wrap::OpenMPScheme scheme = wrap::OpenMPScheme::Llvm19) {
  wrap::Options o;
  o.kind = wrap::Kind::OpenMP;
  o.triple = "x86_64-unknown-linux-gnu";
  o.scheme = scheme;
  o.images = std::move(images);
  return o;
}

// Contents of the ELF section called `name` (test helper over a well-formed ELF64 LE file).
std::vector<std::byte> section(const std::vector<std::byte>& d, std::string_view name) {
  auto u16 = [&](std::size_t at) { return load_le<std::uint16_t>(d.data() + at); };
  auto u32 = [&](std::size_t at) { return load_le<std::uint32_t>(d.data() + at); };
  auto u64 = [&](std::size_t at) { return load_le<std::uint64_t>(d.data() + at); };
  const std::size_t shoff = u64(0x28), n = u16(0x3c), strtab = u64(shoff + 64 * u16(0x3e) + 24);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t h = shoff + 64 * i;
    if (name == reinterpret_cast<const char*>(d.data() + strtab + u32(h)))
      return {d.begin() + static_cast<std::ptrdiff_t>(u64(h + 24)),
              d.begin() + static_cast<std::ptrdiff_t>(u64(h + 24) + u64(h + 32))};
  }
  FAIL("no section ", name);
  return {};
}

}  // namespace

TEST_CASE("host triples select the format and code generator") {
  CHECK(wrap::host_target("x86_64-unknown-linux-gnu").elf_machine == object::kEmX86_64);
  CHECK(wrap::host_target("aarch64-linux-gnu").arch == object::CodeArch::AArch64);
  auto ppc = wrap::host_target("powerpc64le-unknown-linux-gnu");
  CHECK(ppc.arch == object::CodeArch::Ppc64le);
  CHECK(ppc.elf_flags == 2);
  auto msvc = wrap::host_target("x86_64-pc-windows-msvc");
  CHECK((msvc.coff && !msvc.mingw));
  auto gnu = wrap::host_target("x86_64-w64-windows-gnu");
  CHECK((gnu.coff && gnu.mingw));
  CHECK_THROWS_WITH_AS(wrap::host_target("nonsense"), "'nonsense': unsupported target triple", Error);
  CHECK_THROWS_WITH_AS(wrap::host_target("riscv64-unknown-linux-gnu"),
                       "'riscv64-unknown-linux-gnu': no wrapper code generator for this host (supported: x86_64 ELF "
                       "and COFF, aarch64 ELF, powerpc64le ELF)",
                       Error);
  CHECK(wrap::parse_kind("sycl") == wrap::Kind::Sycl);
  CHECK_THROWS_WITH_AS(wrap::parse_kind("SYCL"), "unknown offload kind 'SYCL' (expected openmp, cuda, hip or sycl)",
                       Error);
}

TEST_CASE("bad inputs are refused before anything is laid out") {
  CHECK_THROWS_WITH_AS(wrap::build_wrapper(openmp({})), "no device images to wrap", Error);
  CHECK_THROWS_WITH_AS(wrap::build_wrapper(openmp({{"e.img", mem("e.img", ""), ""}})), "e.img: device image is empty",
                       Error);
  CHECK_THROWS_WITH_AS(
      wrap::build_wrapper(openmp({{"a.img", mem("a.img", "A"), "gfx906"}, {"b.img", mem("b.img", "B"), ""}})),
      "1 --offload-arch values for 2 images: give one per image or none", Error);
  wrap::Options cuda = openmp({{"a", mem("a", "A"), ""}, {"b", mem("b", "B"), ""}});
  cuda.kind = wrap::Kind::Cuda;
  CHECK_THROWS_WITH_AS(wrap::build_wrapper(cuda), "b: CUDA wraps exactly one fat binary; 2 files were given", Error);
}

TEST_CASE("LLVM 19 scheme embeds each image as an OffloadBinary in .llvm.offloading") {
  auto obj = wrap::build_wrapper(openmp({{"dev.img", mem("dev.img", "DEVICE-IMAGE"), "gfx90a:xnack+"}})).flatten();
  auto sec = section(obj, ".llvm.offloading");
  auto bins = formats::read_offload_binaries(sec, "sec");
  REQUIRE(bins.size() == 1);
  const formats::OffloadEntry& e = bins[0].entries.at(0);
  CHECK(e.offload_kind == static_cast<std::uint16_t>(formats::OffloadKind::OpenMP));
  CHECK(e.arch() == "gfx90a:xnack+");
  CHECK(as_chars(Bytes(sec).subspan(e.image_offset, e.image_size)) == "DEVICE-IMAGE");
  CHECK(as_chars(section(obj, ".offload_arch_list")) == std::string_view("gfx90a:xnack+\0", 14));
}

TEST_CASE("LLVM 14 scheme: raw images, descriptor and priority-1 tables") {
  auto obj = wrap::build_wrapper(openmp({{"a", mem("a", "DEVIMG1"), ""}, {"b", mem("b", "DEVIMAGE22"), ""}},
                                        wrap::OpenMPScheme::Llvm14))
                 .flatten();
  auto ro = section(obj, ".rodata");
  CHECK(as_chars(Bytes(ro).subspan(0, 7)) == "DEVIMG1");
  CHECK(as_chars(Bytes(ro).subspan(16, 10)) == "DEVIMAGE22");  // each image 16-aligned
  auto rel = section(obj, ".data.rel.ro");
  CHECK(rel.size() == 2 * 32 + 32);
  CHECK(load_le<std::uint32_t>(rel.data() + 64) == 2);  // NumDeviceImages
  CHECK(section(obj, ".init_array.1").size() == 8);
  CHECK(section(obj, ".fini_array.1").size() == 8);
}

TEST_CASE("same inputs, same bytes") {
  auto a = wrap::build_wrapper(openmp({{"a", mem("a", "X"), ""}})).flatten();
  auto b = wrap::build_wrapper(openmp({{"a", mem("a", "X"), ""}})).flatten();
  CHECK(a == b);
}
