#include "contents/tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "support/error.h"
#include "support/unique_fd.h"

namespace ot::contents {
namespace {

// Deeper than any install; a bound so that a crafted tree cannot exhaust the
// descriptors or the stack.
constexpr unsigned kMaxDepth = 256;

using Fd = UniqueFd;

class Reader {
 public:
  Reader(const std::string& root, std::vector<TreeItem>& out) : root_(root), out_(out) {}

  // Reads the directory open as `dir` (owned), which is `relative`.
  void read(int dir_fd, const std::string& relative, unsigned depth) {
    Fd dir(dir_fd);
    const std::string path = tree_path(root_, relative);
    if (depth > kMaxDepth) fail(path, "directories nested more than {} levels deep", kMaxDepth);
    struct stat self {};
    if (::fstat(dir.fd, &self) != 0) fail(path, "cannot read the directory: {}", std::strerror(errno));
    // A directory that holds itself (a bind mount of an ancestor): walking it would never end.
    for (const auto& [dev, ino] : stack_)
      if (dev == self.st_dev && ino == self.st_ino) fail(path, "the directory holds itself (a bind mount of a folder above it?)");
    stack_.emplace_back(self.st_dev, self.st_ino);

    // fdopendir takes the descriptor over: hand it a copy, `dir` stays ours for openat.
    int listing_fd = ::dup(dir.fd);
    DIR* d = listing_fd < 0 ? nullptr : ::fdopendir(listing_fd);
    if (!d) {
      int e = errno;
      if (listing_fd >= 0) ::close(listing_fd);
      fail(path, "cannot read the directory: {}", std::strerror(e));
    }
    std::vector<std::string> names;
    for (;;) {
      errno = 0;
      dirent* ent = ::readdir(d);
      if (!ent) break;
      std::string name = ent->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
    int e = errno;
    ::closedir(d);
    if (e != 0) fail(path, "cannot read the directory: {}", std::strerror(e));

    for (const std::string& name : names) {
      TreeItem item;
      item.relative = relative.empty() ? name : relative + "/" + name;
      item.path = tree_path(root_, item.relative);
      if (::fstatat(dir.fd, name.c_str(), &item.st, AT_SYMLINK_NOFOLLOW) != 0)
        fail(item.path, "cannot read: {}", std::strerror(errno));
      const mode_t type = item.st.st_mode & S_IFMT;
      if (type == S_IFDIR) {
        item.kind = TreeKind::Directory;
        int sub = ::openat(dir.fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) fail(item.path, "cannot read the directory: {}", std::strerror(errno));
        std::string rel = item.relative;
        out_.push_back(std::move(item));
        read(sub, rel, depth + 1);
      } else if (type == S_IFLNK) {
        item.kind = TreeKind::Symlink;
        std::string target(static_cast<std::size_t>(item.st.st_size) + 1, '\0');
        for (;;) {
          ssize_t n = ::readlinkat(dir.fd, name.c_str(), target.data(), target.size());
          if (n < 0) fail(item.path, "cannot read the symbolic link: {}", std::strerror(errno));
          if (static_cast<std::size_t>(n) < target.size()) {
            target.resize(static_cast<std::size_t>(n));
            break;
          }
          target.resize(target.size() * 2);  // the link changed since lstat: try again larger
        }
        item.link = std::move(target);
        out_.push_back(std::move(item));
      } else {
        item.kind = type == S_IFREG ? TreeKind::File : TreeKind::Other;
        out_.push_back(std::move(item));
      }
    }
    stack_.pop_back();
  }

 private:
  const std::string& root_;
  std::vector<TreeItem>& out_;
  std::vector<std::pair<dev_t, ino_t>> stack_;
};

}  // namespace

bool is_directory(const std::string& path) {
  struct stat st {};
  return path != "-" && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string tree_path(const std::string& root, const std::string& relative) {
  if (relative.empty()) return root;
  if (root.empty() || root.back() == '/') return root + relative;
  return root + "/" + relative;
}

std::vector<TreeItem> read_tree(const std::string& root) {
  std::vector<TreeItem> items(1);
  items[0].kind = TreeKind::Directory;
  items[0].path = root;
  int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::fstat(fd, &items[0].st) != 0) {
    int e = errno;
    if (fd >= 0) ::close(fd);
    fail(root, "cannot read the directory: {}", std::strerror(e));
  }
  Reader(root, items).read(fd, "", 0);
  // std::string compares as unsigned bytes (char_traits<char>::compare is memcmp's order).
  std::sort(items.begin() + 1, items.end(),
            [](const TreeItem& a, const TreeItem& b) { return a.relative < b.relative; });
  // A file's first name in that order is the file; its later names link to it.
  std::map<std::pair<dev_t, ino_t>, std::string> first;
  for (TreeItem& item : items) {
    if (item.kind != TreeKind::File || item.st.st_nlink < 2) continue;
    auto [at, inserted] = first.try_emplace({item.st.st_dev, item.st.st_ino}, item.relative);
    if (!inserted) {
      item.kind = TreeKind::HardLink;
      item.link = at->second;
    }
  }
  return items;
}

const char* other_kind_name(const struct stat& st) {
  switch (st.st_mode & S_IFMT) {
    case S_IFIFO: return "fifo";
    case S_IFSOCK: return "socket";
    case S_IFCHR: return "character device";
    case S_IFBLK: return "block device";
    default: return "special file";
  }
}

}  // namespace ot::contents
