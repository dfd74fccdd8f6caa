// contents/kpack_search against the loader rules of AMD's rocm-kpack
// (runtime/src/loader.cpp, isa_target_match.h at e3483286), copied here as facts:
// feature subsets by a mask counted down from all ones, features dropped from
// the right first; the generic target after; relative paths from the binary's
// folder; ROCM_KPACK_PATH alone when set; ROCM_KPACK_PATH_PREFIX first.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "contents/kpack_search.h"
#include "object/kpack_records.h"
#include "support/error.h"

namespace ot::contents {

TEST_CASE("kpack_arch_order: the loader's example and the generic target") {
  // AMD's example (isa_target_match.h): all four subsets of gfx942:sramecc+:xnack-.
  const std::vector<std::string> g942 = kpack_arch_order("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-");
  REQUIRE(g942.size() >= 4);
  CHECK(std::vector<std::string>(g942.begin(), g942.begin() + 4) ==
        std::vector<std::string>{"gfx942:sramecc+:xnack-", "gfx942:sramecc+", "gfx942:xnack-", "gfx942"});
  // TargetToGeneric: gfx1103 -> gfx11-generic; no gfx1100 fallback for gfx1101.
  CHECK(kpack_arch_order("gfx1103") == std::vector<std::string>{"gfx1103", "gfx11-generic"});
  CHECK(kpack_arch_order("gfx1101") == std::vector<std::string>{"gfx1101", "gfx11-generic"});
  CHECK(kpack_arch_order("gfx1030") == std::vector<std::string>{"gfx1030", "gfx10-3-generic"});
  CHECK(kpack_arch_order("gfx1201") == std::vector<std::string>{"gfx1201", "gfx12-generic"});
  CHECK(kpack_arch_order("gfx90a:xnack-") == std::vector<std::string>{"gfx90a:xnack-", "gfx90a"});
}

TEST_CASE("kpack_candidates: the environment and the binary's folder") {
  const formats::KpackRef ref{{"../.kpack/blas_lib_@GFXARCH@.kpack", "/opt/abs_@GFXARCH@.kpack"}, "lib/librocblas.so.5"};
  CHECK(kpack_candidates(ref, "/opt/rocm/lib", {}) ==
        std::vector<std::string>{"/opt/rocm/.kpack/blas_lib_@GFXARCH@.kpack", "/opt/abs_@GFXARCH@.kpack"});
  KpackEnv prefix{false, {}, {"/p/x_@GFXARCH@.kpack"}};
  CHECK(kpack_candidates(ref, "/opt/rocm/lib", prefix).front() == "/p/x_@GFXARCH@.kpack");
  KpackEnv only{false, {"/only/a.kpack", "b.kpack"}, {"/p/x_@GFXARCH@.kpack"}};
  CHECK(kpack_candidates(ref, "/opt/rocm/lib", only) == std::vector<std::string>{"/only/a.kpack", "b.kpack"});
  KpackEnv off{true, {"/only/a.kpack"}, {}};
  CHECK(kpack_candidates(ref, "/opt/rocm/lib", off).empty());
}

TEST_CASE("kpack_glob: files fitting the pattern with a target ID, in name order") {
  char tmpl[] = "/tmp/kpack-glob-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::filesystem::path dir(tmpl);
  for (const char* n : {"k_gfx1100.kpack", "k_gfx90a:xnack-.kpack", "k_.kpack", "other_gfx1100.kpack", "k_gfx906.kpack.bak",
                        "k_gfx10-3-generic:sramecc+:xnack-.kpack",
                        "k_multi.kpack", "k_gfx.kpack", "k_gfx90a:xnack.kpack", "k_gfx90a::xnack+.kpack", "k_GFX90A.kpack"})
    std::ofstream(dir / n) << "x";
  std::filesystem::create_directory(dir / "k_dir.kpack");
  const std::vector<KpackFound> f = kpack_glob((dir / "k_@GFXARCH@.kpack").string());
  REQUIRE(f.size() == 3);
  CHECK(f[0].arch == "gfx10-3-generic:sramecc+:xnack-");
  CHECK(f[1].arch == "gfx1100");
  CHECK(f[2].arch == "gfx90a:xnack-");
  CHECK(f[2].path == (dir / "k_gfx90a:xnack-.kpack").string());
  CHECK(kpack_glob((dir / "k_gfx1100.kpack").string()).size() == 1);
  CHECK(kpack_glob((dir / "missing.kpack").string()).empty());
  std::filesystem::remove_all(dir);
}

}  // namespace ot::contents

namespace ot::object {

namespace {
std::vector<std::byte> records(std::initializer_list<std::pair<const char*, std::uint64_t>> rs) {
  std::vector<std::byte> out(rs.size() * 24);
  std::size_t i = 0;
  for (const auto& [magic, index] : rs) {
    std::memcpy(out.data() + i * 24, magic, 4);
    store_le<std::uint32_t>(out.data() + i * 24 + 4, 1);
    store_le<std::uint64_t>(out.data() + i * 24 + 16, index);
    ++i;
  }
  out.insert(out.end(), {std::byte{0x81}, std::byte{0xa1}, std::byte{'k'}, std::byte{0x01}});  // the "marker"
  return out;
}
std::string error_of(const std::vector<std::byte>& d, std::uint64_t seg_size) {
  const std::vector<SectionInfo> secs{{".hipFatBinSegment", 0, seg_size, true}, {".rocm_kpack_ref", d.size() - 4, 4, true}};
  try {
    find_kpack_records(d, secs, "lib.so");
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("kpack_records: HIPK records found, and records that lie") {
  const std::vector<std::byte> ok = records({{"HIPK", 0}, {"HIPK", 1}});
  const std::vector<SectionInfo> secs{{".hipFatBinSegment", 0, 48, true}, {".rocm_kpack_ref", 48, 4, true}};
  const std::optional<KpackedBinary> k = find_kpack_records(ok, secs, "lib.so");
  REQUIRE(k);
  CHECK(k->records.size() == 2);
  CHECK(k->records[1].index == 1);
  CHECK(k->records[1].offset == 24);
  CHECK(k->marker_offset == 48);
  CHECK_FALSE(find_kpack_records(records({{"FPIH", 0}}), {{".hipFatBinSegment", 0, 24, true}}, "lib.so"));
  CHECK(error_of(records({{"HIPK", 0}, {"HIPK", 5}}), 48) ==
        "lib.so: record 1 of .hipFatBinSegment has the index 5, past its 2 records, at offset 0x28");
  CHECK(error_of(records({{"HIPK", 1}, {"HIPK", 1}}), 48) ==
        "lib.so: record 1 of .hipFatBinSegment has the index 1, which another record has, at offset 0x28");
  CHECK(error_of(records({{"HIPK", 0}, {"XXXX", 1}}), 48) ==
        "lib.so: record 1 of .hipFatBinSegment has the magic 0x58585858, neither HIPF nor HIPK, at offset 0x18");
  CHECK(error_of(records({{"HIPK", 0}, {"HIPK", 1}}), 40) ==
        "lib.so: section .hipFatBinSegment (0x28 bytes) is not a whole number of 24-byte records, at offset 0x0");
  const std::vector<std::byte> d = records({{"HIPK", 0}});
  CHECK_THROWS_WITH_AS(find_kpack_records(d, {{".hipFatBinSegment", 0, 24, true}}, "lib.so"),
                       "lib.so: .hipFatBinSegment holds HIPK records but the file has no .rocm_kpack_ref section, at "
                       "offset 0x0",
                       Error);
}

}  // namespace ot::object
