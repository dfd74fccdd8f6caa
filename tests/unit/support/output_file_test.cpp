#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "support/mapped_file.h"
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

TEST_CASE("a file's path ending with '/' is refused as LLVM refuses it, whether or not the folder exists") {
  Folder d;
  fs::create_directory(d / "dir");
  put(d / "file", "x");
  for (const std::string name : {"dir/", "missing/", "file/", "dir//"}) {
    const std::string expected = fmt::format("'{}': Is a directory", d / name);
    CHECK_THROWS_WITH_AS(OutputFile(d / name), expected.c_str(), Error);
  }
  CHECK(d.names() == std::set<std::string>{"dir", "file"});
  CHECK(fs::is_empty(d / "dir"));
}

TEST_CASE("folder_path: a folder's name without its trailing slashes") {
  CHECK(folder_path("out/") == "out");
  CHECK(folder_path("out//") == "out");
  CHECK(folder_path("a/b/") == "a/b");
  CHECK(folder_path("out") == "out");
  CHECK(folder_path("/") == "/");
  CHECK(folder_path("//") == "/");
  CHECK(folder_path("") == "");
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

TEST_CASE("map_appended: bytes written through memory between ordinary writes, pages let go of behind") {
  Folder f;
  const std::string path = f / "out.bin";
  std::string want;
  {
    OutputFile out(path);
    out.write(std::string_view("head"));  // the region starts inside a page
    want += "head";
    constexpr std::uint64_t kSize = 9u << 20;
    std::unique_ptr<WritableRegion> region = out.map_appended(kSize);
    REQUIRE(region);
    CHECK(region->bytes().size() == kSize);
    CHECK(out.written() == 4 + kSize);
    std::string body(kSize, '\0');
    for (std::uint64_t i = 0; i < kSize; ++i) body[i] = static_cast<char>('a' + (i * 7 + i / 4096) % 26);
    for (std::uint64_t done = 0; done < kSize;) {  // a writer moving forward, 300 KiB at a time
      const std::uint64_t n = std::min<std::uint64_t>(300u << 10, kSize - done);
      std::memcpy(region->bytes().data() + done, body.data() + done, n);
      done += n;
      region->release_behind(done, 1u << 20);
      // what was let go of reads back from the file, and can be read again later
      CHECK(std::memcmp(region->bytes().data(), body.data(), 64) == 0);
    }
    region.reset();
    want += body;
    out.write(std::string_view("tail"));
    want += "tail";
    CHECK(out.map_appended(0) == nullptr);
    out.commit();
  }
  CHECK(get(path) == want);
  CHECK(f.names() == std::set<std::string>{"out.bin"});
}

TEST_CASE("map_appended: an output that is not committed leaves nothing") {
  Folder f;
  {
    OutputFile out(f / "out.bin");
    std::unique_ptr<WritableRegion> region = out.map_appended(1u << 20);
    REQUIRE(region);
    region->bytes()[0] = std::byte{1};
  }
  CHECK(f.names().empty());
}

TEST_CASE("InputFile::read_at reads the file, not its mapping, and names the offset of what is missing") {
  Folder f;
  put(f / "in", "0123456789abcdef");
  auto in = InputFile::open(f / "in");
  std::string got(6, '?');
  in->read_at(4, reinterpret_cast<std::byte*>(got.data()), 6);
  CHECK(got == "456789");
  CHECK_THROWS_WITH(in->read_at(12, reinterpret_cast<std::byte*>(got.data()), 6),
                    (f / "in" + ": 0x6 bytes to read extend past the end of the file, at offset 0xc").c_str());
  // the file shrank after it was opened: the mapping's size no longer holds
  REQUIRE(::truncate((f / "in").c_str(), 8) == 0);
  CHECK_THROWS_WITH(in->read_at(4, reinterpret_cast<std::byte*>(got.data()), 6),
                    (f / "in" + ": the file ended early (it changed while being read), at offset 0x8").c_str());
  auto memory = InputFile::from_memory("mem", {std::byte{1}, std::byte{2}, std::byte{3}});
  std::byte b[2]{};
  memory->read_at(1, b, 2);
  CHECK((b[0] == std::byte{2} && b[1] == std::byte{3}));
}

TEST_CASE("skip and map_over: a scratch file with holes where other files are mapped in reads as their layout") {
  Folder f;
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::string a(3 * page + 100, 'a'), b(page, 'b');
  for (std::size_t i = 0; i < a.size(); i += 7) a[i] = static_cast<char>('A' + i % 26);
  put(f / "a", a);
  put(f / "b", b);
  auto in_a = InputFile::open(f / "a"), in_b = InputFile::open(f / "b");
  auto memory = InputFile::from_memory("mem", {std::byte{1}});
  CHECK(in_a->mappable());
  CHECK(!memory->mappable());
  // "head" | a (hole) | zeros to the next page | b (hole) | "tail"
  OutputFile s = OutputFile::scratch(f / "x");
  const std::size_t at_a = page, at_b = page + align_to(a.size(), page), total = at_b + b.size() + 4;
  s.resize(total);
  s.write(std::string_view("head"));
  s.skip(at_a - 4);
  s.skip(a.size());
  s.skip(at_b - at_a - a.size());
  s.skip(b.size());
  s.write(std::string_view("tail"));
  CHECK(s.written() == total);
  auto view = s.map("scratch");
  view->map_over(at_a, *in_a);
  view->map_over(at_b, *in_b);
  std::string expected = "head" + std::string(at_a - 4, '\0') + a + std::string(at_b - at_a - a.size(), '\0') + b + "tail";
  auto text = [&] { return std::string(reinterpret_cast<const char*>(view->bytes().data()), view->size()); };
  CHECK(text() == expected);
  view->release(0, total);  // dropped, then read back from the files
  CHECK(text() == expected);
  CHECK_THROWS_AS(view->map_over(at_a + 1, *in_a), std::logic_error);     // not on a page
  CHECK_THROWS_AS(view->map_over(at_b, *in_a), std::logic_error);         // past the end
  CHECK_THROWS_AS(view->map_over(at_a, *memory), std::logic_error);       // not a mapped file
}

TEST_CASE("read_back and map_range: a scratch file read without mapping it whole, ranges mapped one at a time") {
  Folder f;
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::string data(3 * page + 123, '\0');
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + i * 7 % 26);
  OutputFile s = OutputFile::scratch(f / "x");
  s.write(data);
  auto in = s.read_back("scratch");
  CHECK(in->unmapped());
  CHECK(in->size() == data.size());
  CHECK(in->bytes().empty());  // nothing mapped
  auto text = [](Bytes b) { return std::string(reinterpret_cast<const char*>(b.data()), b.size()); };
  // A range across page boundaries, starting inside a page.
  auto r = in->map_range(page - 5, page + 10);
  CHECK(text(r->bytes()) == data.substr(page - 5, page + 10));
  r->release(0, page + 10);  // dropped, then read back from the file
  CHECK(text(r->bytes()) == data.substr(page - 5, page + 10));
  CHECK_THROWS_WITH(in->map_range(data.size() - 2, 3),
                    fmt::format("scratch: 0x3 bytes to map extend past the end of the file, at offset 0x{:x}",
                                data.size() - 2).c_str());
  // A whole file's mapping gives views of it, which release() leaves readable.
  put(f / "in", data);
  auto mapped = InputFile::open(f / "in");
  auto v = mapped->map_range(page + 1, 2 * page);
  CHECK(v->bytes().data() == mapped->bytes().data() + page + 1);
  v->release(0, 2 * page);
  CHECK(text(v->bytes()) == data.substr(page + 1, 2 * page));
  // Copied out of the unmapped file (by the kernel; read_at where it cannot).
  OutputFile out(f / "copy");
  out.copy_from(*in, 3, data.size() - 3);
  out.commit();
  std::ifstream copy(f / "copy", std::ios::binary);
  CHECK(std::string(std::istreambuf_iterator<char>(copy), {}) == data.substr(3));
}
