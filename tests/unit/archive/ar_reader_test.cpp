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

namespace {

// The error a read of `bytes` throws, for its texts.
Error read_error(std::string_view bytes) {
  try {
    archive::read_members(as_bytes(bytes), "t.a");
  } catch (const Error& e) {
    return e;
  }
  FAIL("no error");
  return Error({}, "");
}

std::string header(std::string_view name, std::string_view size, std::string_view end = "`\n") {
  return fmt::format("{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}{}", name, "0", "0", "0", "644", size, end);
}

}  // namespace

TEST_CASE("archive errors carry LLVM 19's text where its reader reports the defect") {
  CHECK(read_error("ab").llvm_text() == "file too small to be an archive");
  CHECK(read_error("!<arch>\n" + header("foo.o/", "3", "X\\") + "abc\n").llvm_text() ==
        "truncated or malformed archive (terminator characters in archive member \"X\\\\\" not the correct "
        "\"`\\n\" values for the archive member header for foo.o)");
  CHECK(read_error("!<arch>\n" + header("#1/x", "3") + "abc\n").llvm_text() ==
        "truncated or malformed archive (long name length characters after the #1/ are not all decimal numbers: 'x' "
        "for archive member header at offset 8)");
  // "/x" is neither an index nor a long-name reference: refused, as LLVM does.
  const Error slash = read_error("!<arch>\n" + header("/x", "3") + "abc\n");
  CHECK(std::string(slash.what()) ==
        "t.a: archive member name '/x' is neither a symbol table, the name table nor a long-name reference "
        "(\"/<offset>\"), at offset 0x8");
  CHECK(slash.llvm_text() == "Invalid data was encountered while parsing the file");
  // After the first regular member LLVM 19's bundler stops quietly: no LLVM text.
  const Error second = read_error("!<arch>\n" + header("a.o/", "1") + "a\n" + header("b.o/", "1", "XX") + "b\n");
  CHECK(second.offset() == 0x46u);
  CHECK(second.llvm_text().empty());
  // Defects LLVM 19 accepts have none either.
  CHECK(read_error("!<thin>\n").llvm_text().empty());
  CHECK(read_error("!<arch>\n" + header("a.o/", "99") + "a\n").llvm_text().empty());
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
