#include "bundler/archive_unbundle.h"
#include "bundler/extract_dir.h"

#include <doctest/doctest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "support/mapped_file.h"
#include "support/output_file.h"
#include "../test_files.h"

using namespace ot;
using namespace ot::bundler;

namespace {

// A binary bundle (reference 2.8) of (id, payload) pairs, payloads unaligned.
std::string binary_bundle(const std::vector<std::pair<std::string, std::string>>& entries) {
  auto u64 = [](std::uint64_t v) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
    return s;
  };
  std::uint64_t off = 24 + 8;
  for (const auto& [id, p] : entries) off += 24 + id.size();
  std::string head = "__CLANG_OFFLOAD_BUNDLE__" + u64(entries.size()), data;
  for (const auto& [id, p] : entries) {
    head += u64(off + data.size()) + u64(p.size()) + u64(id.size()) + id;
    data += p;
  }
  return head + data;
}

// A GNU archive whose names all go through the "//" table.
std::string gnu_archive(const std::vector<std::pair<std::string, std::string>>& members) {
  auto header = [](const std::string& name, std::size_t size) {
    return fmt::format("{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n", name, 0, 0, 0, 644, size);
  };
  std::string names, body;
  for (const auto& [n, d] : members) {
    body += header(fmt::format("/{}", names.size()), d.size()) + d + (d.size() % 2 ? "\n" : "");
    names += n + "/\n";
  }
  return "!<arch>\n" + header("//", names.size()) + names + body;
}

struct TempDir {
  std::string path;
  TempDir() {
    path = "/tmp/ot-hda-unit-XXXXXX";
    REQUIRE(mkdtemp(path.data()) != nullptr);
  }
  ~TempDir() { REQUIRE(std::system(("rm -rf '" + path + "'").c_str()) == 0); }
  std::string file(const std::string& name, const std::string& data) const {
    write_file_atomic(path + "/" + name, as_bytes(data));
    return path + "/" + name;
  }
};

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

std::set<std::string> list_dir(const std::string& dir) {
  std::set<std::string> out;
  DIR* d = opendir(dir.c_str());
  REQUIRE(d != nullptr);
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.insert(n);
  }
  closedir(d);
  return out;
}

std::string read_all(const std::string& path) {
  auto in = InputFile::open(path);
  return std::string(as_chars(in->bytes()));
}

}  // namespace

// Every expected name below is what LLVM 19's clang-offload-bundler -type=a
// wrote for the same member name and bundle ID (llvm-ar t of its output).
TEST_CASE("device_member_name is LLVM 19's") {
  const std::string gfx = "hip-amdgcn-amd-amdhsa--gfx906";
  CHECK(device_member_name("hb1.bc", "hip-amdgcn-amd-amdhsa--gfx906:xnack+") ==
        "hb1-hip-amdgcn-amd-amdhsa--gfx906_xnack+hb1.bc");
  CHECK(device_member_name("ob.o", "openmp-nvptx64-nvidia-cuda--sm_70") ==
        "ob-openmp-nvptx64-nvidia-cuda--sm_70ob.cubin");
  CHECK(device_member_name("ob.o", "host-x86_64-unknown-linux-gnu-") == "ob-host-x86_64-unknown-linux-gnu-ob.o");
  CHECK(device_member_name("dir/x.bc", gfx) == "x-hip-amdgcn-amd-amdhsa--gfx906x.bc");
  CHECK(device_member_name(".bc", gfx) == "-hip-amdgcn-amd-amdhsa--gfx906.bc");
  CHECK(device_member_name("noext", gfx) == "noext-hip-amdgcn-amd-amdhsa--gfx906noext.bc");
  CHECK(device_member_name("a.b.c", gfx) == "a.b-hip-amdgcn-amd-amdhsa--gfx906a.b.bc");
  CHECK(device_member_name("..", gfx) == "..-hip-amdgcn-amd-amdhsa--gfx906...bc");
  CHECK(device_member_name(".", gfx) == ".-hip-amdgcn-amd-amdhsa--gfx906..bc");
  CHECK(device_member_name("x/", gfx) == ".-hip-amdgcn-amd-amdhsa--gfx906..bc");
  CHECK(device_member_name("dir/sub/.hidden", gfx) == "-hip-amdgcn-amd-amdhsa--gfx906.bc");
  CHECK(device_member_name("n:m.o", gfx) == "n_m-hip-amdgcn-amd-amdhsa--gfx906n_m.bc");
  CHECK(device_member_name("/abs/p.o", gfx) == "p-hip-amdgcn-amd-amdhsa--gfx906p.bc");
  CHECK(device_member_name("../up.o", gfx) == "up-hip-amdgcn-amd-amdhsa--gfx906up.bc");
  CHECK(device_member_name("ob.o", "openmp-amdgcn-amd-amdhsa--gfx906") == "ob-openmp-amdgcn-amd-amdhsa--gfx906ob.bc");
}

TEST_CASE("safe_file_name keeps names inside their folder") {
  CHECK(safe_file_name("x-hip.bc") == "x-hip.bc");
  CHECK(safe_file_name("../../etc/passwd") == ".._.._etc_passwd");
  CHECK(safe_file_name("/abs") == "_abs");
  CHECK(safe_file_name(std::string("a\0b", 3)) == "a_b");
  CHECK(safe_file_name("a\\b\nc\x7f") == "a_b_c_");
  CHECK(safe_file_name("") == "_");
  CHECK(safe_file_name(".") == "_.");
  CHECK(safe_file_name("..") == "_..");
  CHECK(safe_file_name("...") == "...");
  CHECK(safe_file_name("..-hip...bc") == "..-hip...bc");
}

TEST_CASE("unique_file_name numbers duplicates before the extension") {
  std::set<std::string> taken;
  CHECK(unique_file_name("x.bc", taken) == "x.bc");
  CHECK(unique_file_name("x.bc", taken) == "x.1.bc");
  CHECK(unique_file_name("x.bc", taken) == "x.2.bc");
  CHECK(unique_file_name("x.1.bc", taken) == "x.1.1.bc");
  CHECK(unique_file_name("noext", taken) == "noext");
  CHECK(unique_file_name("noext", taken) == "noext.1");
  CHECK(unique_file_name("_..", taken) == "_..");
  CHECK(unique_file_name("_..", taken) == "_..1.");
}

TEST_CASE("extract_to_dir: hostile bundle IDs and duplicate members stay inside the folder") {
  TempDir t;
  const std::string bundle =
      binary_bundle({{"hip-amdgcn-amd-amdhsa--gfx906", "A"}, {"../../../escape", "B"}, {"/abs/path", "C"}});
  const std::string input = t.file("lib.a", gnu_archive({{"dir/m.bc", bundle}, {"other/m.bc", bundle}}));
  Config c;
  c.inputs = {input};
  c.type = "a";
  const std::string out = t.path + "/out";
  auto files = extract_to_dir(c, {}, out);
  REQUIRE(files.size() == 6);
  CHECK(list_dir(t.path) == std::set<std::string>{"lib.a", "out"});
  CHECK(list_dir(out) == std::set<std::string>{
                             "m-hip-amdgcn-amd-amdhsa--gfx906m.bc", "m-hip-amdgcn-amd-amdhsa--gfx906m.1.bc",
                             "m-.._.._.._escapem.bc", "m-.._.._.._escapem.1.bc", "m-_abs_pathm.bc", "m-_abs_pathm.1.bc"});
  CHECK(read_all(out + "/m-hip-amdgcn-amd-amdhsa--gfx906m.bc") == "A");
  // entries come in LLVM's StringMap order within a member, members in archive order
  std::set<std::string> first_member;
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(files[i].member == "dir/m.bc");
    first_member.insert(files[i].bundle_id + " -> " + files[i].path.substr(out.size() + 1));
  }
  CHECK(first_member == std::set<std::string>{"hip-amdgcn-amd-amdhsa--gfx906 -> m-hip-amdgcn-amd-amdhsa--gfx906m.bc",
                                              "../../../escape -> m-.._.._.._escapem.bc",
                                              "/abs/path -> m-_abs_pathm.bc"});
  CHECK(files[3].member == "other/m.bc");
}

TEST_CASE("extract_to_dir: a target selects compatible entries; nothing is written when one finds nothing") {
  TempDir t;
  const std::string bundle =
      binary_bundle({{"hip-amdgcn-amd-amdhsa--gfx906", "A"}, {"hip-amdgcn-amd-amdhsa--gfx90a:xnack+", "B"}});
  const std::string input = t.file("lib.a", gnu_archive({{"m.bc", bundle}}));
  Config c;
  c.inputs = {input};
  c.type = "a";
  const std::string out = t.path + "/out";
  auto files = extract_to_dir(c, {compat::parse_spec("hip-amdgcn-amd-amdhsa--gfx906:xnack-")}, out);
  REQUIRE(files.size() == 1);
  CHECK(list_dir(out) == std::set<std::string>{"m-hip-amdgcn-amd-amdhsa--gfx906m.bc"});

  const std::string out2 = t.path + "/out2";
  c.targets = {"hip-amdgcn-amd-amdhsa--gfx906", "hip-amdgcn-amd-amdhsa--gfx1030"};
  std::string message;
  try {
    extract_to_dir(c, compat::parse_spec_list(c.targets), out2);
  } catch (const LlvmError& e) {
    message = e.what();
  }
  CHECK(message == "no compatible code object found for the target 'hip-amdgcn-amd-amdhsa--gfx1030' in " + input);
  CHECK_FALSE(exists(out2));  // a folder it created is removed
}

TEST_CASE("extract_to_dir: a package's entries are named after the innermost member") {
  TempDir t;
  const auto deb = test::read_bytes(test::data_path("contents/pkg.deb"));  // data.tar.xz -> ./usr/lib/b.bundle
  Config c;
  c.inputs = {t.file("pkg.deb", std::string(as_chars(deb)))};
  const std::string out = t.path + "/out";
  auto files = extract_to_dir(c, {}, out);
  REQUIRE(files.size() == 3);
  for (const ExtractedFile& f : files) CHECK(f.member == "./usr/lib/b.bundle");
  CHECK(files[1].path == out + "/b-hip-amdgcn-amd-amdhsa--gfx906b.bc");
  CHECK(list_dir(out) == std::set<std::string>{"b-host-x86_64-unknown-linux-gnu-b.bundle",
                                              "b-hip-amdgcn-amd-amdhsa--gfx906b.bc",
                                              "b-hip-amdgcn-amd-amdhsa--gfx90a_xnack+b.bc"});
  const auto gfx90a = test::read_bytes(test::data_path("contents/gfx90a.co"));
  CHECK(read_all(out + "/b-hip-amdgcn-amd-amdhsa--gfx90a_xnack+b.bc") == as_chars(gfx90a));
}

TEST_CASE("extract_to_dir: the same ID in several bundles of one file is numbered in file order") {
  TempDir t;
  std::string blob = binary_bundle({{"hip-amdgcn-amd-amdhsa--gfx906", "first"}});
  blob.resize(4096, '\0');  // the next bundle at the alignment a linked .hip_fatbin has
  blob += binary_bundle({{"hip-amdgcn-amd-amdhsa--gfx906", "second"}});
  Config c;
  c.inputs = {t.file("lib.fatbin", blob)};
  const std::string out = t.path + "/out";
  auto files = extract_to_dir(c, {compat::parse_spec("hip-amdgcn-amd-amdhsa--gfx906")}, out);
  REQUIRE(files.size() == 2);
  CHECK(files[0].member.empty());
  CHECK(read_all(out + "/lib-hip-amdgcn-amd-amdhsa--gfx906lib.bc") == "first");
  CHECK(read_all(out + "/lib-hip-amdgcn-amd-amdhsa--gfx906lib.1.bc") == "second");
}

TEST_CASE("extract_to_dir: bad input is the walker's error, and nothing is left") {
  TempDir t;
  const auto cut = test::read_bytes(test::data_path("contents/truncated.tar.gz"));
  Config c;
  c.inputs = {t.file("cut.tar.gz", std::string(as_chars(cut)))};
  const std::string out = t.path + "/out";
  CHECK_THROWS_WITH_AS(extract_to_dir(c, {}, out), doctest::Contains("cut.tar.gz"), Error);
  CHECK_FALSE(exists(out));  // a folder it created is removed

  // A damaged member after one already extracted (staged): nothing is left of it either.
  // (Member names of an even length in all: gnu_archive does not pad its name table.)
  std::string bad = binary_bundle({{"hip-amdgcn-amd-amdhsa--gfx906", "A"}});
  bad.resize(bad.size() - 3);
  c.inputs = {t.file("lib.a", gnu_archive({{"good.bc", binary_bundle({{"hip-amdgcn-amd-amdhsa--gfx906", "A"}})},
                                           {"bad1.bc", bad}}))};
  CHECK_THROWS_WITH_AS(extract_to_dir(c, {}, out), doctest::Contains("/lib.a(bad1.bc): "), Error);
  CHECK_FALSE(exists(out));  // a folder it created is removed

  const std::string twice = binary_bundle({{"hip-amdgcn-amd-amdhsa--gfx906", "A"}, {"hip-amdgcn-amd-amdhsa--gfx906", "B"}});
  c.inputs = {t.file("twice.bc", twice)};
  CHECK_THROWS_WITH_AS(extract_to_dir(c, {}, out),
                       doctest::Contains("/twice.bc, bundle at 0x0: the bundle stores 'hip-amdgcn-amd-amdhsa--gfx906' "
                                         "twice: its entries are not read"),
                       Error);
  CHECK_FALSE(exists(out));  // a folder it created is removed
}

TEST_CASE("unbundle_archive: malformed members name the archive, the member and the archive offset") {
  TempDir t;
  std::string bundle = binary_bundle({{"hip-amdgcn-amd-amdhsa--gfx906", "A"}});
  bundle.resize(bundle.size() - 3);  // the entry table now runs past the member's end
  const std::string input = t.file("bad.a", gnu_archive({{"m.bc", bundle}}));
  Config c;
  c.inputs = {input};
  c.outputs = {t.path + "/o.a"};
  c.type = "a";
  std::string message;
  try {
    unbundle_archive(c, {target::BundleId("hip-amdgcn-amd-amdhsa--gfx906")});
  } catch (const Error& e) {
    message = Error::render({e.file(), e.offset()}, e.message());
  }
  CHECK(message.starts_with(input + "(m.bc): "));
  CHECK(message.find(", at offset 0x") != std::string::npos);
  CHECK(list_dir(t.path) == std::set<std::string>{"bad.a"});
}
