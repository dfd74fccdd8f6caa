// contents/per_gpu: the per-GPU file names of ROCm's layouts. The expected
// targets are written out by hand from the layouts' own naming rules:
// Tensile's file names in Debian's rocBLAS 6.4 / hipBLASLt 7.1 packages
// ("_gfx90a-xnack+.hsaco"), and miopen::Handle::GetDbBasename (the processor,
// "_nosramecc" / "_sramecc" / "_xnack", then "_<cus>" in decimal up to 64 CUs,
// else the CUs in hex with no separator).
#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "contents/per_gpu.h"

namespace {

std::string target(std::string_view name) {
  std::optional<ot::contents::PerGpuName> n = ot::contents::per_gpu_name(name);
  return n ? n->target : "-";
}

std::string layout(std::string_view name) {
  std::optional<ot::contents::PerGpuName> n = ot::contents::per_gpu_name(name);
  return n ? std::string(n->layout->name) : "-";
}

}  // namespace

TEST_CASE("Tensile's per-GPU names carry their target, features spelled with '-' or ':'") {
  CHECK(target("TensileLibrary_lazy_gfx1100.dat") == "gfx1100");
  CHECK(target("TensileLibrary_gfx1030.co") == "gfx1030");
  CHECK(target("TensileLibrary_gfx1030.dat") == "gfx1030");
  CHECK(target("TensileLibrary_Type_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx90a.co") == "gfx90a");
  CHECK(target("TensileLibrary_Type_ZZ_Contraction_l_Alik_Bljk_Cijk_Dijk_fallback_gfx90a-xnack+.hsaco") ==
        "gfx90a:xnack+");
  CHECK(target("TensileLibrary_BB_BB_HA_Bias_Aux_SAV_UA_Type_BB_HPA_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx1201.dat") ==
        "gfx1201");
  CHECK(target("Kernels.so-000-gfx90a-xnack-.hsaco") == "gfx90a:xnack-");
  CHECK(target("Kernels.so-000-gfx803.hsaco") == "gfx803");
  CHECK(target("extop_gfx1151.co") == "gfx1151");
  CHECK(target("TensileLibrary_fallback_gfx942:sramecc+:xnack-.dat") == "gfx942:sramecc+:xnack-");
  CHECK(target("TensileLibrary_fallback_gfx942-xnack--sramecc+.dat") == "gfx942:sramecc+:xnack-");
  CHECK(layout("TensileLibrary_lazy_gfx1100.dat") == "Tensile");
}

TEST_CASE("names of no GPU, of unknown processors or other spellings are no Tensile per-GPU files") {
  CHECK(target("TensileLiteLibrary_lazy_Mapping.dat") == "-");
  CHECK(target("TensileLibrary_Type_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback.dat") == "-");
  CHECK(target("hipblasltExtOpLibrary.dat") == "-");
  CHECK(target("TensileLibrary.dat") == "-");
  CHECK(target("hipblasltTransform.hsaco") == "-");
  CHECK(target("TensileLibrary_lazy_gfx999.dat") == "-");       // no such processor
  CHECK(target("TensileLibrary_lazy_gfx1100.yaml") == "-");      // not a file Tensile loads
  CHECK(target("TensileLibrary_lazy_gfx1100-xnack+.dat") == "-");  // gfx1100 has no xnack
  CHECK(target("TensileLibrary_lazy_gfx90a-xnack.dat") == "-");    // a feature needs its sign
  CHECK(target("Kernels.so-gfx90a.hsaco") == "-");
  CHECK(target("libTensileLibrary_gfx90a.co") == "-");
}

TEST_CASE("MIOpen's database names: db id, compute units in decimal up to 64, else hex") {
  CHECK(target("gfx90a68.kdb") == "gfx90a");
  CHECK(target("gfx90a68.HIP.fdb.txt") == "gfx90a");
  CHECK(target("gfx1030_36.kdb") == "gfx1030");
  CHECK(target("gfx906_60.HIP.fdb.txt") == "gfx906");
  CHECK(target("gfx908_nosramecc78.db") == "gfx908:sramecc-");
  CHECK(target("gfx90a_sramecc_xnack6e.db.txt") == "gfx90a:sramecc+:xnack+");
  CHECK(target("gfx942130.kdb") == "gfx942");
  CHECK(target("gfx90a.kdb") == "gfx90a");
  CHECK(target("gfx908_metadata.tn.model") == "gfx908");
  CHECK(target("gfx90a.tn.model") == "gfx90a");
  CHECK(layout("gfx90a68.kdb") == "MIOpen");
  CHECK(target("gfx90a68z.kdb") == "-");
  CHECK(target("gfx1030_.kdb") == "-");
  CHECK(target("gfx908_12.tn.model") == "-");
  CHECK(target("miopen.db") == "-");
}

TEST_CASE("a per-GPU file is one in the folder its layout names") {
  ot::contents::PerGpuFiles files;
  files.add_device_code_file("usr/lib/rocblas/library/TensileLibrary_gfx90a.co");
  CHECK(files.classify("usr/lib/rocblas/library/TensileLibrary_lazy_gfx90a.dat").has_value());
  CHECK_FALSE(files.classify("usr/share/doc/TensileLibrary_lazy_gfx90a.dat").has_value());  // no device code there
  CHECK_FALSE(files.classify("usr/lib/rocblas/TensileLibrary_lazy_gfx90a.dat").has_value());  // the folder above
  CHECK(files.classify("./usr/share/miopen/db/gfx90a68.kdb").has_value());
  CHECK(files.classify("miopen/db/gfx90a68.kdb").has_value());
  CHECK_FALSE(files.classify("usr/share/notmiopen/db/gfx90a68.kdb").has_value());
  CHECK_FALSE(files.classify("usr/share/miopen/gfx90a68.kdb").has_value());
  CHECK(ot::contents::folder_of("a/b/c") == "a/b");
  CHECK(ot::contents::folder_of("c") == "");
  CHECK(ot::contents::base_name_of("a/b/c") == "c");
}
