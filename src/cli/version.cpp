#include "cli/version.h"

#include <archive.h>
#include <fmt/format.h>
#include <zlib.h>
#include <zstd.h>

#include <string_view>

#include "codec/codec.h"

namespace ot::cli {

// The commit, filled in at build time by Meson's vcs_tag
// (src/cli/version_commit.cpp.in); "unknown" outside a git checkout.
extern const char kCommit[];

std::string version_text(const ReleaseChoice& release) {
  int workers = codec::max_threads();
  // archive_version_string(): "libarchive 3.6.2", a constant. Not
  // archive_version_details() (which adds the libraries it was built with):
  // libarchive 3.6.2 builds that text in a buffer it never frees, and
  // LeakSanitizer fails every --version of the sanitizer build on it.
  std::string_view details = archive_version_string();
  if (details.starts_with("libarchive ")) details.remove_prefix(std::string_view("libarchive ").size());
  std::string_view archive_version = details.substr(0, details.find(' '));
  std::string_view archive_libs = details.substr(archive_version.size());
  if (!archive_libs.empty()) archive_libs.remove_prefix(1);
  return fmt::format(
      "offloadtool version " OT_VERSION "\n"
      "commit: {}\n"
      "zstd: {}\n"
      "zlib: {}\n"
      "libarchive: {}{}\n"
      "--threads: {}\n"
      "llvm: {} ({}; supported: {})",
      kCommit, ZSTD_versionString(), zlibVersion(), archive_version,
      archive_libs.empty() ? "" : fmt::format(" ({})", archive_libs),
      workers > 0 ? fmt::format("yes (up to {} zstd workers)", workers) : "no (this libzstd has no worker threads)",
      target::traits(release.release).major, release.why, target::supported_majors_text());
}

}  // namespace ot::cli
