#include <doctest/doctest.h>

#include "contents/walker.h"
#include "formats/bundle_binary.h"
#include "formats/offload_binary.h"
#include "selection/select.h"
#include "support/error.h"
#include "../test_files.h"

using namespace ot::compat;
using namespace ot::selection;
using ot::contents::collect;

namespace {

// A binary bundle with one-byte payloads (our writer; the CLI suite checks
// LLVM-written bundles).
std::vector<std::byte> bundle(std::vector<std::string> ids) {
  std::vector<std::uint64_t> sizes(ids.size(), 1);
  auto layout = ot::formats::layout_binary_bundle(ids, sizes, 1);
  std::vector<std::byte> out = layout.header;
  out.resize(layout.total_size, std::byte{'x'});
  return out;
}

Selection pick(const std::vector<std::string>& ids, const char* target) {
  auto data = bundle(ids);
  return select_entry(collect(data, "b.bc"), parse_spec(target));
}

std::string chosen_id(const Selection& s) { return s.chosen ? s.candidates[*s.chosen].entry.id : ""; }

}  // namespace

TEST_CASE("golden LLVM 19 bundles: entries of binary, compressed and text bundles") {
  auto hip2 = ot::test::golden("19-hip2.bc");
  auto c = collect(hip2, "19-hip2.bc");
  REQUIRE(c.size() == 1);
  REQUIRE(c[0].entries.size() == 2);
  CHECK(c[0].entries[0].id == "hip-amdgcn-amd-amdhsa--gfx900");
  CHECK(ot::contents::location(c[0].container, c[0].entries[1]) == "19-hip2.bc, bundle at 0x0, entry 1");

  auto z = ot::test::golden("19-hip2-compressed.bc");
  auto cz = collect(z, "z.bc");
  REQUIRE(cz.size() == 1);
  CHECK(cz[0].name() == "z.bc, compressed bundle at 0x0");
  CHECK(cz[0].entries.at(1).compressed);

  auto text = ot::test::golden("19-text.i");
  auto ct = collect(text, "t.i");
  REQUIRE(ct.size() == 1);
  CHECK(ct[0].entries.size() == 3);
  CHECK(ct[0].entries[2].id == "hip-amdgcn-amd-amdhsa--gfx900");
}

TEST_CASE("select: a specific processor before a generic target, exact features before any") {
  auto s = pick({"hip-amdgcn-amd-amdhsa--gfx9-generic", "hip-amdgcn-amd-amdhsa--gfx906", "host-x86_64-unknown-linux-gnu-"},
                "gfx906:xnack-");
  CHECK(chosen_id(s) == "hip-amdgcn-amd-amdhsa--gfx906");
  CHECK(s.candidates[0].verdict == "compatible");
  CHECK(s.candidates[0].reason ==
        "compatible, but hip-amdgcn-amd-amdhsa--gfx906 is a specific processor, preferred over a generic target");
  CHECK(s.candidates[2].reason == "host code, not a device code object");

  auto f = pick({"hip-amdgcn-amd-amdhsa--gfx90a", "hip-amdgcn-amd-amdhsa--gfx90a:xnack+"}, "gfx90a:xnack+");
  CHECK(chosen_id(f) == "hip-amdgcn-amd-amdhsa--gfx90a:xnack+");

  auto only_generic = pick({"hip-amdgcn-amd-amdhsa--gfx11-generic"}, "gfx1103");
  CHECK(chosen_id(only_generic) == "hip-amdgcn-amd-amdhsa--gfx11-generic");
}

TEST_CASE("select: nothing fits, every rejection explained, with a hint") {
  auto s = pick({"hip-amdgcn-amd-amdhsa--gfx90a:xnack+", "hip-amdgcn-amd-amdhsa--gfx1100"}, "gfx90a:xnack-");
  CHECK_FALSE(s.chosen);
  CHECK(s.candidates[0].reason == "the code object needs xnack on, the target runs with xnack off");
  CHECK(s.candidates[1].reason == "the code object is for gfx1100, the target is gfx90a");
  CHECK(s.hint ==
        "hip-amdgcn-amd-amdhsa--gfx90a:xnack+ is built for gfx90a:xnack+; run with HSA_XNACK=1 if the GPU allows it, "
        "or build gfx90a (any xnack) or gfx90a:xnack-");

  auto g = pick({"hip-amdgcn-amd-amdhsa--gfx1030"}, "gfx1031");
  CHECK(g.hint ==
        "build with --offload-arch=gfx1031, or with --offload-arch=gfx10-3-generic (code object v6, LLVM 19+), which "
        "serves gfx1030 gfx1031 gfx1032 gfx1033 gfx1034 gfx1035 gfx1036");
  auto bad = pick({"hip-amdgcn-amd-amdhsa--gfx999"}, "gfx906");
  CHECK(bad.candidates[0].reason == "'hip-amdgcn-amd-amdhsa--gfx999': unknown AMDGPU processor 'gfx999' (did you mean 'gfx909'?)");
}

TEST_CASE("verify: composition rules") {
  auto findings = [](std::vector<std::string> ids) {
    auto data = bundle(ids);
    return verify_containers(collect(data, "b.bc"));
  };
  CHECK(findings({"hip-amdgcn-amd-amdhsa--gfx906:xnack+", "hip-amdgcn-amd-amdhsa--gfx906:xnack-"}).empty());
  auto mixed = findings({"hip-amdgcn-amd-amdhsa--gfx906", "hip-amdgcn-amd-amdhsa--gfx906:xnack+"});
  REQUIRE(mixed.size() == 1);
  CHECK(mixed[0].rule == "mixed-features");
  CHECK(mixed[0].message ==
        "'hip-amdgcn-amd-amdhsa--gfx906' and 'hip-amdgcn-amd-amdhsa--gfx906:xnack+' mix xnack any with xnack on/off "
        "for gfx906; a runtime cannot tell which to load (LLVM's bundler refuses such targets as conflicting)");
  // The same target spelt two ways: a duplicate (and a non-canonical warning).
  auto dup = findings({"hip-amdgcn-amd-amdhsa--gfx906:xnack+:sramecc+", "hip-amdgcn-amd-amdhsa--gfx906:sramecc+:xnack+"});
  REQUIRE(dup.size() == 2);
  CHECK(dup[0].rule == "non-canonical");
  CHECK(dup[0].severity == "warning");
  CHECK(dup[1].rule == "duplicate-id");
  auto hosts = findings({"host-x86_64-unknown-linux-gnu-", "host-x86_64-pc-linux-gnu-"});
  REQUIRE(hosts.size() == 1);
  CHECK(hosts[0].message == "2 host entries; a bundle has at most one");
  auto invalid = findings({"hip-amdgcn-amd-amdhsa--gfx906:xnack"});
  REQUIRE(invalid.size() == 1);
  CHECK(invalid[0].rule == "invalid-id");

  // The exact same ID twice: the bundle reader refuses it; verify reports it.
  auto data = bundle({"hip-amdgcn-amd-amdhsa--gfx906", "hip-amdgcn-amd-amdhsa--gfx906"});
  auto c = collect(data, "d.bc");
  REQUIRE(c.size() == 1);
  CHECK(c[0].container.refused_duplicates == std::vector<std::string>{"hip-amdgcn-amd-amdhsa--gfx906"});
  auto f = verify_containers(c);
  REQUIRE(f.size() == 1);
  CHECK(f[0].message == "'hip-amdgcn-amd-amdhsa--gfx906' is stored twice");
  CHECK_THROWS_WITH_AS(select_entry(c, parse_spec("gfx906")),
                       "d.bc, bundle at 0x0: the bundle stores 'hip-amdgcn-amd-amdhsa--gfx906' twice (run 'compat verify')",
                       ot::Error);
}

TEST_CASE("offload binaries: an arch with features is read whole, and its stored ID is no bundle ID to warn about") {
  auto binary = [](const char* arch) {
    ot::formats::OffloadImageDesc d;
    d.image_kind = static_cast<std::uint16_t>(ot::formats::ImageKind::Object);
    d.offload_kind = static_cast<std::uint16_t>(ot::formats::OffloadKind::OpenMP);
    d.strings = {{"triple", "amdgcn-amd-amdhsa"}, {"arch", arch}};
    return ot::formats::write_offload_binary_v1(d, ot::as_bytes("x"));
  };
  auto xnack_off = binary("gfx90a:xnack-");
  auto c = collect(xnack_off, "dev.bin");
  auto s = select_entry(c, parse_spec("gfx90a:xnack-"));
  CHECK(chosen_id(s) == "openmp-amdgcn-amd-amdhsa-gfx90a:xnack-");
  REQUIRE(s.candidates[0].spec);
  CHECK(s.candidates[0].spec->canonical() == "openmp-amdgcn-amd-amdhsa--gfx90a:xnack-");
  auto on = select_entry(c, parse_spec("gfx90a:xnack+"));
  CHECK_FALSE(on.chosen);
  CHECK(on.candidates[0].reason == "the code object needs xnack off, the target runs with xnack on");
  CHECK(verify_containers(c).empty());
  // Features out of alphabetical order: what the packager was given, not an ID clang wrote.
  auto unordered = binary("gfx90a:xnack-:sramecc+");
  CHECK(verify_containers(collect(unordered, "u.bin")).empty());
}

TEST_CASE("malformed inputs: errors name the file and offset") {
  auto data = bundle({"hip-amdgcn-amd-amdhsa--gfx906"});
  data.resize(data.size() - 1);  // the payload now extends past the end
  CHECK_THROWS_WITH_AS(collect(data, "t.bc"),
                       "t.bc: bundle entry 0 ('hip-amdgcn-amd-amdhsa--gfx906') payload at 0x55 of 0x1 bytes extends past "
                       "the end of the file (0x55 bytes), at offset 0x20",
                       ot::Error);
  CHECK(collect(ot::test::bytes_of("plain text"), "p.txt").empty());
}
