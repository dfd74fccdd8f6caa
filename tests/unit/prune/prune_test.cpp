#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../bundle_builder.h"
#include "../test_files.h"
#include "compat/target_spec.h"
#include "compress/ccob.h"
#include "formats/bundle_binary.h"
#include "prune/prune.h"
#include "support/bytes.h"

using namespace ot;
using ot::test::bytes_of;
using ot::test::golden;

namespace {

prune::Selection keep(std::vector<std::string> targets, bool allow_empty = false) {
  return prune::make_selection(prune::Selection::Mode::Keep, targets, allow_empty);
}

std::vector<std::byte> pruned(Bytes data, const prune::Selection& s, prune::Report* report = nullptr) {
  std::vector<std::byte> out;
  prune::Report r = prune::prune_container(data, s, "in", [&](Bytes b) { out.insert(out.end(), b.begin(), b.end()); });
  if (report) *report = r;
  return out;
}

bool selects(std::string_view target, std::string_view entry) {
  return prune::selects(compat::parse_spec(target), compat::parse_spec(entry));
}

}  // namespace

TEST_CASE("selects: an unspecified feature matches any setting, a full target ID what the GPU loads") {
  CHECK(selects("gfx90a", "hipv4-amdgcn-amd-amdhsa--gfx90a"));
  CHECK(selects("gfx90a", "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"));
  CHECK(selects("gfx90a", "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"));
  CHECK(selects("gfx90a", "hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"));
  CHECK_FALSE(selects("gfx90a", "hipv4-amdgcn-amd-amdhsa--gfx908"));
  CHECK(selects("gfx90a:sramecc+:xnack-", "hipv4-amdgcn-amd-amdhsa--gfx90a"));
  CHECK(selects("gfx90a:sramecc+:xnack-", "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"));
  CHECK_FALSE(selects("gfx90a:sramecc+:xnack-", "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"));
  CHECK_FALSE(selects("gfx90a:sramecc+:xnack-", "hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc-"));
  CHECK(selects("gfx90a:xnack+", "hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack+"));
  // a bundle entry ID names the kind and triple too
  CHECK(selects("hip-amdgcn-amd-amdhsa--gfx906", "hipv4-amdgcn-amd-amdhsa--gfx906"));
  CHECK_FALSE(selects("openmp-amdgcn-amd-amdhsa--gfx906", "hipv4-amdgcn-amd-amdhsa--gfx906"));
  CHECK(selects("sm_70", "openmp-nvptx64-nvidia-cuda--sm_70"));
  CHECK_FALSE(selects("gfx906", "openmp-nvptx64-nvidia-cuda--sm_70"));
}

TEST_CASE("make_selection: a target that does not parse names itself") {
  CHECK_THROWS_WITH_AS(keep({"gfx906", "gfx9000"}), doctest::Contains("target 'gfx9000': "), Error);
}

TEST_CASE("offload binaries: the kept binaries are the packager's bytes for them") {
  // 19-packager-3.bin: gfx908 (tgt1), sm_70 (tgt2), x86_64 (host.i); 19-packager-1.bin: the gfx908 one alone
  prune::Report r;
  CHECK(pruned(golden("19-packager-3.bin"), keep({"gfx908"}), &r) == golden("19-packager-1.bin"));
  CHECK(r.container == "offload binaries");
  REQUIRE(r.entries.size() == 3);
  CHECK(r.entries[0].id == "openmp-amdgcn-amd-amdhsa-gfx908");
  CHECK(r.entries[0].kept);
  CHECK_FALSE(r.entries[1].kept);
  CHECK(r.dropped() == 2);
  CHECK(r.size_before == golden("19-packager-3.bin").size());
  CHECK(r.size_after == golden("19-packager-1.bin").size());
}

TEST_CASE("CCOB: keeping every entry gives LLVM 19's -compress bytes back") {
  auto in = golden("19-hip2-compressed.bc");
  prune::Report r;
  CHECK(pruned(in, keep({"gfx900", "gfx906"}), &r) == in);
  CHECK(r.container == "compressed bundle (version 2, zstd) holding a binary bundle");
  CHECK(r.dropped() == 0);
}

TEST_CASE("text bundle: the dropped entries' marker lines and payloads are cut out") {
  // 19-text.i: host (host.i), openmp-x86_64-pc-linux-gnu (tgt1), hip gfx900 (tgt2)
  const std::string want =
      "\n// __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-\n"
      "int x;\n"
      "\n// __CLANG_OFFLOAD_BUNDLE____END__ host-x86_64-unknown-linux-gnu-\n"
      "\n// __CLANG_OFFLOAD_BUNDLE____START__ hip-amdgcn-amd-amdhsa--gfx900\n"
      "Content of device file 2\n"
      "\n// __CLANG_OFFLOAD_BUNDLE____END__ hip-amdgcn-amd-amdhsa--gfx900\n";
  prune::Report r;
  CHECK(pruned(golden("19-text.i"), keep({"gfx900"}), &r) == bytes_of(want));
  CHECK(r.container == "text bundle");
  CHECK(r.size_after == want.size());
}

TEST_CASE("binary bundle: re-laid out at the input's alignment") {
  // 19-hip2-align16.bc: LLVM 19 -bundle-align=16, entries gfx900 and gfx906 (25 bytes each)
  prune::Report r;
  auto out = pruned(golden("19-hip2-align16.bc"), keep({"gfx906"}), &r);
  auto entries = formats::read_binary_bundle(out, "out");
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].id == "hip-amdgcn-amd-amdhsa--gfx906");
  // header: 24 magic + 8 count + 24 + 29 id = 85 bytes, the payload at the next multiple of 16
  CHECK(entries[0].offset == 96);
  CHECK(out.size() == 96 + 25);
  CHECK(r.size_after == out.size());
}

TEST_CASE("errors: file, what and offset; nothing reaches the sink") {
  std::vector<std::byte> out;
  auto sink = [&](Bytes b) { out.insert(out.end(), b.begin(), b.end()); };
  auto none = keep({"gfx1100"});
  CHECK_THROWS_WITH_AS(prune::prune_container(golden("19-hip2.bc"), none, "a.bc", sink),
                       "a.bc: no device entry of the binary bundle would stay (--allow-empty writes it without any)",
                       Error);
  CHECK_THROWS_WITH_AS(prune::prune_container(bytes_of("hello"), none, "h", sink),
                       "h: not an offload bundle, compressed offload bundle or offload binary, at offset 0x0", Error);
  auto two = golden("19-hip2.bc");
  two.insert(two.end(), two.begin(), two.end());
  CHECK_THROWS_WITH_AS(
      prune::prune_container(two, keep({"gfx900"}), "two", sink),
      "two: 0xbc bytes follow the bundle (several bundles one after another are not pruned yet), at offset 0xbc", Error);
  auto unknown = test::assemble_binary({"hip-amdgcn-amd-amdhsa--gfx9000"}, {{std::byte{1}}}, 1);
  CHECK_THROWS_WITH_AS(prune::prune_container(unknown, keep({"gfx900"}), "u", sink),
                       doctest::Contains("u: entry 'hip-amdgcn-amd-amdhsa--gfx9000' cannot be matched: "), Error);
  CHECK(out.empty());
  // --allow-empty: the host entry alone
  auto host_only = pruned(golden("19-mixed.bc"), keep({"gfx1100"}, true));
  auto entries = formats::read_binary_bundle(host_only, "out");
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].id == "host-x86_64-unknown-linux-gnu-");
}

TEST_CASE("CCOB version 1: written again as version 1, the compressed data LLVM 19's") {
  // A v1 CCOB of LLVM's bundle: LLVM 19's -compress data behind a 20-byte v1 header.
  auto v2 = golden("19-hip2-compressed.bc");  // 24-byte header, then the zstd frame
  compress::CcobOptions o;
  o.version = 1;
  auto v1 = compress::make_ccob(golden("19-hip2.bc"), o, "v1");
  REQUIRE(v1.size() == v2.size() - 4);
  CHECK(std::equal(v1.begin() + 20, v1.end(), v2.begin() + 24));
  CHECK(std::equal(v1.begin() + 12, v1.begin() + 20, v2.begin() + 16));  // the hash
  prune::Report r;
  CHECK(pruned(v1, keep({"gfx900", "gfx906"}), &r) == v1);
  auto one = pruned(v1, keep({"gfx906"}), &r);
  CHECK(r.container == "compressed bundle (version 1, zstd) holding a binary bundle");
  CHECK(formats::read_ccob_header(one, "one").version == 1);
}
