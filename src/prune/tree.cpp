#include "prune/tree.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "prune/per_gpu_rule.h"
#include "support/error.h"
#include "support/mapped_file.h"
#include "support/output_file.h"
#include "support/signals.h"
#include "support/unique_fd.h"

namespace ot::prune {

void PieceWriter::operator()(Bytes b) {
  const Bytes all = in_.bytes();
  const std::less<const std::byte*> before;
  const bool input = !before(b.data(), all.data()) && !before(all.data() + all.size(), b.data() + b.size());
  const std::uint64_t off = input ? static_cast<std::uint64_t>(b.data() - all.data()) : 0;
  if (input && b.size() >= small_.size()) {
    out_.copy_from(in_, off, b.size());
  } else if (input && in_.fd() >= 0 && !b.empty()) {
    in_.read_at(off, small_.data(), b.size());
    out_.write(Bytes(small_.data(), b.size()));
  } else {
    out_.write(b);
  }
}

namespace {

std::string errno_text(int e) { return std::strerror(e); }

using Fd = UniqueFd;

// The item's access and modification times, as utimensat takes them.
std::array<timespec, 2> times_of(const struct stat& st) { return {st.st_atim, st.st_mtim}; }

void set_times(const std::string& path, const struct stat& st, bool symlink) {
  auto t = times_of(st);
  if (::utimensat(AT_FDCWD, path.c_str(), t.data(), symlink ? AT_SYMLINK_NOFOLLOW : 0) != 0)
    fail(path, "cannot set the times: {}", errno_text(errno));
}

// An unchanged file copied into the new tree: a reflink where the file
// system shares extents, else copy_file_range (OutputFile::clone_from), with
// its mode and times.
void clone_file(const std::string& from, const std::string& to, const struct stat& st) {
  std::shared_ptr<InputFile> in = InputFile::open(from);
  OutputFile out(to);
  out.clone_from(*in);
  out.copy_mode_from(from);
  out.commit();
  set_times(to, st, false);
}

// The output folder being built, removed unless it was renamed into place:
// by the destructor, and on a signal by the handler (support/signals.h).
class Staging {
 public:
  explicit Staging(std::string dir) : dir_(std::move(dir)) { signals::register_temp_dir(dir_.c_str()); }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  ~Staging() {
    if (dir_.empty()) return;
    std::error_code ec;
    // The folders were made 0700 and may have been given read-only modes: writable again first.
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all, std::filesystem::perm_options::add, ec);
    for (auto it = std::filesystem::recursive_directory_iterator(dir_, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
      if (it->is_directory(ec) && !it->is_symlink(ec))
        std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                     std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(dir_, ec);
    signals::unregister_temp_dir(dir_.c_str());
  }
  const std::string& dir() const { return dir_; }
  void release() {
    signals::unregister_temp_dir(dir_.c_str());
    dir_.clear();
  }

 private:
  std::string dir_;
};

std::string parent_of(const std::string& path) {
  std::filesystem::path p(path);
  std::filesystem::path parent = p.lexically_normal().parent_path();
  if (parent.empty()) return ".";
  return parent.string();
}

std::string real(const std::string& path) {
  char buf[PATH_MAX];
  if (!::realpath(path.c_str(), buf)) fail(path, "{}", errno_text(errno));
  return buf;
}

// -o OUTDIR: a new name, not inside the input (which the walk would then meet).
void check_out_dir(const std::string& root, const std::string& out_dir) {
  struct stat st {};
  if (::lstat(out_dir.c_str(), &st) == 0)
    fail(out_dir, "exists: prune of a directory writes a new one (remove it, or give another name)");
  const std::string parent = real(parent_of(out_dir)), input = real(root);
  if (parent == input || parent.starts_with(input == "/" ? input : input + "/"))
    fail(out_dir, "lies inside the input directory {}", root);
}

class TreePruner {
 public:
  TreePruner(const std::string& root, const Selection& selection, TreeMode mode, const TreeRewrite* rewrite = nullptr)
      : root_(root), selection_(selection), mode_(mode), rewrite_(rewrite) {}

  TreeReport run(const std::string& out_dir) {
    TreeReport report;
    report.container = "directory";
    const std::vector<contents::TreeItem> items = contents::read_tree(root_);
    if (!rewrite_) learn_per_gpu(items);
    if (mode_ == TreeMode::Copy) {
      check_out_dir(root_, out_dir);
      copy(items, out_dir, report);
    } else {
      // A dry pass first: every file checked before anything changes.
      std::map<std::string, FileAction> actions;
      for (const contents::TreeItem& item : items) {
        if (item.kind != contents::TreeKind::File) continue;
        auto f = decide(item, nullptr);
        actions[item.relative] = f.first.action;
        add(report, item, std::move(f));
      }
      for (const contents::TreeItem& item : items)
        if (item.kind != contents::TreeKind::File && item.kind != contents::TreeKind::Directory)
          note(report, item, item.kind == contents::TreeKind::HardLink && actions[item.link] == FileAction::Remove);
      check_found(selection_, report, root_);
      if (mode_ == TreeMode::InPlace) in_place(items, actions);
    }
    return report;
  }

 private:
  // The file's outcome (its action: Write only where entries were dropped)
  // and its size after; with `out` (a path), the pruned file is written there.
  std::pair<FileReport, std::uint64_t> decide(const contents::TreeItem& item, const std::string* out) {
    std::shared_ptr<InputFile> in = InputFile::open(item.path);
    std::optional<OutputFile> file;
    std::optional<PieceWriter> writer;
    std::uint64_t written = 0;
    auto sink = [&](Bytes b) {
      written += b.size();
      if (!out) return;
      if (!file) {
        file.emplace(*out);
        writer.emplace(*file, *in);
      }
      (*writer)(b);
    };
    FileOutcome o = rewrite_ ? rewrite_->file(*in, item.path, item.relative, sink)
                             : prune_tree_file(*in, selection_, item.path, sink, per_gpu_ ? &*per_gpu_ : nullptr,
                                               item.relative);
    FileReport f{item.path, o.action, std::move(o.report), std::move(o.per_gpu)};
    if (!rewrite_ && f.action == FileAction::Write && f.report.dropped() == 0) f.action = FileAction::Copy;
    const auto before = static_cast<std::uint64_t>(item.st.st_size);
    const std::uint64_t after = f.action == FileAction::Copy ? before : f.action == FileAction::Remove ? 0 : written;
    if (out && f.action == FileAction::Write) {
      if (!file) file.emplace(*out);  // an empty pruned file: the sink got no piece
      file->copy_mode_from(item.path);
      file->commit();
      set_times(*out, item.st, false);
    }
    return {std::move(f), after};
  }

  // A file into the report: its sizes, and its row when it has device code.
  void add(TreeReport& report, const contents::TreeItem& item, std::pair<FileReport, std::uint64_t> f) {
    report.size_before += static_cast<std::uint64_t>(item.st.st_size);
    report.size_after += f.second;
    if (f.first.action != FileAction::Copy || !f.first.report.entries.empty() || f.first.per_gpu)
      report.files.push_back(std::move(f.first));
  }

  // Per-GPU files follow their GPU (per_gpu_rule.h): where the tree may hold
  // any, the rule learns every file first.
  void learn_per_gpu(const std::vector<contents::TreeItem>& items) {
    if (std::ranges::none_of(items, [](const contents::TreeItem& i) {
          return i.kind == contents::TreeKind::File && PerGpuRule::may_apply(i.relative);
        }))
      return;
    per_gpu_.emplace();
    for (const contents::TreeItem& item : items)
      if (item.kind == contents::TreeKind::File) per_gpu_->learn(item.relative, *InputFile::open(item.path), item.path);
  }

  void note(TreeReport& report, const contents::TreeItem& item, bool link_removed = false) {
    switch (item.kind) {
      case contents::TreeKind::Symlink:
        report.notes.push_back(fmt::format("{}: symbolic link to {}, not followed{}", item.path, item.link,
                                           mode_ == TreeMode::DryRun ? "" : " (kept as a link)"));
        break;
      case contents::TreeKind::HardLink:
        report.notes.push_back(fmt::format("{}: hard link to {}, read once{}", item.path,
                                           contents::tree_path(root_, item.link),
                                           link_removed ? " (removed with it)"
                                           : mode_ == TreeMode::DryRun ? ""
                                                                       : " (kept as a hard link)"));
        break;
      default:
        report.notes.push_back(fmt::format("{}: {}, skipped", item.path, contents::other_kind_name(item.st)));
        break;
    }
  }

  void copy(const std::vector<contents::TreeItem>& items, const std::string& out_dir, TreeReport& report) {
    std::string pattern = parent_of(out_dir) + "/." + std::filesystem::path(out_dir).lexically_normal().filename().string() + ".XXXXXX";
    if (!::mkdtemp(pattern.data())) fail(out_dir, "cannot create a folder beside it: {}", errno_text(errno));
    Staging staging(pattern);
    auto at = [&](const std::string& relative) { return contents::tree_path(staging.dir(), relative); };
    std::set<std::string> removed;  // relative paths of files left out
    std::vector<const contents::TreeItem*> dirs;
    for (const contents::TreeItem& item : items) {
      const std::string to = at(item.relative);
      switch (item.kind) {
        case contents::TreeKind::Directory:
          // 0700 while it is filled (the input's may be read-only); its own mode and times at the end.
          if (!item.relative.empty() && ::mkdir(to.c_str(), 0700) != 0)
            fail(to, "cannot create the directory: {}", errno_text(errno));
          dirs.push_back(&item);
          break;
        case contents::TreeKind::File: {
          auto f = decide(item, &to);
          if (f.first.action == FileAction::Copy) clone_file(item.path, to, item.st);
          if (f.first.action == FileAction::Remove) removed.insert(item.relative);
          add(report, item, std::move(f));
          break;
        }
        case contents::TreeKind::HardLink:
          note(report, item, removed.contains(item.link));
          if (removed.contains(item.link)) break;
          if (::link(at(item.link).c_str(), to.c_str()) != 0) fail(to, "cannot create the hard link: {}", errno_text(errno));
          break;
        case contents::TreeKind::Symlink:
          note(report, item);
          if (::symlink(item.link.c_str(), to.c_str()) != 0) fail(to, "cannot create the symbolic link: {}", errno_text(errno));
          set_times(to, item.st, true);
          break;
        case contents::TreeKind::Other:
          note(report, item);
          break;
      }
    }
    // Deepest first is not needed (a folder's times do not change when a
    // subfolder's do), but every folder only after everything was written.
    for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
      const std::string to = at((*it)->relative);
      if (::chmod(to.c_str(), (*it)->st.st_mode & 07777) != 0) fail(to, "{}", errno_text(errno));
      set_times(to, (*it)->st, false);
    }
    // Before the rename: a failure leaves nothing.
    if (rewrite_)
      rewrite_->finish(staging.dir());
    else
      check_found(selection_, report, root_);
    if (::renameat2(AT_FDCWD, staging.dir().c_str(), AT_FDCWD, out_dir.c_str(), RENAME_NOREPLACE) != 0)
      fail(out_dir, "cannot rename {} to it: {}", staging.dir(), errno_text(errno));
    staging.release();
  }

  void in_place(const std::vector<contents::TreeItem>& items, const std::map<std::string, FileAction>& actions) {
    std::map<std::string, const contents::TreeItem*> dir_of;  // relative -> its directory item
    for (const contents::TreeItem& item : items)
      if (item.kind == contents::TreeKind::Directory) dir_of[item.relative] = &item;
    std::set<std::string> changed;
    auto parent_rel = [](const std::string& rel) {
      auto slash = rel.rfind('/');
      return slash == std::string::npos ? std::string() : rel.substr(0, slash);
    };
    for (const contents::TreeItem& item : items) {
      if (item.kind == contents::TreeKind::File) {
        FileAction a = actions.at(item.relative);
        if (a == FileAction::Write) {
          // The same decision as the dry pass, now written (the input is unchanged since).
          decide(item, &item.path);
          changed.insert(parent_rel(item.relative));
        } else if (a == FileAction::Remove) {
          if (::unlink(item.path.c_str()) != 0) fail(item.path, "cannot remove: {}", errno_text(errno));
          changed.insert(parent_rel(item.relative));
        }
      } else if (item.kind == contents::TreeKind::HardLink) {
        FileAction a = actions.at(item.link);
        if (a == FileAction::Remove) {
          if (::unlink(item.path.c_str()) != 0) fail(item.path, "cannot remove: {}", errno_text(errno));
          changed.insert(parent_rel(item.relative));
        } else if (a == FileAction::Write) {
          // The rewrite gave the first name a new file: this name follows it.
          const std::string first = contents::tree_path(root_, item.link);
          const std::string temp = contents::tree_path(parent_of(item.path), ".offloadtool-link.XXXXXX");
          std::string name = temp;
          int fd = ::mkstemp(name.data());
          if (fd < 0) fail(item.path, "cannot create a temporary name beside it: {}", errno_text(errno));
          ::close(fd);
          ::unlink(name.c_str());
          if (::link(first.c_str(), name.c_str()) != 0) fail(item.path, "cannot link: {}", errno_text(errno));
          if (::rename(name.c_str(), item.path.c_str()) != 0) {
            int e = errno;
            ::unlink(name.c_str());
            fail(item.path, "cannot rename: {}", errno_text(e));
          }
          changed.insert(parent_rel(item.relative));
        }
      }
    }
    // Renames and removals changed their folders' times: given back.
    for (const std::string& rel : changed)
      if (auto it = dir_of.find(rel); it != dir_of.end()) set_times(it->second->path, it->second->st, false);
  }

  const std::string& root_;
  const Selection& selection_;
  TreeMode mode_;
  const TreeRewrite* rewrite_;
  std::optional<PerGpuRule> per_gpu_;
};

}  // namespace

TreeReport prune_tree(const std::string& root, const Selection& selection, TreeMode mode, const std::string& out_dir) {
  return TreePruner(root, selection, mode).run(folder_path(out_dir));
}

TreeReport rewrite_tree(const std::string& root, const TreeRewrite& rewrite, const std::string& out_dir) {
  static const Selection kNone;
  return TreePruner(root, kNone, TreeMode::Copy, &rewrite).run(folder_path(out_dir));
}

}  // namespace ot::prune
