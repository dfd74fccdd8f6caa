// What the applets that walk containers share (list, size, unbundle --extract-dir, compat verify).
#include <CLI/CLI.hpp>

#include "contents/tree.h"
#include "support/error.h"
#include "support/json.h"
#include "tools/tools.h"

namespace ot::tools {

void add_threads_option(CLI::App& app, contents::Limits& limits) {
  app.add_option("--threads", limits.threads,
                 "threads decoding xz-compressed packages (.deb, .tar.xz) whose data has several blocks, as dpkg-deb "
                 "writes them; each thread takes up to 64 MiB (default 1)")
      ->check(CLI::Range(1, 256));
}

void add_progress_option(CLI::App& app, Progress::Mode& mode) {
  auto* on = app.add_flag_callback("--progress", [&mode] { mode = Progress::Mode::Always; },
                                   "show progress on standard error even where it is not a terminal (by default "
                                   "only a terminal shows it, and only for work taking more than two seconds)");
  auto* off = app.add_flag_callback("--no-progress", [&mode] { mode = Progress::Mode::Never; },
                                    "never show progress");
  on->excludes(off);
}

contents::Limits with_progress(contents::Limits limits, Progress& progress) {
  if (progress.enabled())
    limits.progress = [&progress](std::uint64_t done, std::uint64_t total) { progress.update(done, total); };
  return limits;
}

std::string skipped_text(const contents::TreeItem& item, const std::string& root) {
  switch (item.kind) {
    case contents::TreeKind::Symlink: return fmt::format("symbolic link to {}, not followed", item.link);
    case contents::TreeKind::HardLink:
      return fmt::format("hard link to {}, read once", contents::tree_path(root, item.link));
    default: return fmt::format("{}, skipped", contents::other_kind_name(item.st));
  }
}

std::string skipped_kind(const contents::TreeItem& item) {
  switch (item.kind) {
    case contents::TreeKind::Symlink: return "symlink";
    case contents::TreeKind::HardLink: return "hard link";
    default: return contents::other_kind_name(item.st);
  }
}

void append_skipped_json(fmt::memory_buffer& to, const contents::TreeItem& item, const std::string& root) {
  to.append(std::string_view(to.size() ? ",\n    {\"path\": " : "\n    {\"path\": "));
  json::append_str(to, item.path);
  to.append(std::string_view(", \"kind\": "));
  json::append_str(to, skipped_kind(item));
  to.append(std::string_view(", \"target\": "));
  if (item.kind == contents::TreeKind::Symlink)
    json::append_str(to, item.link);
  else if (item.kind == contents::TreeKind::HardLink)
    json::append_str(to, contents::tree_path(root, item.link));
  else
    to.append(std::string_view("null"));
  to.push_back('}');
}

}  // namespace ot::tools
