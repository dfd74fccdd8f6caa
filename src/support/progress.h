// Progress of long work, for people: one line on standard error, redrawn in
// place, shown only where standard error is a terminal (or when asked for),
// never in scripts or CI logs (Mode::Auto on a pipe or file prints nothing),
// and only once the work has taken more than two seconds; at most five
// updates a second; the line is cleared when the work ends, so what the
// applet prints after it starts on a clean line.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace ot {

class Progress {
 public:
  enum class Mode { Auto, Always, Never };

  // `what`: the work, as the line opens ("offloadtool list pkg.deb").
  // `streams_stdout`: the work prints as it goes (list): under Auto, no line
  // where standard output is a terminal too (what it prints is the progress).
  Progress(Mode mode, std::string what, bool streams_stdout = false);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `done` bytes of `total` (0: not known; the line then gives `done` alone).
  void update(std::uint64_t done, std::uint64_t total);
  // Clears the line (if one was drawn); later updates draw it again.
  void clear();

  // Whether a line can ever be drawn (mode and terminal).
  bool enabled() const { return enabled_; }

 private:
  bool enabled_ = false;
  bool drawn_ = false;
  std::string what_;
  std::chrono::steady_clock::time_point start_, last_;
  std::chrono::milliseconds quiet_;
};

// "1.2 GiB" style for the progress line (binary units, one decimal).
std::string progress_bytes(std::uint64_t n);

}  // namespace ot
