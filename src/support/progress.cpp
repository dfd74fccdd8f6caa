#include "support/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace ot {
namespace {

constexpr auto kEvery = std::chrono::milliseconds(200);   // at most five redraws a second

// No line for work shorter than this: two seconds, or OFFLOADTOOL_PROGRESS_DELAY_MS
// (the tests' way to see the line without waiting).
std::chrono::milliseconds quiet_time() {
  if (const char* v = std::getenv("OFFLOADTOOL_PROGRESS_DELAY_MS")) {
    char* end = nullptr;
    const unsigned long ms = std::strtoul(v, &end, 10);
    if (end != v && *end == '\0') return std::chrono::milliseconds(ms);
  }
  return std::chrono::seconds(2);
}

}  // namespace

std::string progress_bytes(std::uint64_t n) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (n < 1024) return fmt::format("{} B", n);
  double v = static_cast<double>(n);
  unsigned u = 0;
  while (v >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, kUnits[u]);
}

Progress::Progress(Mode mode, std::string what, bool streams_stdout)
    : enabled_(mode == Mode::Always || (mode == Mode::Auto && ::isatty(STDERR_FILENO) == 1 &&
                                        !(streams_stdout && ::isatty(STDOUT_FILENO) == 1))),
      what_(std::move(what)),
      start_(std::chrono::steady_clock::now()),
      quiet_(quiet_time()) {}

Progress::~Progress() { clear(); }

void Progress::update(std::uint64_t done, std::uint64_t total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ < quiet_ || (drawn_ && now - last_ < kEvery)) return;
  last_ = now;
  std::string line =
      total ? fmt::format("{}: {} of {} ({}%)", what_, progress_bytes(done), progress_bytes(total),
                          total ? done * 100 / total : 0)
            : fmt::format("{}: {}", what_, progress_bytes(done));
  // "\r" to the line's start, "ESC[K" erases what a longer line left.
  std::fprintf(stderr, "\r%s\x1b[K", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::clear() {
  if (!drawn_) return;
  std::fputs("\r\x1b[K", stderr);
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace ot
