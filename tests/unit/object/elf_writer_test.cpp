#include <doctest/doctest.h>

#include "object/elf_writer.h"

using namespace ot;
using namespace ot::object;

namespace {

std::vector<std::byte> bytes(std::initializer_list<unsigned> v) {
  std::vector<std::byte> out;
  for (unsigned b : v) out.push_back(static_cast<std::byte>(b));
  return out;
}

// .text (a call), .data.rel.ro (a pointer), one local, one global, one undefined.
RelocatableObject sample() {
  RelocatableObject o;
  o.source_name = "t.module";
  o.add_section(Section{".text.startup", SectionKind::Code, 16, {Chunk::owned(bytes({0xe8, 0, 0, 0, 0, 0xc3}))}, 0});
  o.add_section(Section{".data.rel.ro", SectionKind::RelRo, 8, {Chunk::zeros(8)}, 0});
  o.add_section(Section{".note.GNU-stack", SectionKind::GnuStack, 1, {}, 0});
  o.add_symbol(Symbol{"callee", kUndefined, 0, 0, Binding::Global});
  o.add_symbol(Symbol{"fn", 0, 0, 6, Binding::Local, SymbolType::Func});
  o.add_symbol(Symbol{"table", 1, 0, 8, Binding::Global, SymbolType::Object, true});
  o.relocs.push_back(Reloc{0, 1, 4, 0, -4});  // R_X86_64_PLT32 callee-4
  o.relocs.push_back(Reloc{1, 0, 1, 1, 0});   // R_X86_64_64 fn
  return o;
}

std::uint16_t u16(const std::vector<std::byte>& d, std::size_t at) { return load_le<std::uint16_t>(d.data() + at); }
std::uint32_t u32(const std::vector<std::byte>& d, std::size_t at) { return load_le<std::uint32_t>(d.data() + at); }
std::uint64_t u64(const std::vector<std::byte>& d, std::size_t at) { return load_le<std::uint64_t>(d.data() + at); }

struct Shdr {
  std::uint32_t name, type;
  std::uint64_t flags, offset, size;
  std::uint32_t link, info;
  std::uint64_t align, entsize;
};
Shdr shdr(const std::vector<std::byte>& d, unsigned i) {
  std::size_t at = u64(d, 0x28) + 64 * i;
  return {u32(d, at), u32(d, at + 4), u64(d, at + 8), u64(d, at + 24), u64(d, at + 32),
          u32(d, at + 40), u32(d, at + 44), u64(d, at + 48), u64(d, at + 56)};
}
std::string name(const std::vector<std::byte>& d, std::uint32_t off) {
  Shdr strtab = shdr(d, u16(d, 0x3e));
  return std::string(reinterpret_cast<const char*>(d.data() + strtab.offset + off));
}

}  // namespace

TEST_CASE("ELF64 relocatable: header, sections, symbols and RELA entries") {
  auto d = write_elf(sample(), ElfTarget{true, false, kEmX86_64, 0, true}).flatten();
  // e_ident, ET_REL, EM_X86_64, no program headers.
  CHECK(std::vector<std::byte>(d.begin(), d.begin() + 8) == bytes({0x7f, 'E', 'L', 'F', 2, 1, 1, 0}));
  CHECK(u16(d, 0x10) == 1);
  CHECK(u16(d, 0x12) == 62);
  CHECK(u16(d, 0x36) == 0);
  // null, 3 sections, 2 .rela, .symtab, .strtab
  REQUIRE(u16(d, 0x3c) == 8);
  CHECK(name(d, shdr(d, 1).name) == ".text.startup");
  CHECK(shdr(d, 1).flags == 6);  // SHF_ALLOC | SHF_EXECINSTR
  CHECK(shdr(d, 1).offset % 16 == 0);
  CHECK(name(d, shdr(d, 2).name) == ".data.rel.ro");
  CHECK(shdr(d, 2).flags == 3);  // SHF_WRITE | SHF_ALLOC
  CHECK(name(d, shdr(d, 3).name) == ".note.GNU-stack");
  CHECK(shdr(d, 3).flags == 0);
  Shdr rela = shdr(d, 4);
  CHECK(name(d, rela.name) == ".rela.text.startup");
  CHECK(rela.type == 4);
  CHECK(rela.link == 6);
  CHECK(rela.info == 1);
  CHECK(rela.entsize == 24);
  // Symbol order: null, file, local fn, then the globals in object order.
  Shdr symtab = shdr(d, 6);
  CHECK(symtab.info == 3);  // first global
  CHECK(symtab.size == 5 * 24);
  const std::size_t s = symtab.offset;
  CHECK(d[s + 24 + 4] == std::byte{0x04});     // STT_FILE, STB_LOCAL
  CHECK(d[s + 48 + 4] == std::byte{0x02});     // fn: STT_FUNC, STB_LOCAL
  CHECK(d[s + 72 + 4] == std::byte{0x10});     // callee: STB_GLOBAL
  CHECK(d[s + 96 + 4] == std::byte{0x11});     // table: STB_GLOBAL, STT_OBJECT
  CHECK(d[s + 96 + 5] == std::byte{0x02});     // STV_HIDDEN
  // The call's relocation names callee (symbol 3) with addend -4.
  CHECK(u64(d, rela.offset) == 1);
  CHECK(u64(d, rela.offset + 8) == (std::uint64_t{3} << 32 | 4));
  CHECK(static_cast<std::int64_t>(u64(d, rela.offset + 16)) == -4);
}

TEST_CASE("ELF output is the same for the same object") {
  CHECK(write_elf(sample(), ElfTarget{true, false, kEmAArch64, 0, true}).flatten() ==
        write_elf(sample(), ElfTarget{true, false, kEmAArch64, 0, true}).flatten());
}

TEST_CASE("ELF32 REL output keeps addends in place") {
  auto d = write_elf(sample(), ElfTarget{false, false, kEmI386, 0, false}).flatten();
  CHECK(d[4] == std::byte{1});  // ELFCLASS32
  const std::size_t shoff = u32(d, 0x20);
  const std::size_t text = u32(d, shoff + 40 + 16);
  CHECK(static_cast<std::int32_t>(u32(d, text + 1)) == -4);
}

TEST_CASE("ELF writer rejects dangling references") {
  RelocatableObject o = sample();
  o.relocs.push_back(Reloc{0, 0, 1, 99, 0});
  CHECK_THROWS_WITH_AS(write_elf(o, ElfTarget{}), "relocation refers to a missing symbol 99", Error);
  o = sample();
  o.symbols[1].section = 7;
  CHECK_THROWS_WITH_AS(write_elf(o, ElfTarget{}), "symbol 'fn' refers to a missing section", Error);
}
