#include <doctest/doctest.h>

#include "object/coff_writer.h"

using namespace ot;
using namespace ot::object;

namespace {

std::uint16_t u16(const std::vector<std::byte>& d, std::size_t at) { return load_le<std::uint16_t>(d.data() + at); }
std::uint32_t u32(const std::vector<std::byte>& d, std::size_t at) { return load_le<std::uint32_t>(d.data() + at); }

RelocatableObject sample() {
  RelocatableObject o;
  o.source_name = "offload.wrapper.module";  // 22 bytes: two auxiliary records
  o.add_section(Section{".text.startup", SectionKind::Code, 16, {Chunk::zeros(9)}, 0});
  o.add_section(Section{".rdata", SectionKind::RelRo, 16, {Chunk::zeros(8)}, 0});
  o.add_section(Section{".CRT$XCA00101", SectionKind::InitArray, 8, {Chunk::zeros(8)}, 0});
  o.add_section(Section{"omp_offloading_entries$OA", SectionKind::EntryTable, 8, {}, 0});
  o.add_section(Section{".note.GNU-stack", SectionKind::GnuStack, 1, {}, 0});  // not written on COFF
  o.add_symbol(Symbol{"callee", kUndefined, 0, 0, Binding::Global});                       // 0
  o.add_symbol(Symbol{".omp_offloading.descriptor_reg", 0, 0, 9, Binding::Local, SymbolType::Func});  // 1
  o.add_symbol(Symbol{".weak.__start_x.default", 3, 0, 0, Binding::Global});             // 2
  Symbol weak{"__start_x", kUndefined, 0, 0, Binding::Weak};
  weak.weak_default = 2;
  o.add_symbol(weak);                                                                     // 3
  o.relocs.push_back(Reloc{0, 5, kCoffRelAmd64Rel32, 0, -4});
  o.relocs.push_back(Reloc{1, 0, kCoffRelAmd64Addr64, 3, 0});
  o.relocs.push_back(Reloc{2, 0, kCoffRelAmd64Addr64, 1, 0});
  return o;
}

}  // namespace

TEST_CASE("COFF AMD64 object: header, long names, characteristics, relocations, weak externals") {
  auto d = write_coff(sample(), kCoffMachineAmd64).flatten();
  CHECK(u16(d, 0) == 0x8664);
  REQUIRE(u16(d, 2) == 4);   // .note.GNU-stack is left out
  CHECK(u32(d, 4) == 0);     // no timestamp
  CHECK(u16(d, 16) == 0);    // no optional header
  // 1 + 2 (.file) + 2 per section + callee, reg, default, weak + its aux record
  const std::uint32_t nsyms = u32(d, 12);
  CHECK(nsyms == 3 + 8 + 5);
  const std::size_t symtab = u32(d, 8), strtab = symtab + 18 * nsyms;
  auto section_name = [&](unsigned i) {
    std::string n(reinterpret_cast<const char*>(d.data() + 20 + 40 * i), 8);
    n = n.c_str();
    if (n[0] == '/') n = reinterpret_cast<const char*>(d.data() + strtab + std::stoul(n.substr(1)));
    return n;
  };
  CHECK(section_name(0) == ".text.startup");
  CHECK(section_name(1) == ".rdata");
  CHECK(section_name(2) == ".CRT$XCA00101");
  CHECK(section_name(3) == "omp_offloading_entries$OA");
  CHECK(u32(d, 20 + 36) == 0x60500020);        // code, align 16, execute, read
  CHECK(u32(d, 20 + 40 + 36) == 0x40500040);   // read-only data, align 16
  CHECK(u32(d, 20 + 80 + 36) == 0x40400040);   // .CRT$XC*: read-only, align 8
  CHECK(u32(d, 20 + 120 + 36) == 0x40400040);
  // The REL32 field holds A + 4 = 0; its relocation names symbol 'callee' (index 11).
  const std::size_t text = u32(d, 20 + 20), text_rel = u32(d, 20 + 24);
  CHECK(u32(d, text + 5) == 0);
  CHECK(u32(d, text_rel) == 5);
  CHECK(u32(d, text_rel + 4) == 11);
  CHECK(u16(d, text_rel + 8) == kCoffRelAmd64Rel32);
  // The weak external: class 105, one aux record naming its default (index 13) with search-alias.
  const std::size_t weak = symtab + 18 * 14;
  CHECK(d[weak + 16] == std::byte{105});
  CHECK(d[weak + 17] == std::byte{1});
  CHECK(u32(d, weak + 18) == 13);
  CHECK(u32(d, weak + 22) == 3);
  // The local function: static class, function type.
  const std::size_t fn = symtab + 18 * 12;
  CHECK(d[fn + 16] == std::byte{3});
  CHECK(u16(d, fn + 14) == 0x20);
}

TEST_CASE("COFF output is the same for the same object") {
  CHECK(write_coff(sample(), kCoffMachineAmd64).flatten() == write_coff(sample(), kCoffMachineAmd64).flatten());
}

TEST_CASE("COFF writer rejects a relocation outside the section's bytes") {
  RelocatableObject o = sample();
  o.relocs.push_back(Reloc{1, 6, kCoffRelAmd64Addr64, 1, 0});
  CHECK_THROWS_WITH_AS(write_coff(o, kCoffMachineAmd64),
                       ".rdata: relocation at offset 0x6 is not inside the section's own bytes", Error);
}
