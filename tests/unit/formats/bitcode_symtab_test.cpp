#include "formats/bitcode_symtab.h"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include "unit/archive/reference_data.h"

using namespace ot;
using formats::BitcodeSymbol;

namespace {

std::vector<std::byte> bitcode() {
  const auto* p = reinterpret_cast<const std::byte*>(testdata::kBitcode);
  return {p, p + sizeof testdata::kBitcode};
}

}  // namespace

TEST_CASE("the irsymtab of clang 19 bitcode") {
  auto st = formats::read_bitcode_symtab(bitcode(), "y.bc");
  REQUIRE(st);
  CHECK(st->producer == "19.1.7");
  CHECK(st->version == 3);
  std::vector<std::string> names;
  for (const auto& s : st->symbols) names.push_back(s.name);
  // llvm-dis y.bc: functions, then variables, in module order; the internal `counter` and the
  // external `u` too.
  CHECK(names == std::vector<std::string>{"f", "w", "use_local", "bump", "g", "u", "counter", "hid"});
  CHECK((st->symbols[0].flags & BitcodeSymbol::kGlobal) != 0);
  CHECK((st->symbols[1].flags & BitcodeSymbol::kWeak) != 0);
  CHECK((st->symbols[5].flags & BitcodeSymbol::kUndefined) != 0);
  CHECK((st->symbols[6].flags & BitcodeSymbol::kGlobal) == 0);
  CHECK((st->symbols[0].flags & BitcodeSymbol::kExecutable) != 0);
}

TEST_CASE("bitcode errors and files without a symbol table") {
  auto bc = bitcode();
  CHECK_THROWS_WITH_AS(formats::read_bitcode_symtab(Bytes(bc).first(40), "y.bc"),
                       "y.bc: bitcode block of 0x308 words extends past the end, at offset 0x28", Error);
  CHECK_FALSE(formats::read_bitcode_symtab(as_bytes("BC\xC0\xDE"), "e.bc"));
  CHECK_THROWS_WITH_AS(formats::read_bitcode_symtab(as_bytes("plain"), "p"), "p: not an LLVM bitcode file, at offset 0x0", Error);
  // A wrapper header around the same bitcode.
  std::vector<std::byte> w(20);
  const char magic[] = "\xDE\xC0\x17\x0B";
  std::memcpy(w.data(), magic, 4);
  store_le<std::uint32_t>(w.data() + 8, 20);
  store_le<std::uint32_t>(w.data() + 12, static_cast<std::uint32_t>(bc.size()));
  w.insert(w.end(), bc.begin(), bc.end());
  auto st = formats::read_bitcode_symtab(w, "w.bc");
  REQUIRE(st);
  CHECK(st->symbols.size() == 8);
}
