// A directory given as an input (an install: /opt/rocm, a wheel's unpacked
// tree): its items in one order every applet and the pruner share, so that
// `list`, `size`, `compat verify`, `unbundle --extract-dir` and `prune` of a
// directory name the same files in the same order.
//
//   order        byte order of the paths relative to the root ("a-b" < "a/c":
//                what `LC_ALL=C sort` gives, not a per-folder sort), so the
//                output does not depend on readdir's order
//   directories  read with openat(O_NOFOLLOW) from their parent's descriptor:
//                a symlink is never followed (it is an item of its own, with
//                its target text), so a link loop cannot make the walk loop
//   hard links   a regular file with several names is a File once, at its
//                first path in that order; its later names are HardLinks to it
//   others       fifos, sockets and devices are items of kind Other: callers
//                skip them and say so
// Only the root itself is followed when it is a symlink (as `cp -r` and `find
// -H` treat a name on the command line). An unreadable directory, or a tree
// that holds itself (a bind mount), is an ot::Error naming the directory.
#pragma once

#include <sys/stat.h>

#include <string>
#include <vector>

namespace ot::contents {

enum class TreeKind { Directory, File, HardLink, Symlink, Other };

struct TreeItem {
  TreeKind kind = TreeKind::File;
  std::string relative;  // from the root, '/'-separated; "" for the root itself
  std::string path;      // as the user would type it: the root as given, then `relative`
  // Symlink: the link's target text as stored; HardLink: `relative` of the
  // file's first name (a File earlier in the order).
  std::string link;
  struct stat st {};  // lstat's (the root: stat's)
};

// Whether `path` names a directory (following a symlink; "-" never does).
bool is_directory(const std::string& path);

// The root as given joined with a relative path ("opt/rocm" + "lib/x.so" ->
// "opt/rocm/lib/x.so"; "opt/rocm/" + ... -> "opt/rocm/lib/x.so").
std::string tree_path(const std::string& root, const std::string& relative);

// The root (first, relative "") and everything under it, in the order above.
std::vector<TreeItem> read_tree(const std::string& root);

// "fifo", "socket", "character device", "block device": what an Other item is.
const char* other_kind_name(const struct stat& st);

}  // namespace ot::contents
