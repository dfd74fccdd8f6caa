#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "support/output_file.h"

using namespace ot;
namespace fs = std::filesystem;

namespace {

// A fresh folder under the build directory, removed afterwards.
struct Folder {
  fs::path dir;
  Folder() {
    std::string pattern = (fs::current_path() / "output-file-test.XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    dir = pattern;
  }
  ~Folder() { fs::remove_all(dir); }
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
  std::set<std::string> names() const {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
    return out;
  }
};

void put(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string get(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("an output replaces an existing file only when committed, and leaves no temporary file") {
  Folder d;
  put(d / "out", "old contents");
  {
    OutputFile out(d / "out");
    out.write(std::string_view("new"));
    CHECK(get(d / "out") == "old contents");  // untouched until the commit
    out.commit();
  }
  CHECK(get(d / "out") == "new");
  CHECK(d.names() == std::set<std::string>{"out"});

  SUBCASE("abandoned: the old file stays") {
    { OutputFile out(d / "out"); out.write(std::string_view("lost")); }
    CHECK(get(d / "out") == "new");
    CHECK(d.names() == std::set<std::string>{"out"});
  }
  SUBCASE("a hard link to the old file keeps the old contents, as with rename()") {
    REQUIRE(::link((d / "out").c_str(), (d / "link").c_str()) == 0);
    OutputFile out(d / "out");
    out.write(std::string_view("newer"));
    out.commit();
    CHECK(get(d / "out") == "newer");
    CHECK(get(d / "link") == "new");
    CHECK(d.names() == std::set<std::string>{"link", "out"});
  }
  SUBCASE("a symbolic link at the path is replaced, its target untouched, as with rename()") {
    put(d / "target", "target contents");
    fs::remove(d / "out");
    fs::create_symlink("target", d / "out");
    OutputFile out(d / "out");
    out.write(std::string_view("file"));
    out.commit();
    CHECK(!fs::is_symlink(d / "out"));
    CHECK(get(d / "out") == "file");
    CHECK(get(d / "target") == "target contents");
  }
  SUBCASE("several outputs commit together") {
    std::vector<OutputFile> outs;
    outs.emplace_back(d / "out");
    outs.emplace_back(d / "second");
    outs[0].write(std::string_view("one"));
    outs[1].write(std::string_view("two"));
    OutputFile::commit_all(outs);
    CHECK(get(d / "out") == "one");
    CHECK(get(d / "second") == "two");
    CHECK(d.names() == std::set<std::string>{"out", "second"});
  }
}

TEST_CASE("an output has the mode creat() would give it, and a folder is refused") {
  Folder d;
  OutputFile out(d / "f");
  out.commit();
  struct stat st{};
  REQUIRE(::stat((d / "f").c_str(), &st) == 0);
  mode_t mask = ::umask(0);
  ::umask(mask);
  CHECK((st.st_mode & 0777) == (0666 & ~mask));
  fs::create_directory(d / "dir");
  std::string expected = fmt::format("'{}': Is a directory", d / "dir");
  CHECK_THROWS_WITH_AS(OutputFile(d / "dir"), expected.c_str(), Error);
  CHECK(d.names() == std::set<std::string>{"dir", "f"});
}

TEST_CASE("write_gather: many pieces (more than one writev takes), empty ones, between buffered writes") {
  Folder f;
  const std::string path = f / "g.bin";
  std::vector<std::string> texts;
  for (int i = 0; i < 3000; ++i) texts.push_back(i % 7 == 0 ? std::string() : fmt::format("<{}>", i));
  std::vector<Bytes> pieces;
  std::string want = "head:";
  for (const std::string& t : texts) {
    pieces.push_back(as_bytes(t));
    want += t;
  }
  const std::string big(200000, 'x');  // a piece larger than the buffer
  pieces.push_back(as_bytes(big));
  want += big;
  want += ":tail";
  OutputFile out(path);
  out.write("head:");
  out.write_gather(pieces);
  out.write(":tail");
  CHECK(out.written() == want.size());
  out.commit();
  CHECK(get(path) == want);
}
