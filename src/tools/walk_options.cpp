// What the applets that walk containers share (list, size, unbundle --extract-dir).
#include <CLI/CLI.hpp>

#include "support/error.h"
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

const char* const kNoDeviceCode =
    "no device code found (no offload bundle, compressed bundle, offload binary, NVIDIA fatbin or bundle section, in "
    "any archive member)";

void fail_no_device_code(const std::string& file) { fail(file, "{}", kNoDeviceCode); }

}  // namespace ot::tools
