#include "archive/ar_writer.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

#include "support/mapped_file.h"
#include "support/output_file.h"
#include "unit/archive/reference_data.h"

using namespace ot;
using archive::NewMember;

namespace {

template <std::size_t N>
Bytes ref(const unsigned char (&a)[N]) {
  return {reinterpret_cast<const std::byte*>(a), N};
}

std::string temp_path() {
  std::string p = "/tmp/ot-ar-writer-XXXXXX";
  int fd = mkstemp(p.data());
  close(fd);
  return p;
}

std::vector<std::byte> write(std::vector<NewMember> members, archive::WriteOptions options = {}) {
  const std::string path = temp_path();
  {
    OutputFile out(path);
    archive::write_gnu_archive(out, members, options);
    out.commit();
  }
  auto in = InputFile::open(path);
  std::vector<std::byte> bytes(in->bytes().begin(), in->bytes().end());
  unlink(path.c_str());
  return bytes;
}

std::vector<std::byte> vec(Bytes b) { return {b.begin(), b.end()}; }

}  // namespace

TEST_CASE("GNU archive with ELF and bitcode symbols, as llvm-ar rcsD writes it") {
  const Bytes elf = ref(testdata::kElfObject), bc = ref(testdata::kBitcode);
  CHECK(write({{"x.o", elf}, {"y.bc", bc}, {"x.o", elf}}) == vec(ref(testdata::kSymArchive)));
}

TEST_CASE("the 64-bit symbol table from the SYM64 threshold on") {
  const Bytes elf = ref(testdata::kElfObject);
  CHECK(write({{"x.o", elf}}, {.sym64_threshold = 0}) == vec(ref(testdata::kSym64Archive)));
  // Below the threshold the same member gets the 32-bit table.
  auto small = write({{"x.o", elf}});
  CHECK(std::string(as_chars(Bytes(small).subspan(8, 16))) == "/               ");
}

TEST_CASE("clang-offload-packager --archive: no symbols, long names shared, odd sizes padded") {
  auto images = [](const char* name) {
    return std::vector<NewMember>{{name, as_bytes("abc")}, {name, as_bytes("defg")}, {name, Bytes()}};
  };
  CHECK(write(images("dir/multi.bin")) == vec(ref(testdata::kPackagerArchive)));
  CHECK(write(images("m.bin")) == vec(ref(testdata::kPackagerArchiveShort)));
}

TEST_CASE("no members: only the magic; no symbol table requested: none written") {
  CHECK(write({}) == vec(as_bytes("!<arch>\n")));
  auto a = write({{"x.o", ref(testdata::kElfObject)}}, {.symbol_table = false});
  CHECK(std::string(as_chars(Bytes(a).subspan(8, 16))) == "x.o/            ");
}

TEST_CASE("names: 15 characters inline, 16 and any '/' in the long-name table") {
  auto a = write({{"fifteen_chars_x", as_bytes("1")}, {"sixteen_chars_xx", as_bytes("2")}, {"a/b", as_bytes("3")}});
  const std::string s(as_chars(Bytes(a)));
  CHECK(s.substr(8, 60) == "//                                              24        `\n");
  CHECK(s.substr(68, 24) == "sixteen_chars_xx/\na/b/\n\n");
  CHECK(s.substr(92, 16) == "fifteen_chars_x/");
  CHECK(s.substr(154, 16) == "/0              ");
  CHECK(s.substr(216, 16) == "/18             ");
}

TEST_CASE("members stream from their input file") {
  const std::string path = temp_path();
  {
    OutputFile f(path);
    f.write(std::string_view("0123456789"));
    f.commit();
  }
  auto in = InputFile::open(path);
  auto a = write({{"p", in->bytes().subspan(3, 4), in.get()}});
  CHECK(std::string(as_chars(Bytes(a)).substr(68)) == "3456");
  unlink(path.c_str());
}

TEST_CASE("the same bytes whether payloads are in memory, mapped, read from a file or copied by the kernel") {
  // Two members of 1.5 MiB (copied by the kernel) around many small ones
  // (handed to writev in batches), from one source file.
  std::string text;
  for (int i = 0; text.size() < (3u << 20) + 100000; ++i) text += fmt::format("line {}\n", i);
  const std::string path = temp_path();
  {
    OutputFile f(path);
    f.write(std::string_view(text));
    f.commit();
  }
  auto in = InputFile::open(path);
  const Bytes all = in->bytes();
  std::vector<NewMember> memory, sourced;
  std::uint64_t at = 0;
  auto add = [&](std::string name, std::uint64_t size) {
    memory.push_back({name, all.subspan(at, size)});
    sourced.push_back({name, all.subspan(at, size), in.get()});
    at += size;
  };
  add("big1", 3u << 19);
  for (int i = 0; i < 2000; ++i) add(fmt::format("small{}", i), 17 + i % 13);
  add("big2", (3u << 19) + 1);
  add("last", 5);
  const auto from_file = write(sourced);
  CHECK(write(memory) == from_file);
  // payloads read from the source's descriptor (not its mapping) give the same bytes
  CHECK(write(sourced, {.read_sources = true}) == from_file);
  // the archive holds the members in order, each after its header
  CHECK(from_file.size() > all.size());
  unlink(path.c_str());
}

TEST_CASE("symbols worked out beforehand are the ones the symbol table lists") {
  const Bytes elf = ref(testdata::kElfObject);
  const std::vector<std::string> given{"given_symbol"};
  auto a = write({{"x.o", elf, nullptr, &given}});
  const std::string s(as_chars(Bytes(a)));
  CHECK(s.find("given_symbol") != std::string::npos);
  // without them the writer finds the object's own
  CHECK(write({{"x.o", elf}}) == write({{"x.o", elf, nullptr, nullptr}}));
  CHECK(write({{"x.o", elf}}) != a);
}
