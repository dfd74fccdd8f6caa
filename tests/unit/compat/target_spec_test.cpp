#include <doctest/doctest.h>

#include "compat/target_spec.h"
#include "formats/offload_binary.h"
#include "support/error.h"
#include "target/processors.h"
#include "target/target_id.h"

using ot::compat::check;
using ot::compat::parse_spec;

namespace {

std::string error_of(const char* text) {
  try {
    parse_spec(text);
  } catch (const ot::Error& e) {
    return e.what();
  }
  return "";
}

bool compatible(const char* code, const char* target, ot::compat::Rules rules = ot::compat::Rules::Runtime) {
  ot::compat::CheckOptions o;
  o.rules = rules;
  return check(parse_spec(code), parse_spec(target), o).compatible;
}

}  // namespace

TEST_CASE("processor table: names, aliases, features, generic targets") {
  using ot::target::find_processor;
  REQUIRE(find_processor("fiji") != nullptr);
  CHECK(find_processor("fiji")->name == "gfx803");
  CHECK(find_processor("polaris11")->name == "gfx803");
  CHECK(find_processor("stoney")->name == "gfx810");
  CHECK(find_processor("gfx90a")->xnack);
  CHECK(find_processor("gfx90a")->sramecc);
  CHECK_FALSE(find_processor("gfx90c")->sramecc);
  CHECK_FALSE(find_processor("gfx1100")->xnack);
  CHECK(find_processor("gfx9-generic")->xnack);
  CHECK_FALSE(find_processor("gfx9-generic")->sramecc);  // "sramecc is not available on gfx906" in generic code
  CHECK(find_processor("gfx9-4-generic")->sramecc);
  CHECK(find_processor("gfx9-4-generic")->since_llvm == 20);
  CHECK(find_processor("gfx999") == nullptr);
  CHECK(find_processor("") == nullptr);

  auto names = [](std::string_view generic) {
    std::string out;
    for (const auto* p : ot::target::generic_members(generic)) out += std::string(p->name) + " ";
    return out;
  };
  CHECK(names("gfx9-generic") == "gfx900 gfx902 gfx904 gfx906 gfx909 gfx90c ");
  CHECK(names("gfx9-4-generic") == "gfx940 gfx941 gfx942 gfx950 ");
  CHECK(names("gfx10-1-generic") == "gfx1010 gfx1011 gfx1012 gfx1013 ");
  CHECK(names("gfx10-3-generic") == "gfx1030 gfx1031 gfx1032 gfx1033 gfx1034 gfx1035 gfx1036 ");
  CHECK(names("gfx11-generic") == "gfx1100 gfx1101 gfx1102 gfx1103 gfx1150 gfx1151 gfx1152 gfx1153 gfx1154 ");
  // LLVM 23's families (its AMDGPU subarch table): gfx1170 is not gfx11-generic's.
  CHECK(names("gfx11-7-generic") == "gfx1170 gfx1171 gfx1172 ");
  CHECK(names("gfx12-generic") == "gfx1200 gfx1201 ");
  CHECK(names("gfx12-5-generic") == "gfx1250 gfx1251 ");
  CHECK(names("gfx13-generic") == "gfx1310 ");
  CHECK(names("gfx908").empty());

  // The two views agree on every name LLVM 19 knows (features included), and
  // LLVM 19 knows exactly the entries without a newer since_llvm.
  for (const auto& p : ot::target::amdgpu_processors()) {
    CAPTURE(p.name);
    const auto* old = ot::target::find_amdgpu_processor(p.name);
    CHECK((old != nullptr) == (p.since_llvm == 0));
    if (old) {
      CHECK(old->xnack == p.xnack);
      CHECK(old->sramecc == p.sramecc);
      CHECK(old->aliases == p.aliases);
    }
  }
}

TEST_CASE("gfx_target_version and NVPTX names") {
  CHECK(ot::target::gfx_name_from_version(90010) == "gfx90a");
  CHECK(ot::target::gfx_name_from_version(90012) == "gfx90c");
  CHECK(ot::target::gfx_name_from_version(90402) == "gfx942");
  CHECK(ot::target::gfx_name_from_version(110501) == "gfx1151");
  CHECK(ot::target::gfx_name_from_version(100300) == "gfx1030");
  CHECK(ot::target::gfx_name_from_version(0).empty());
  CHECK(ot::target::gfx_name_from_version(91000).empty());  // minor 10
  auto sm = ot::target::parse_nvptx_arch("sm_90a");
  REQUIRE(sm);
  CHECK(sm->major == 9);
  CHECK(sm->arch_specific);
  CHECK(sm->known_to_llvm19);
  auto c = ot::target::parse_nvptx_arch("compute_100");
  REQUIRE(c);
  CHECK(c->is_virtual);
  CHECK(c->major == 10);
  CHECK_FALSE(c->known_to_llvm19);
  CHECK_FALSE(ot::target::parse_nvptx_arch("sm_"));
  CHECK_FALSE(ot::target::parse_nvptx_arch("sm_7x"));
  CHECK_FALSE(ot::target::parse_nvptx_arch("gfx906"));
}

TEST_CASE("canonical spellings") {
  struct Case {
    const char* given;
    const char* canonical;
  };
  const Case cases[] = {
      {"gfx90a:xnack+:sramecc-", "gfx90a:sramecc-:xnack+"},
      {"fiji", "gfx803"},
      {"carrizo:xnack-", "gfx801:xnack-"},
      {"gfx10-3-generic", "gfx10-3-generic"},
      {"sm_70", "sm_70"},
      {"hip-amdgcn-amd-amdhsa-gfx906:xnack+:sramecc+", "hip-amdgcn-amd-amdhsa--gfx906:sramecc+:xnack+"},
      {"hip-amdgcn-amd-amdhsa--gfx9-generic", "hip-amdgcn-amd-amdhsa--gfx9-generic"},
      {"hip-amdgcn-amd-amdhsa-gfx9-generic:xnack-", "hip-amdgcn-amd-amdhsa--gfx9-generic:xnack-"},
      {"hip-amdgcn-amd-amdhsa-unknown-tongapro", "hip-amdgcn-amd-amdhsa-unknown-gfx805"},
      {"openmp-nvptx64-nvidia-cuda-sm_70", "openmp-nvptx64-nvidia-cuda--sm_70"},
      {"openmp-x86_64-pc-linux-gnu", "openmp-x86_64-pc-linux-gnu-"},
      {"host-x86_64-unknown-linux-gnu-", "host-x86_64-unknown-linux-gnu-"},
      {"hip-amdgcn-amd-amdhsa--", "hip-amdgcn-amd-amdhsa--"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.given);
    CHECK(parse_spec(c.given).canonical() == c.canonical);
  }
  // Where LLVM 19 understands the ID, its standardised form is the canonical one.
  CHECK(parse_spec("hip-amdgcn-amd-amdhsa-gfx900").canonical() == "hip-amdgcn-amd-amdhsa--gfx900");
}

TEST_CASE("malformed and unknown target IDs say what is wrong") {
  CHECK(error_of("gfx999") == "'gfx999': unknown processor 'gfx999' (did you mean 'gfx909'?)");
  CHECK(error_of("GFX90A") == "'GFX90A': unknown processor 'GFX90A' (names are lower case: did you mean 'gfx90a'?)");
  CHECK(error_of("gfx90a:xnack") ==
        "'gfx90a:xnack': feature 'xnack' needs a sign: 'xnack+' (on) or 'xnack-' (off); leave it out for any");
  CHECK(error_of("gfx90a:foo+") == "'gfx90a:foo+': unknown feature 'foo' (target-ID features are sramecc and xnack)");
  CHECK(error_of("gfx90a:foo") == "'gfx90a:foo': feature 'foo' must end in '+' (on) or '-' (off)");
  CHECK(error_of("gfx1030:xnack+") == "'gfx1030:xnack+': gfx1030 does not support the xnack feature (its features: none)");
  CHECK(error_of("gfx90c:sramecc+") ==
        "'gfx90c:sramecc+': gfx90c does not support the sramecc feature (its features: xnack)");
  CHECK(error_of("gfx9-generic:sramecc-") ==
        "'gfx9-generic:sramecc-': gfx9-generic does not support the sramecc feature (its features: xnack)");
  CHECK(error_of("gfx906:xnack+:xnack-") == "'gfx906:xnack+:xnack-': feature 'xnack' is given twice");
  CHECK(error_of("gfx906::xnack+") == "'gfx906::xnack+': empty feature (two ':' in a row, or a trailing ':')");
  CHECK(error_of(":xnack+") == "':xnack+': the target ID has no processor before its first ':'");
  CHECK(error_of("sm_70:xnack+") ==
        "'sm_70:xnack+': 'sm_70' takes no target-ID features (only AMDGPU processors have xnack and sramecc)");
  CHECK(error_of("cuda2-nvptx64-nvidia-cuda--sm_70") ==
        "'cuda2-nvptx64-nvidia-cuda--sm_70': unknown offload kind 'cuda2' (host, hip, hipv4, openmp, cuda)");
  CHECK(error_of("hip-amdgcn-amd-amdhsa--sm_70") ==
        "'hip-amdgcn-amd-amdhsa--sm_70': 'sm_70' is an NVPTX architecture, not an AMDGPU processor");
  CHECK(error_of("hip-foo-amd-amdhsa--gfx906") ==
        "'hip-foo-amd-amdhsa--gfx906': unknown architecture 'foo' in the triple 'foo-amd-amdhsa-'");
  CHECK(error_of("host-x86_64-unknown-linux-gnu-gfx906") ==
        "'host-x86_64-unknown-linux-gnu-gfx906': a host entry takes no target ID");
  CHECK(error_of("") == "empty target");
}

TEST_CASE("runtime rules: any/on/off, generic targets, kinds") {
  CHECK(compatible("gfx906", "gfx906:xnack+"));
  CHECK(compatible("gfx906", "gfx906:xnack-:sramecc+"));
  CHECK(compatible("gfx906:xnack+", "gfx906:sramecc-:xnack+"));
  CHECK_FALSE(compatible("gfx906:xnack+", "gfx906:xnack-"));
  CHECK_FALSE(compatible("gfx906:xnack+", "gfx906"));  // the target's setting is unknown
  CHECK(compatible("fiji", "gfx803"));
  CHECK(compatible("gfx9-generic", "gfx906"));
  CHECK(compatible("gfx9-generic:xnack-", "gfx90c:xnack-"));
  CHECK_FALSE(compatible("gfx9-generic", "gfx908"));
  CHECK_FALSE(compatible("gfx9-generic", "gfx90a"));
  CHECK(compatible("gfx11-generic", "gfx1151"));
  CHECK(compatible("gfx10-3-generic", "gfx1036"));
  CHECK_FALSE(compatible("gfx10-3-generic", "gfx1010"));
  CHECK_FALSE(compatible("gfx906", "gfx9-generic"));
  CHECK(compatible("hipv4-amdgcn-amd-amdhsa--gfx906", "hip-amdgcn-amd-amdhsa--gfx906"));
  CHECK_FALSE(compatible("hip-amdgcn-amd-amdhsa--gfx906", "openmp-amdgcn-amd-amdhsa--gfx906"));
  CHECK(compatible("hip-amdgcn-amd-amdhsa--gfx906", "gfx906"));
  CHECK_FALSE(compatible("openmp-nvptx64-nvidia-cuda--sm_70", "gfx906"));
  // CUDA: cubins run on the same major version, PTX on anything newer, sm_90a only on sm_90.
  CHECK(compatible("sm_80", "sm_86"));
  CHECK_FALSE(compatible("sm_86", "sm_80"));
  CHECK_FALSE(compatible("sm_75", "sm_80"));
  CHECK(compatible("compute_70", "sm_89"));
  // The target is a GPU: an sm_90a cubin runs on a 9.0 GPU, however the target
  // is spelled (this said it did not on "sm_90" before).
  CHECK(compatible("sm_90a", "sm_90"));
  CHECK(compatible("sm_90a", "sm_90a"));
  CHECK_FALSE(compatible("sm_90a", "sm_100"));
  CHECK_FALSE(compatible("compute_90a", "sm_100"));
  CHECK(compatible("compute_90a", "sm_90"));
  // Family-specific targets (CUDA 12.9): the family, same major, minor not below.
  CHECK(compatible("sm_100f", "sm_103"));
  CHECK(compatible("compute_100f", "sm_103"));
  CHECK_FALSE(compatible("sm_103f", "sm_100"));
  CHECK_FALSE(compatible("sm_100f", "sm_110"));
  CHECK_FALSE(compatible("compute_100f", "sm_120"));
  CHECK(compatible("compute_100", "sm_120"));
}

TEST_CASE("CUDA: the driver's order, nearest cubin first, then the newest PTX") {
  auto distance = [](const char* code, const char* gpu) { return check(parse_spec(code), parse_spec(gpu)).distance; };
  CHECK(distance("sm_86", "sm_86") == 0);
  CHECK(distance("sm_80", "sm_86") == 6);
  CHECK(distance("sm_80", "sm_86") < distance("compute_86", "sm_86"));  // our rule: a cubin before PTX
  CHECK(distance("compute_86", "sm_89") < distance("compute_80", "sm_89"));
  CHECK(distance("sm_100f", "sm_103") == 3);
}

TEST_CASE("explanation trace: each rule and its verdict") {
  auto r = check(parse_spec("hip-amdgcn-amd-amdhsa--gfx90a:xnack+"), parse_spec("gfx90a:xnack-"));
  CHECK_FALSE(r.compatible);
  REQUIRE(r.steps.size() == 5);
  CHECK(r.steps[0].rule == "kind");
  CHECK(r.steps[0].verdict == "skip");
  CHECK(r.steps[1].rule == "triple");
  CHECK(r.steps[1].verdict == "pass");
  CHECK(r.steps[2].rule == "processor");
  CHECK(r.steps[2].detail == "gfx90a");
  CHECK(r.steps[3].rule == "sramecc");
  CHECK(r.steps[3].verdict == "pass");
  CHECK(r.steps[4].rule == "xnack");
  CHECK(r.steps[4].verdict == "fail");
  CHECK(r.reason() == "the code object needs xnack on, the target runs with xnack off");

  auto g = check(parse_spec("gfx9-generic"), parse_spec("gfx906:xnack+"));
  CHECK(g.compatible);
  CHECK(g.generic);
  CHECK(g.features_any == 1);
  CHECK(g.steps[2].detail ==
        "the generic target gfx9-generic covers gfx906 (code object v6; LLVM 19's bundler does not apply this rule)");
}

TEST_CASE("bundler rules are LLVM 19's isCodeObjectCompatible") {
  using ot::compat::Rules;
  // LLVM 19 reads "...--gfx9-generic" with target ID "generic": nothing but an exact match.
  CHECK_FALSE(compatible("hip-amdgcn-amd-amdhsa--gfx9-generic", "hip-amdgcn-amd-amdhsa--gfx906", Rules::Bundler));
  CHECK(compatible("hip-amdgcn-amd-amdhsa--gfx9-generic", "hip-amdgcn-amd-amdhsa--gfx9-generic", Rules::Bundler));
  CHECK(compatible("gfx906", "gfx906:xnack+", Rules::Bundler));
  CHECK_FALSE(compatible("gfx906:xnack+", "gfx906", Rules::Bundler));
  CHECK_FALSE(compatible("sm_80", "sm_86", Rules::Bundler));  // plain string comparison
  auto r = check(parse_spec("hip-amdgcn-amd-amdhsa--gfx9-generic"), parse_spec("hip-amdgcn-amd-amdhsa--gfx906"),
                 {Rules::Bundler, false});
  CHECK(r.reason() == "LLVM 19 cannot parse 'generic' as a target ID for amdgcn-amd-amdhsa--gfx9");
}

TEST_CASE("bundler rules of LLVM 22: its bundle-ID parsing, the same compatibility rules") {
  using ot::compat::Rules;
  const ot::compat::CheckOptions b22{Rules::Bundler, false, ot::target::LlvmRelease::Llvm22};
  auto check22 = [&](std::string_view code, std::string_view target) {
    return check(parse_spec(code), parse_spec(target), b22);
  };
  // 22 reads "...--gfx9-generic" whole: an exact match only, as 19 (but it can parse it).
  CHECK(check22("hip-amdgcn-amd-amdhsa--gfx9-generic", "hip-amdgcn-amd-amdhsa--gfx9-generic").compatible);
  CHECK_FALSE(check22("hip-amdgcn-amd-amdhsa--gfx9-generic", "hip-amdgcn-amd-amdhsa--gfx906").compatible);
  // A 3-field ID loses its processor in 22 (it is the environment): nothing matches it; 19 reads gfx906.
  CHECK_FALSE(check22("hip-amdgcn-amd-amdhsa-gfx906", "hip-amdgcn-amd-amdhsa--gfx906").compatible);
  CHECK(compatible("hip-amdgcn-amd-amdhsa-gfx906", "hip-amdgcn-amd-amdhsa--gfx906", Rules::Bundler));
  // clang 22's spelling with an environment matches 19's and 22's written IDs.
  CHECK(check22("hip-amdgcn-amd-amdhsa--gfx906", "hip-amdgcn-amd-amdhsa-unknown-gfx906:xnack+").compatible);
  CHECK(check22("gfx906", "gfx906:xnack+").compatible);
  CHECK(check22("gfx906", "gfx906").steps[0].detail.starts_with("LLVM 22 reads the code object as "));
}

TEST_CASE("ISA names as comgr and the HIP runtime write them stand for their target ID") {
  auto s = parse_spec("amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-");
  CHECK_FALSE(s.bundle_id);
  CHECK(s.target_id() == "gfx906:sramecc+:xnack-");
  CHECK(s.canonical() == "gfx906:sramecc+:xnack-");
  CHECK(s.triple == "amdgcn-amd-amdhsa-");
  CHECK(parse_spec("amdgcn-amd-amdhsa--gfx90a").processor == "gfx90a");
  CHECK(compatible("hipv4-amdgcn-amd-amdhsa--gfx906", "amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-"));
  CHECK_FALSE(compatible("hipv4-amdgcn-amd-amdhsa--gfx906:sramecc-", "amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-"));
  CHECK(compatible("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"));
  CHECK(error_of("amdgcn-amd-amdhsa--") == "'amdgcn-amd-amdhsa--': the ISA name has no target ID after 'amdgcn-amd-amdhsa--'");
  CHECK(error_of("amdgcn-amd-amdhsa--sm_70").find("NVPTX architecture, not an AMDGPU processor") != std::string::npos);
  CHECK(error_of("amdgcn-amd-amdhsa--gfx906:xnack") != "");
}

TEST_CASE("offload_bundle_id: an OffloadBinary entry with the triple in 4 fields, so that its arch stays whole") {
  auto entry = [](ot::formats::OffloadKind kind, std::string triple, std::string arch) {
    ot::formats::OffloadEntry e;
    e.offload_kind = static_cast<std::uint16_t>(kind);
    e.strings = {{"triple", std::move(triple)}, {"arch", std::move(arch)}};
    return e;
  };
  using K = ot::formats::OffloadKind;
  auto xnack = entry(K::OpenMP, "amdgcn-amd-amdhsa", "gfx90a:xnack-");
  CHECK(xnack.id() == "openmp-amdgcn-amd-amdhsa-gfx90a:xnack-");
  CHECK(ot::compat::offload_bundle_id(xnack) == "openmp-amdgcn-amd-amdhsa--gfx90a:xnack-");
  auto spec = parse_spec(ot::compat::offload_bundle_id(xnack));
  CHECK(spec.processor == "gfx90a");
  CHECK(spec.feature_setting("xnack") == "off");
  CHECK(ot::compat::offload_bundle_id(entry(K::Cuda, "nvptx64-nvidia-cuda", "sm_70")) == "cuda-nvptx64-nvidia-cuda--sm_70");
  // hip as 19 (3) and 22 (4) number it
  CHECK(ot::compat::offload_bundle_id(entry(K{3}, "x86_64-unknown-linux-gnu", "")) == "hip-x86_64-unknown-linux-gnu-");
  CHECK(ot::compat::offload_bundle_id(entry(K{4}, "x86_64-unknown-linux-gnu", "")) == "hip-x86_64-unknown-linux-gnu-");
}

TEST_CASE("parse_spec_list: comma-separated lists, every form, the parser's errors") {
  auto specs = ot::compat::parse_spec_list({"gfx90a,sm_80", "hip-amdgcn-amd-amdhsa--gfx1100", "gfx9-generic,compute_80"});
  REQUIRE(specs.size() == 5);
  CHECK(specs[0].processor == "gfx90a");
  CHECK(specs[1].family == ot::compat::Family::Nvptx);
  CHECK(specs[2].bundle_id);
  CHECK(specs[3].is_generic());
  CHECK(specs[4].processor == "compute_80");
  CHECK_THROWS_WITH_AS(ot::compat::parse_spec_list({"gfx90a,,sm_80"}), "empty target", ot::Error);
  CHECK_THROWS_WITH_AS(ot::compat::parse_spec_list({"gfx90a,gfx9000"}),
                       doctest::Contains("'gfx9000': unknown processor 'gfx9000'"), ot::Error);
}

TEST_CASE("is_of_target: exactly that target; a feature left out is any setting") {
  auto of = [](std::string_view t, std::string_view e) { return ot::compat::is_of_target(parse_spec(t), parse_spec(e)); };
  CHECK(of("gfx90a", "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"));
  CHECK(of("gfx90a", "openmp-amdgcn-amd-amdhsa--gfx90a"));
  CHECK(of("gfx90a:xnack-", "hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"));
  CHECK_FALSE(of("gfx90a:xnack-", "hipv4-amdgcn-amd-amdhsa--gfx90a"));
  CHECK_FALSE(of("gfx90a:xnack-", "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"));
  CHECK_FALSE(of("gfx9-generic", "hipv4-amdgcn-amd-amdhsa--gfx90a"));
  CHECK_FALSE(of("gfx90a", "hipv4-amdgcn-amd-amdhsa--gfx9-generic"));
  CHECK(of("fiji", "gfx803"));
  CHECK(of("sm_80", "sm_80"));
  CHECK_FALSE(of("sm_80", "sm_86"));
  CHECK_FALSE(of("sm_90", "sm_90a"));
  CHECK_FALSE(of("sm_80", "compute_80"));
  CHECK_FALSE(of("gfx90a", "host-x86_64-unknown-linux-gnu"));
}
