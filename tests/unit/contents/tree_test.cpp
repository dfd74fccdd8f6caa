// contents/tree: the order of a directory's items (byte order of the relative
// paths, not a per-folder sort), symlinks never followed (a link to itself
// included), hard links as one file, special files, the root's spelling.
// The expected order is written out by hand from the byte values ('-' 0x2d
// sorts before '/' 0x2f), not computed with the sort under test.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "contents/tree.h"
#include "support/error.h"

namespace {

struct TempTree {
  std::string path = "/tmp/ot-tree-XXXXXX";
  TempTree() { REQUIRE(mkdtemp(path.data()) != nullptr); }
  ~TempTree() { CHECK(std::system(("rm -rf '" + path + "'").c_str()) == 0); }
  void file(const std::string& rel) { std::ofstream(path + "/" + rel) << rel; }
};

}  // namespace

TEST_CASE("tree: byte order of the paths, links and special files as items, hard links once") {
  TempTree t;
  REQUIRE(mkdir((t.path + "/a").c_str(), 0755) == 0);
  t.file("a/x");
  t.file("a-c");
  t.file("b");
  REQUIRE(link((t.path + "/b").c_str(), (t.path + "/a/y").c_str()) == 0);
  REQUIRE(symlink("s", (t.path + "/s").c_str()) == 0);  // a loop: never followed
  REQUIRE(symlink(".", (t.path + "/a/up").c_str()) == 0);
  REQUIRE(mkfifo((t.path + "/f").c_str(), 0644) == 0);

  std::vector<ot::contents::TreeItem> items = ot::contents::read_tree(t.path + "/");
  std::vector<std::string> order;
  for (const auto& i : items) order.push_back(i.relative);
  CHECK(order == std::vector<std::string>{"", "a", "a-c", "a/up", "a/x", "a/y", "b", "f", "s"});
  REQUIRE(items.size() == 9);
  using K = ot::contents::TreeKind;
  CHECK(items[0].kind == K::Directory);
  CHECK(items[0].path == t.path + "/");
  CHECK(items[1].kind == K::Directory);
  CHECK(items[2].kind == K::File);
  CHECK(items[2].path == t.path + "/a-c");
  CHECK(items[3].kind == K::Symlink);
  CHECK(items[3].link == ".");
  CHECK(items[5].kind == K::File);  // a/y: the first name of b's file
  CHECK(items[6].kind == K::HardLink);
  CHECK(items[6].link == "a/y");
  CHECK(items[7].kind == K::Other);
  CHECK(std::string(ot::contents::other_kind_name(items[7].st)) == "fifo");
  CHECK(items[8].kind == K::Symlink);
  CHECK(items[8].link == "s");
}

TEST_CASE("tree: paths as typed, errors naming the directory") {
  CHECK(ot::contents::tree_path("opt/rocm", "lib/x.so") == "opt/rocm/lib/x.so");
  CHECK(ot::contents::tree_path("opt/rocm/", "lib/x.so") == "opt/rocm/lib/x.so");
  CHECK(ot::contents::tree_path("opt/rocm", "") == "opt/rocm");
  CHECK_FALSE(ot::contents::is_directory("-"));
  CHECK_THROWS_WITH_AS(ot::contents::read_tree("/nonexistent-ot-tree"),
                       "/nonexistent-ot-tree: cannot read the directory: No such file or directory", ot::Error);
}
