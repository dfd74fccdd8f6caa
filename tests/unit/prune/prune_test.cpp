#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../bundle_builder.h"
#include "../test_files.h"
#include "compat/target_spec.h"
#include "compress/ccob.h"
#include "formats/bundle_binary.h"
#include "formats/bundle_sequence.h"
#include "object/elf_types.h"
#include "object/elf_writer.h"
#include "object/object_file.h"
#include "prune/prune.h"
#include "support/mapped_file.h"
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

// ---------------------------------------------------------------------------
// Relocatable objects (the CLI suite checks clang 19's objects with LLVM's
// tools and the linkers; these pin the moving of symbols and addends).

namespace {

std::vector<std::byte> test_bundle(std::uint8_t seed) {
  std::vector<std::byte> a(3000, std::byte{seed}), b(3000, std::byte(seed + 1));
  return test::assemble_binary({"host-x86_64-unknown-linux-gnu-", "hip-amdgcn-amd-amdhsa--gfx906",
                                "hip-amdgcn-amd-amdhsa--gfx90a"},
                               {{}, a, b}, 1);
}

// .hip_fatbin holding two bundles (the second at 0x2000), a symbol at each and
// .data pointing at each: one through the symbol, one as "first + 0x2000".
std::vector<std::byte> two_bundle_object(const object::ElfTarget& target, std::uint32_t abs_type) {
  object::RelocatableObject obj;
  std::vector<std::byte> fatbin = test_bundle(1);
  fatbin.resize(0x2000);
  std::vector<std::byte> second = test_bundle(3);
  fatbin.insert(fatbin.end(), second.begin(), second.end());
  const std::uint32_t fb = obj.add_section({".hip_fatbin", object::SectionKind::ReadOnly, 4096,
                                             {object::Chunk::owned(fatbin)}});
  const std::uint32_t data = obj.add_section({".data", object::SectionKind::Data, 8,
                                               {object::Chunk::zeros(target.is64 ? 24 : 12)}});
  const std::uint32_t first = obj.add_symbol({"first", static_cast<std::int32_t>(fb), 0});
  const std::uint32_t two =
      obj.add_symbol({"second", static_cast<std::int32_t>(fb), 0x2000, 0, object::Binding::Global});
  const std::uint64_t w = target.is64 ? 8 : 4;
  obj.relocs.push_back({data, 0, abs_type, first, 0});
  obj.relocs.push_back({data, w, abs_type, two, 0});
  obj.relocs.push_back({data, 2 * w, abs_type, first, 0x2000});
  return object::write_elf(obj, target).flatten();
}

}  // namespace

TEST_CASE("relocatable object: the bundles of .hip_fatbin packed, symbols and RELA addends moved with them") {
  auto in = InputFile::from_memory("t.o", two_bundle_object({true, false, object::kEmX86_64, 0, true},
                                                            object::elf::R_X86_64_64));
  std::vector<std::byte> out;
  auto sink = [&](Bytes b) { out.insert(out.end(), b.begin(), b.end()); };
  prune::Report r = prune::prune_file(*in, keep({"gfx906"}), "t.o", sink);
  CHECK(r.container == "relocatable object (ELF)");
  REQUIRE(r.entries.size() == 6);
  CHECK(r.entries[4].where == "section .hip_fatbin, bundle 2 at 0x2000");
  CHECK(r.dropped() == 2);
  CHECK(r.size_after == out.size());

  using E = object::elf::Elf64LE;
  auto f = object::ElfFile<E>::parse(out, "out");
  std::size_t fb = 0, rela = 0, symtab = 0;
  for (std::size_t i = 0; i < f.names.size(); ++i) {
    if (f.names[i] == ".hip_fatbin") fb = i;
    if (f.names[i] == ".rela.data") rela = i;
    if (f.names[i] == ".symtab") symtab = i;
  }
  REQUIRE((fb != 0 && rela != 0 && symtab != 0));
  CHECK(f.shdrs[fb].sh_offset % 4096 == 0);
  auto spans = formats::split_bundles(f.contents(fb), "fb");
  REQUIRE(spans.size() == 2);
  CHECK(spans[1].offset == 0x1000);  // each bundle now ~0xc00 bytes, at the section's alignment
  for (const auto& s : spans) {
    auto entries = formats::read_binary_bundle(f.contents(fb).subspan(s.offset, s.size), "b");
    REQUIRE(entries.size() == 2);
    CHECK(entries[1].id == "hip-amdgcn-amd-amdhsa--gfx906");
  }
  // every pointer lands on its bundle: symbol value + addend
  ByteReader syms(f.contents(symtab), "syms"), rels(f.contents(rela), "rels");
  std::vector<std::uint64_t> places;
  for (std::uint64_t k = 0; k < 3; ++k) {
    auto rel = rels.read<object::elf::ElfRela<E>>(k * 24, "rela");
    auto sym = syms.read<object::elf::ElfSym<E>>(object::elf::r_sym<E>(rel.r_info, object::kEmX86_64) * 24, "sym");
    places.push_back(sym.st_value + static_cast<std::uint64_t>(static_cast<std::int64_t>(rel.r_addend)));
  }
  CHECK(places == std::vector<std::uint64_t>{0, 0x1000, 0x1000});
}

TEST_CASE("relocatable object: what cannot be moved is refused, nothing reaches the sink") {
  std::vector<std::byte> out;
  auto sink = [&](Bytes b) { out.insert(out.end(), b.begin(), b.end()); };
  // i386: the addend lives in .data (SHT_REL)
  auto rel = InputFile::from_memory("r.o", two_bundle_object({false, false, object::kEmI386, 0, false},
                                                             object::elf::R_386_32));
  CHECK_THROWS_WITH_AS(prune::prune_file(*rel, keep({"gfx906"}), "r.o", sink),
                       doctest::Contains("whose contents move, with its addend in the relocated section (SHT_REL)"),
                       Error);
  // nothing dropped: the object as it was, whatever its relocations
  std::vector<std::byte> same;
  prune::prune_file(*rel, keep({"gfx906", "gfx90a"}), "r.o",
                    [&](Bytes b) { same.insert(same.end(), b.begin(), b.end()); });
  CHECK(same == std::vector<std::byte>(rel->bytes().begin(), rel->bytes().end()));
  CHECK(out.empty());
}
