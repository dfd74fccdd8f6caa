#include "archive/member_symbols.h"

#include <doctest/doctest.h>

#include <vector>

#include "unit/archive/reference_data.h"

using namespace ot;
using V = std::vector<std::string>;

namespace {

template <std::size_t N>
std::vector<std::byte> copy(const unsigned char (&a)[N]) {
  return {reinterpret_cast<const std::byte*>(a), reinterpret_cast<const std::byte*>(a) + N};
}

}  // namespace

// Expected lists: llvm-nm --print-armap of the llvm-ar archive in reference_data.h.
TEST_CASE("ELF: global and weak defined symbols, hidden and common included, in symbol table order") {
  CHECK(archive::archive_symbols(copy(testdata::kElfObject), "x.o") ==
        V{"foo", "wk", "hidden_g", "common_c", "abs_sym"});
}

TEST_CASE("bitcode: the stored symbol table, functions before variables") {
  CHECK(archive::archive_symbols(copy(testdata::kBitcode), "y.bc") == V{"f", "w", "use_local", "bump", "g", "hid"});
}

TEST_CASE("data that is no symbolic file has no symbols") {
  CHECK(archive::archive_symbols(as_bytes("plain text"), "t").empty());
  CHECK(archive::archive_symbols(as_bytes(""), "t").empty());
  // Bitcode whose symbol table cannot be read is a blob, as LLVM treats bitcode it cannot parse.
  auto bc = copy(testdata::kBitcode);
  bc.resize(64);
  CHECK(archive::archive_symbols(bc, "y.bc").empty());
}

TEST_CASE("a damaged ELF symbol table is an error") {
  auto elf = copy(testdata::kElfObject);
  // Point every symbol's name past the string table.
  const std::uint64_t shoff = load_le<std::uint64_t>(elf.data() + 0x28);
  const std::uint16_t shnum = load_le<std::uint16_t>(elf.data() + 0x3c);
  bool found = false;
  for (std::uint16_t i = 0; i < shnum; ++i) {
    std::byte* sh = elf.data() + shoff + i * 64u;
    if (load_le<std::uint32_t>(sh + 4) != 2) continue;  // SHT_SYMTAB
    const std::uint64_t off = load_le<std::uint64_t>(sh + 0x18), size = load_le<std::uint64_t>(sh + 0x20);
    for (std::uint64_t s = off + 24; s < off + size; s += 24) store_le<std::uint32_t>(elf.data() + s, 0xfffff);
    found = true;
  }
  REQUIRE(found);
  CHECK_THROWS_WITH_AS(archive::archive_symbols(elf, "x.o"),
                       "x.o: symbol 2 name offset 0xfffff is past the end of the string table, at offset 0x80",
                       Error);
}
