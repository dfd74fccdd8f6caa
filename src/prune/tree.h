// Pruning a directory (an install: /opt/rocm): each of its files decided by
// prune_tree_file, in the order of contents/tree.h, and the tree written
//
//   Copy (-o OUTDIR)   a new tree, built in a hidden folder beside OUTDIR and
//                      renamed to it (RENAME_NOREPLACE) only when complete:
//                      a failure leaves nothing (a tree without device code
//                      fails before the rename), and the input is only read;
//                      on a signal the handler removes the hidden folder
//   InPlace            every file checked first (a dry pass: a hostile file
//                      fails before anything changed), then each changed file
//                      replaced through a temporary file and a rename, as a
//                      single file is
//   DryRun             nothing written
//
// What the output keeps: unchanged files cloned by the kernel (FICLONE, else
// copy_file_range), symlinks as symlinks with the same target text, hard links
// as hard links, the permission bits and the access and modification times
// (nanoseconds) of files, symlinks and directories (a directory's after it
// was filled). Fifos, sockets and devices are not copied (the report lists
// them). Each file is decided by prune_tree_file (prune.h). Knows nothing of
// command lines.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "contents/tree.h"
#include "prune/prune.h"

namespace ot {
class OutputFile;
}

namespace ot::prune {

// Hands the pieces of a pruned file to `out`: pieces of the input itself of
// 16 KiB or more are copied by the kernel where it can (copy_file_range);
// smaller ones are read with pread, since touching the mapping maps in 64 KiB
// around each (a CUDA library's thousands of entries: 59 MB resident).
class PieceWriter {
 public:
  PieceWriter(OutputFile& out, const InputFile& in) : out_(out), in_(in) {}
  void operator()(Bytes b);

 private:
  OutputFile& out_;
  const InputFile& in_;
  std::vector<std::byte> small_ = std::vector<std::byte>(16u << 10);
};

enum class TreeMode { DryRun, Copy, InPlace };

// Prunes the tree at `root` (see above); `out_dir` only for Copy. The report
// (prune.h's, shared with packages) names the files as the user would type
// them (contents::TreeItem::path); its notes say what was not read: each
// symlink (recreated as a link), later hard link (recreated, or left out
// with the file it names) and special file (not copied). Errors name the
// file or directory.
TreeReport prune_tree(const std::string& root, const Selection& selection, TreeMode mode, const std::string& out_dir);

// The same machinery for another rewrite of a tree than prune's (split,
// prune/split.h): each regular file's outcome from `file` instead of
// prune_tree_file (Copy: cloned; Write: what the sink got, even where
// nothing was dropped; Remove: left out), then `finish` with the staging
// folder of the new tree, before it is renamed to `out_dir` (what it adds
// there is part of the tree; what it throws leaves nothing). Copy mode only.
struct TreeRewrite {
  std::function<FileOutcome(const InputFile& in, const std::string& file, std::string_view relative,
                            const codec::Sink& sink)>
      file;
  std::function<void(const std::string& staging)> finish;
};
TreeReport rewrite_tree(const std::string& root, const TreeRewrite& rewrite, const std::string& out_dir);

}  // namespace ot::prune
