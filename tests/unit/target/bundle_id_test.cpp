#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "target/bundle_id.h"
#include "target/target_id.h"

using ot::target::BundleId;

TEST_CASE("bundle IDs standardise as LLVM 19 does (reference 2.3, observed)") {
  struct Case {
    const char* given;
    const char* standard;
  };
  const Case cases[] = {
      {"host-x86_64-unknown-linux-gnu", "host-x86_64-unknown-linux-gnu-"},
      {"openmp-x86_64-pc-linux-gnu", "openmp-x86_64-pc-linux-gnu-"},
      {"hip-amdgcn-amd-amdhsa-gfx900", "hip-amdgcn-amd-amdhsa--gfx900"},
      {"hip-amdgcn-amd-amdhsa--gfx906:xnack+", "hip-amdgcn-amd-amdhsa--gfx906:xnack+"},
      {"hip-amdgcn-amd-amdhsa-unknown-gfx906", "hip-amdgcn-amd-amdhsa-unknown-gfx906"},
      {"openmp-nvptx64-nvidia-cuda-sm_70", "openmp-nvptx64-nvidia-cuda--sm_70"},
      {"openmp-nvptx64-nvidia-cuda", "openmp-nvptx64-nvidia-cuda--"},
      {"host-x86_64-unknown-linux-gnu-", "host-x86_64-unknown-linux-gnu-host-x86_64-unknown-linux-gnu-"},
      {"hip-amdgcn-amd-amdhsa-", "hip-amdgcn-amd-amdhsa--hip-amdgcn-amd-amdhsa-"},
      {"hip-amdgcn-amd-amdhsa--gfx9-generic", "hip-amdgcn-amd-amdhsa--gfx9-generic"},
      {"host-amdgcn-xxx-linux-gnu", "host-amdgcn-xxx-linux-gnu-"},
      {"openmp-powerpc64le-linux", "openmp-powerpc64le-linux---"},
      {"openmp-x86_64", "openmp-x86_64----"},
      {"hip-amdgcn-amd-amdhsa--gfx90a:xnack+", "hip-amdgcn-amd-amdhsa--gfx90a:xnack+"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.given);
    CHECK(BundleId(c.given).str() == c.standard);
  }
}

TEST_CASE("invalid kinds and triples") {
  BundleId bad("hxst-powerpcxxle-ibm-linux-gnu");
  CHECK_FALSE(bad.has_valid_kind());
  CHECK_FALSE(bad.has_valid_triple());
  CHECK(bad.triple().str() == "powerpcxxle-ibm-linux-gnu");
  CHECK(BundleId("hipv4-amdgcn-amd-amdhsa--gfx906").is_valid());
  CHECK_FALSE(BundleId("cuda-nvptx64-nvidia-cuda--sm_70").is_valid());
}

TEST_CASE("code-object compatibility (reference 2.14)") {
  auto compat = [](const char* code, const char* target, bool hip_openmp = false) {
    return ot::target::is_code_object_compatible(BundleId(code), BundleId(target), hip_openmp);
  };
  CHECK(compat("hip-amdgcn-amd-amdhsa--gfx906", "hip-amdgcn-amd-amdhsa--gfx906:xnack+"));
  CHECK(compat("hip-amdgcn-amd-amdhsa--gfx906", "hip-amdgcn-amd-amdhsa--gfx906:xnack-"));
  CHECK_FALSE(compat("hip-amdgcn-amd-amdhsa--gfx906:xnack+", "hip-amdgcn-amd-amdhsa--gfx906"));
  CHECK(compat("hip-amdgcn-amd-amdhsa--gfx906:xnack+", "hip-amdgcn-amd-amdhsa--gfx906:sramecc-:xnack+"));
  CHECK_FALSE(compat("hip-amdgcn-amd-amdhsa--gfx906:xnack+", "hip-amdgcn-amd-amdhsa--gfx906:xnack-"));
  CHECK(compat("hipv4-amdgcn-amd-amdhsa--gfx906", "hip-amdgcn-amd-amdhsa--gfx906"));
  CHECK_FALSE(compat("hip-amdgcn-amd-amdhsa--gfx906", "openmp-amdgcn-amd-amdhsa--gfx906"));
  CHECK(compat("hip-amdgcn-amd-amdhsa--gfx906", "openmp-amdgcn-amd-amdhsa--gfx906", true));
  CHECK_FALSE(compat("hip-amdgcn-amd-amdhsa--gfx906", "hip-amdgcn-amd-amdhsa--gfx908"));
  // Vendor differs: not compatible; an empty environment equals "unknown".
  CHECK_FALSE(compat("openmp-x86_64-pc-linux-gnu", "openmp-x86_64-unknown-linux-gnu"));
  CHECK(compat("host-x86_64-unknown-linux-gnu", "host-x86_64-unknown-linux-gnu"));
  CHECK(compat("openmp-nvptx64-nvidia-cuda--sm_70", "openmp-nvptx64-nvidia-cuda-unknown-sm_70"));
}

TEST_CASE("target-ID parsing canonicalises AMDGPU aliases and checks features") {
  ot::target::Triple amdgcn("amdgcn-amd-amdhsa");
  CHECK(ot::target::parse_target_id(amdgcn, "fiji", nullptr) == "gfx803");
  CHECK(ot::target::parse_target_id(amdgcn, "gfx906:sramecc+:xnack-", nullptr) == "gfx906");
  CHECK_FALSE(ot::target::parse_target_id(amdgcn, "gfx900:sramecc+", nullptr));   // gfx900 has no sramecc
  CHECK_FALSE(ot::target::parse_target_id(amdgcn, "gfx906:xnack", nullptr));      // no sign
  CHECK_FALSE(ot::target::parse_target_id(amdgcn, "gfx906:xnack+:xnack-", nullptr));
  CHECK_FALSE(ot::target::parse_target_id(amdgcn, "gfx9999", nullptr));
  CHECK(ot::target::parse_target_id(ot::target::Triple("nvptx64-nvidia-cuda"), "sm_70", nullptr) == "sm_70");
}

TEST_CASE("conflicting target IDs (reference 2.6)") {
  using ot::target::conflicting_target_ids;
  auto c = conflicting_target_ids({"gfx906", "gfx906:xnack+"});
  REQUIRE(c);
  CHECK(c->first == "gfx906");
  CHECK(c->second == "gfx906:xnack+");
  CHECK_FALSE(conflicting_target_ids({"gfx906:xnack-", "gfx906:xnack+"}));
  CHECK(conflicting_target_ids({"gfx906:sramecc+", "gfx906:xnack+"}));
  CHECK_FALSE(conflicting_target_ids({"gfx906:sramecc+:xnack+", "gfx906:xnack-"}));
  CHECK_FALSE(conflicting_target_ids({"gfx900", "gfx906:xnack+"}));
}

// tests/data/reference/llvm22-bundle-ids.tsv: what LLVM 19 and 22 write for each
// -targets entry (or their error), observed; both parsers against both columns.
TEST_CASE("bundle IDs standardise as LLVM 19 and LLVM 22 do (observed table)") {
  std::ifstream in(std::string(OT_TEST_DATA) + "/reference/llvm22-bundle-ids.tsv");
  REQUIRE(in);
  int rows = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    auto t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
    REQUIRE(t2 != std::string::npos);
    const std::string given = line.substr(0, t1), by19 = line.substr(t1 + 1, t2 - t1 - 1), by22 = line.substr(t2 + 1);
    CAPTURE(given);
    ++rows;
    BundleId id19(given), id22(given, ot::target::BundleIdRules::FivePieces);
    if (by19.starts_with("ERR: "))
      CHECK_FALSE(id19.is_valid());
    else
      CHECK(id19.str() == by19);
    if (by22.starts_with("ERR: Targets need to follow the format"))
      CHECK_FALSE(id22.has_five_pieces());
    else if (by22.starts_with("ERR: "))
      CHECK((id22.has_five_pieces() && !id22.is_valid()));
    else
      CHECK((id22.has_five_pieces() && id22.is_valid() && id22.str() == by22));
  }
  CHECK(rows > 100);
}

TEST_CASE("what LLVM 22 would lose: a processor in the environment's place, an arch name it does not know") {
  using ot::target::lossy_under_five_pieces;
  auto l = lossy_under_five_pieces("hip-amdgcn-amd-amdhsa-gfx906:xnack+");
  REQUIRE(l);
  CHECK(l->would_write == "hip-amdgcn-amd-amdhsa--");
  CHECK(l->lost == "gfx906:xnack+");
  CHECK(l->use_instead == "hip-amdgcn-amd-amdhsa--gfx906:xnack+");
  l = lossy_under_five_pieces("openmp-nvptx64-nvidia-cuda-sm_80");
  REQUIRE(l);
  CHECK(l->use_instead == "openmp-nvptx64-nvidia-cuda-unknown-sm_80");
  l = lossy_under_five_pieces("hip-amdgcn-amd-amdhsa--gfx940");  // 22 dropped gfx940
  REQUIRE(l);
  CHECK(l->use_instead.empty());
  for (const char* kept : {"hip-amdgcn-amd-amdhsa--gfx906", "hip-amdgcn-amd-amdhsa-unknown-gfx90a:xnack-",
                           "openmp-x86_64-pc-linux-gnu", "openmp-x86_64-pc-linux-gnu-", "openmp-x86_64-pc-linux-gnu--",
                           "hip-amdgcn-amd-amdhsa--gfx9-generic", "host-x86_64-unknown-linux-gnu",
                           "openmp-nvptx64-nvidia-cuda--sm_100a", "openmp-x86_64"}) {
    CAPTURE(kept);
    CHECK_FALSE(lossy_under_five_pieces(kept));
  }
}

TEST_CASE("LLVM 23: amdgpu triple archs standardise as written and match by subarch (observed, docs/llvm23.md)") {
  using ot::target::BundleIdRules;
  CHECK(BundleId("hip-amdgpu9.06-amd-amdhsa-unknown-gfx906", BundleIdRules::FivePiecesAmdgpu).str() ==
        "hip-amdgpu9.06-amd-amdhsa--gfx906");
  CHECK(BundleId("hip-amdgpuX-amd-amdhsa--gfx906", BundleIdRules::FivePiecesAmdgpu).is_valid());
  CHECK(BundleId("hip-amdgpu9.42-amd-amdpal--gfx942", BundleIdRules::FivePiecesAmdgpu).str() ==
        "hip-amdgpu9.42-amd-amdpal-unknown-gfx942");
  CHECK_FALSE(BundleId("hip-amdgpu9.06-amd-amdhsa--gfx906", BundleIdRules::FivePieces).is_valid());  // 22
  CHECK(BundleId("hip-amdgcn-amd-amdhsa--gfx1170", BundleIdRules::FivePiecesAmdgpu).target_id() == "gfx1170");
  CHECK(BundleId("hip-amdgcn-amd-amdhsa--gfx1170", BundleIdRules::FivePieces).target_id().empty());

  // LLVM 23.1.4's answers: row = the entry in the bundle, column = the request (gfx906 on both sides).
  const char* archs[] = {"amdgcn", "amdgpu", "amdgpu9", "amdgpu9.00", "amdgpu9.06",
                         "amdgpu9.0a", "amdgpu9.4", "amdgpu9.42", "amdgpu10.3", "amdgpuX"};
  const char* matrix[] = {
      "yyyyyyyyyy", "yyyyyyyyyy", "yyyyy-----", "yyyy------", "yyy-y-----",
      "yy---y----", "yy----yy--", "yy----yy--", "yy------y-", "----------",
  };
  for (int r = 0; r < 10; ++r) {
    for (int c = 0; c < 10; ++c) {
      BundleId code(std::string("hip-") + archs[r] + "-amd-amdhsa--gfx906", BundleIdRules::FivePiecesAmdgpu);
      BundleId target(std::string("hip-") + archs[c] + "-amd-amdhsa--gfx906", BundleIdRules::FivePiecesAmdgpu);
      INFO(archs[r], " / ", archs[c]);
      CHECK(ot::target::is_code_object_compatible(code, target, false) == (matrix[r][c] == 'y'));
    }
  }
}
