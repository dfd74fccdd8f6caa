#include "archive/ar_reader.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "unit/archive/reference_data.h"

using namespace ot;

namespace {

template <std::size_t N>
Bytes ref(const unsigned char (&a)[N]) {
  return {reinterpret_cast<const std::byte*>(a), N};
}

}  // namespace

TEST_CASE("members of an llvm-ar archive: symbol table skipped, views into the archive") {
  const Bytes a = ref(testdata::kSymArchive);
  auto m = archive::read_members(a, "sym.a");
  REQUIRE(m.size() == 3);
  CHECK(m[0].name == "x.o");
  CHECK(m[1].name == "y.bc");
  CHECK(m[2].name == "x.o");
  CHECK(m[0].data.data() == a.data() + m[0].offset);
  CHECK(std::equal(m[0].data.begin(), m[0].data.end(), ref(testdata::kElfObject).begin(), ref(testdata::kElfObject).end()));
  CHECK(std::equal(m[1].data.begin(), m[1].data.end(), ref(testdata::kBitcode).begin(), ref(testdata::kBitcode).end()));
}

TEST_CASE("long names, empty and odd-sized members (clang-offload-packager --archive)") {
  auto m = archive::read_members(ref(testdata::kPackagerArchive), "pk.a");
  REQUIRE(m.size() == 3);
  for (const auto& x : m) CHECK(x.name == "dir/multi.bin");
  CHECK(as_chars(m[0].data) == "abc");
  CHECK(as_chars(m[1].data) == "defg");
  CHECK(m[2].data.empty());
  CHECK(archive::read_members(ref(testdata::kSym64Archive), "sym64.a").size() == 1);
}

TEST_CASE("archive errors") {
  CHECK_THROWS_WITH_AS(archive::read_members(as_bytes("!<thin>\n"), "t.a"),
                       "t.a: thin archives are not supported (their members live in other files)", Error);
  CHECK_THROWS_WITH_AS(archive::read_members(as_bytes("!<arc>\n"), "t.a"),
                       "t.a: not an archive (no \"!<arch>\\n\" magic), at offset 0x0", Error);
  const Bytes a = ref(testdata::kPackagerArchiveShort);
  CHECK_THROWS_WITH_AS(archive::read_members(a.first(100), "t.a"), "t.a: truncated archive member header (0x1c bytes left, a header needs 0x3c), at offset 0x48",
                       Error);
  CHECK(archive::read_members(as_bytes("!<arch>\n"), "e.a").empty());
}

TEST_CASE("MemberReader: one member at a time, a damaged header failing only when reached") {
  const Bytes a = ref(testdata::kSymArchive);
  archive::MemberReader reader(a, "sym.a");
  std::vector<std::string> names;
  while (auto m = reader.next()) names.push_back(m->name);
  CHECK(names == std::vector<std::string>{"x.o", "y.bc", "x.o"});
  CHECK_FALSE(reader.next().has_value());  // and stays at the end

  // The first member is whole, the second header is cut short.
  const Bytes p = ref(testdata::kPackagerArchiveShort);
  const auto members = archive::read_members(p, "pk.a");
  REQUIRE(members.size() >= 2);
  const Bytes cut = p.first(members[1].header_offset + 30);
  archive::MemberReader partial(cut, "cut.a");
  auto first = partial.next();
  REQUIRE(first.has_value());
  CHECK(first->name == members[0].name);
  CHECK_THROWS_WITH_AS(partial.next(),
                       fmt::format("cut.a: truncated archive member header (0x1e bytes left, a header needs 0x3c), "
                                   "at offset 0x{:x}", members[1].header_offset)
                           .c_str(),
                       Error);
  // The magic is checked at once.
  CHECK_THROWS_AS(archive::MemberReader(as_bytes("!<arc>\n"), "t.a"), Error);
}
