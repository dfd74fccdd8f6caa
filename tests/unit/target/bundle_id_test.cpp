#include <doctest/doctest.h>

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
