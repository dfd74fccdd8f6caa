#include "formats/llvm_string_table.h"

#include <doctest/doctest.h>

using ot::formats::ElfStringTable;

TEST_CASE("ELF string table: LLVM's order, tail sharing, leading NUL") {
  // The worked example of llvm-behaviour.md 3.2, as written by clang-offload-packager 19.
  ElfStringTable t;
  for (const char* s : {"arch", "gfx908", "triple", "amdgcn-amd-amdhsa", "foo", "bar,baz"}) t.add(s);
  t.finalize();
  CHECK(t.data() == std::string("\0bar,baz\0foo\0arch\0triple\0amdgcn-amd-amdhsa\0gfx908\0", 50));
  CHECK(t.offset("bar,baz") == 1);
  CHECK(t.offset("gfx908") == 43);
}

TEST_CASE("ELF string table: suffixes share the tail, the empty string is 0") {
  ElfStringTable t;
  for (const char* s : {"x", "", "triple", "foo", "bar", "le", "ple"}) t.add(s);
  t.finalize();
  // Observed y.bin of llvm19-packager-cli.txt holds "\0x\0bar\0foo\0triple\0" for {x, bar, foo, triple, ""}.
  CHECK(t.data() == std::string("\0x\0bar\0foo\0triple\0", 18));
  CHECK(t.offset("") == 0);
  CHECK(t.offset("triple") == 11);
  CHECK(t.offset("ple") == 14);
  CHECK(t.offset("le") == 15);
}

TEST_CASE("ELF string table: independent of insertion order, bytes compared unsigned") {
  ElfStringTable a, b;
  for (const char* s : {"\xff", "a", "ba", "\x01"}) a.add(s);
  for (const char* s : {"\x01", "ba", "a", "\xff"}) b.add(s);
  a.finalize();
  b.finalize();
  CHECK(a.data() == b.data());
  CHECK(a.data() == std::string("\0\xff\0ba\0\x01\0", 8));
  CHECK(a.offset("a") == 4);
}
