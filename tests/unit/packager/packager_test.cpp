#include "packager/packager.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/mapped_file.h"
#include "support/output_file.h"
#include "unit/archive/reference_data.h"

using namespace ot;
using packager::Diagnostics;
using packager::ImageArgs;
namespace fs = std::filesystem;

namespace {

const std::string kGolden = std::string(OT_TEST_DATA) + "/reference/golden/";

struct TempDir {
  fs::path path;
  TempDir() {
    std::string p = (fs::temp_directory_path() / "ot-packager-XXXXXX").string();
    path = mkdtemp(p.data());
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

std::string read(const std::string& path) { return std::string(as_chars(InputFile::open(path)->bytes())); }
void put(const std::string& path, std::string_view data) { write_file_atomic(path, as_bytes(data)); }

std::vector<std::string> listing(const TempDir& d) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(d.path)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("image kind: bitcode magic first, then the extension") {
  constexpr auto r22 = target::LlvmRelease::Llvm22;
  CHECK(packager::image_kind_for("x.o", as_bytes("BC\xC0\xDE"), r22) == formats::ImageKind::Bitcode);
  CHECK(packager::image_kind_for("x.s", as_bytes("\xDE\xC0\x17\x0B"), r22) == formats::ImageKind::Bitcode);
  CHECK(packager::image_kind_for("x.s", as_bytes("BC"), r22) == formats::ImageKind::Ptx);
  CHECK(packager::image_kind_for("x.fatbin", {}, r22) == formats::ImageKind::Fatbinary);
  CHECK(packager::image_kind_for("x.O", {}, r22) == formats::ImageKind::None);
  // SPIR-V is 23's (llvm-offload-binary 22 writes 0 for x.spv, 23 writes 6).
  CHECK(packager::image_kind_for("x.spv", {}, r22) == formats::ImageKind::None);
  CHECK(packager::image_kind_for("x.spv", {}, target::LlvmRelease::Llvm19) == formats::ImageKind::None);
  CHECK(packager::image_kind_for("x.spv", {}, target::LlvmRelease::Llvm23) == formats::ImageKind::Spirv);
  CHECK(formats::image_kind_extension(6, target::LlvmRelease::Llvm23) == "spv");
  CHECK(formats::image_kind_extension(6, r22).empty());
}

TEST_CASE("matching: file always, kind by number, other keys by exact value") {
  const auto r19 = target::LlvmRelease::Llvm19;
  formats::OffloadEntry e;
  e.offload_kind = 2;
  e.strings = {{"triple", "nvptx64-nvidia-cuda"}, {"arch", "sm_70"}};
  CHECK(packager::image_matches(ImageArgs::parse("file=x,kind=cuda,arch=sm_70"), e, r19));
  CHECK_FALSE(packager::image_matches(ImageArgs::parse("kind=hip"), e, r19));
  CHECK(packager::image_matches(ImageArgs::parse("missing="), e, r19));
  CHECK(packager::image_matches(ImageArgs::parse("missing"), e, r19));
  CHECK_FALSE(packager::image_matches(ImageArgs::parse("arch=sm_7"), e, r19));
  e.offload_kind = 0;
  CHECK(packager::image_matches(ImageArgs::parse("kind=sycl"), e, r19));  // unknown names are kind 0
}

TEST_CASE("matching kind=: the release's number in the personality, the name natively") {
  const auto r19 = target::LlvmRelease::Llvm19;
  const auto r22 = target::LlvmRelease::Llvm22;
  formats::OffloadEntry hip19, hip22, sycl22, zero;
  hip19.offload_kind = 3;
  hip22.offload_kind = 4;
  sycl22.offload_kind = 8;
  const ImageArgs hip = ImageArgs::parse("kind=hip");
  const ImageArgs sycl = ImageArgs::parse("kind=sycl");
  CHECK(packager::image_matches(hip, hip19, r19));
  CHECK_FALSE(packager::image_matches(hip, hip22, r19));
  CHECK_FALSE(packager::image_matches(hip, hip19, r22));
  CHECK(packager::image_matches(hip, hip22, r22));
  CHECK(packager::image_matches(sycl, sycl22, r22));
  CHECK_FALSE(packager::image_matches(sycl, sycl22, r19));
  CHECK(packager::image_matches(sycl, zero, r19));   // 19 has no sycl: 0, as any unknown name
  CHECK_FALSE(packager::image_matches(sycl, zero, r22));
  CHECK(packager::image_matches(hip, hip19, std::nullopt));
  CHECK(packager::image_matches(hip, hip22, std::nullopt));
  CHECK(packager::image_matches(sycl, sycl22, std::nullopt));
  CHECK_FALSE(packager::image_matches(sycl, zero, std::nullopt));
  CHECK(packager::image_matches(ImageArgs::parse("kind=none"), zero, std::nullopt));
}

TEST_CASE("create: byte-identical to LLVM 19's golden output, several files per image") {
  TempDir d;
  for (const char* n : {"tgt1", "tgt2", "host.i"}) put(d / n, read(kGolden + n));
  std::vector<ImageArgs> images = {
      ImageArgs::parse("file=" + (d / "tgt1") + ",triple=amdgcn-amd-amdhsa,arch=gfx908,kind=openmp"),
      ImageArgs::parse("file=" + (d / "tgt2") + ",triple=nvptx64-nvidia-cuda,arch=sm_70,kind=cuda,foo=bar,foo=baz"),
      ImageArgs::parse("file=" + (d / "host.i") + ",triple=x86_64-unknown-linux-gnu,kind=hip")};
  packager::create_package(images, d / "p3.bin", Diagnostics::Native, target::LlvmRelease::Llvm19);
  CHECK(read(d / "p3.bin") == read(kGolden + "19-packager-3.bin"));

  // file=tgt1,file=tgt1: two binaries with the same keys.
  packager::create_package({ImageArgs::parse("file=" + (d / "tgt1") + ",triple=amdgcn-amd-amdhsa,arch=gfx908,kind=openmp,file=" +
                                             (d / "tgt1"))},
                           d / "two.bin", Diagnostics::Native, target::LlvmRelease::Llvm19);
  CHECK(read(d / "two.bin") == read(kGolden + "19-packager-1.bin") + read(kGolden + "19-packager-1.bin"));

  packager::create_package({}, d / "empty.bin", Diagnostics::Native, target::LlvmRelease::Llvm19);
  CHECK(read(d / "empty.bin").empty());
}

TEST_CASE("create errors: LLVM's words in the personality, ours natively, no output") {
  const auto r19 = target::LlvmRelease::Llvm19;
  TempDir d;
  put(d / "a.o", "A");
  auto missing = ImageArgs::parse("file=" + (d / "a.o"));
  CHECK_THROWS_WITH_AS(packager::create_package({missing}, d / "x", Diagnostics::Llvm19, r19),
                       "'file' and 'triple' are required image arguments", LlvmError);
  CHECK_THROWS_WITH_AS(packager::create_package({ImageArgs::parse("file=" + (d / "a.o") + ",triple=t"), missing}, d / "x",
                                                Diagnostics::Native, r19),
                       "image 1: 'file' and 'triple' are required image arguments", Error);
  auto nofile = ImageArgs::parse("file=" + (d / "nope") + ",triple=t");
  CHECK_THROWS_WITH_AS(packager::create_package({nofile}, d / "x", Diagnostics::Llvm19, r19), "No such file or directory",
                       LlvmError);
  CHECK_THROWS_WITH_AS(packager::create_package({nofile}, d / "x", Diagnostics::Native, r19),
                       ("'" + (d / "nope") + "': No such file or directory").c_str(), Error);
  CHECK_THROWS_WITH_AS(packager::create_package({}, d / "no/dir/x", Diagnostics::Llvm19, r19), "No such file or directory",
                       LlvmError);
  CHECK(listing(d) == std::vector<std::string>{"a.o"});
}

TEST_CASE("create under 22: triple optional in the personality, kind numbers of the release") {
  const auto r22 = target::LlvmRelease::Llvm22;
  TempDir d;
  put(d / "a.o", "A");
  CHECK_THROWS_WITH_AS(packager::create_package({ImageArgs::parse("triple=t,arch=gfx906")}, d / "x",
                                                Diagnostics::Llvm19, r22),
                       "'file' is a required image arguments", LlvmError);
  // The native applet keeps wanting a triple: an image without one is of no use to a linker.
  CHECK_THROWS_WITH_AS(packager::create_package({ImageArgs::parse("file=" + (d / "a.o"))}, d / "x",
                                                Diagnostics::Native, r22),
                       "image 0: 'file' and 'triple' are required image arguments", Error);
  CHECK(listing(d) == std::vector<std::string>{"a.o"});

  packager::create_package({ImageArgs::parse("file=" + (d / "a.o") + ",arch=gfx906,kind=hip"),
                            ImageArgs::parse("file=" + (d / "a.o") + ",triple=spirv64,kind=sycl")},
                           d / "p.bin", Diagnostics::Llvm19, r22);
  const auto in = InputFile::open(d / "p.bin");
  const auto binaries = formats::read_offload_binaries(in->bytes(), d / "p.bin");
  REQUIRE(binaries.size() == 2);
  CHECK(binaries[0].entries.at(0).offload_kind == 4);
  CHECK(binaries[0].entries.at(0).triple() == "");
  CHECK(binaries[1].entries.at(0).offload_kind == 8);
}

TEST_CASE("extract: generated names, file=, --archive, warnings") {
  TempDir d;
  const std::string input = d / "p3.bin";
  put(input, read(kGolden + "19-packager-3.bin"));
  std::vector<std::string> warnings;
  packager::ExtractOptions o;
  o.directory = d.path.string();
  o.warn = [&](const std::string& w) { warnings.push_back(w); };
  o.selectors = {ImageArgs::parse("kind=openmp"), ImageArgs::parse("foo=bar,foo=baz"), ImageArgs::parse("nomatch=1"),
                 ImageArgs::parse("file=" + (d / "last.img")), ImageArgs::parse("triple=")};
  auto r = packager::extract_package(input, o, Diagnostics::Llvm19);
  CHECK(r.written.size() == 3);
  CHECK(warnings == std::vector<std::string>{"Multiple inputs match to a single file, '" + (d / "last.img") + "'"});
  CHECK(read(d / "p3-amdgcn-amd-amdhsa-gfx908.0.") == "Content of device file 1\n");
  CHECK(read(d / "p3-nvptx64-nvidia-cuda-sm_70.0.") == "Content of device file 2\n");
  CHECK(read(d / "last.img") == "int x;\n");

  o.archive = true;
  o.kind_release = target::LlvmRelease::Llvm19;  // as the personality
  o.selectors = {ImageArgs::parse("file=" + (d / "all.a"))};
  packager::extract_package(input, o, Diagnostics::Llvm19);
  const std::string a = read(d / "all.a");
  CHECK(a.starts_with("!<arch>\n//"));
  CHECK(a.find(input + "/\n") != std::string::npos);  // members are named by the input path

  o.selectors = {ImageArgs::parse("kind=cuda"), ImageArgs::parse("kind=hip")};
  CHECK_THROWS_WITH_AS(packager::extract_package(input, o, Diagnostics::Llvm19), "Image must have a 'file' argument.",
                       LlvmError);
  o.selectors = {ImageArgs::parse("kind=sycl")};  // no match: no error even without file=
  CHECK(packager::extract_package(input, o, Diagnostics::Llvm19).written.empty());
}

TEST_CASE("extract: nothing is written when a later selector fails") {
  TempDir d;
  const std::string input = d / "p3.bin";
  put(input, read(kGolden + "19-packager-3.bin"));
  packager::ExtractOptions o;
  o.directory = d.path.string();
  o.selectors = {ImageArgs::parse("kind=openmp"), ImageArgs::parse("file=" + (d / "no/such/dir"))};
  CHECK_THROWS_WITH_AS(packager::extract_package(input, o, Diagnostics::Native),
                       ("'" + (d / "no/such/dir") + "': No such file or directory").c_str(), Error);
  CHECK(listing(d) == std::vector<std::string>{"p3.bin"});
  CHECK_THROWS_WITH_AS(packager::extract_package(d / "none", o, Diagnostics::Llvm19),
                       ("'" + (d / "none") + "': No such file or directory").c_str(), Error);
}
