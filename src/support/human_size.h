// Sizes as the human-readable outputs show them (list, size, prune --dry-run,
// compress --info, compat select, package list): one rule for every applet.
// `--bytes` shows exact byte counts instead; the JSON outputs always give
// exact integers. Offsets are addresses, not sizes: they stay in hex.
//
// The rule, as docs/sizes.md documents it:
//   - below 1024 bytes, the count and B: "0 B", "1023 B";
//   - from 1024 bytes on, the largest binary unit the size reaches (KiB, MiB,
//     GiB, TiB, PiB, EiB: powers of 1024), with one decimal, rounded to the
//     nearest tenth, a half up: 1535 and 1536 bytes are "1.5 KiB", 1812792
//     is "1.7 MiB", 10^12 is "931.3 GiB";
//   - a size that rounds up to 1024.0 of its unit is 1.0 of the next one:
//     1048575 bytes is "1.0 MiB", not "1024.0 KiB".
// This is what GNU numfmt --to=iec-i --round=nearest --format=%.1f prints
// from 1024 on, with a space before the unit. ls -lh and du -h round up
// instead (1812792: 1.8M) and drop the decimal from 10 on.
//
// Exact arithmetic on the integer (no floating point): right for every
// 64-bit size, 2^64-1 included ("16.0 EiB").
#pragma once

#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace ot {

inline std::string human_size(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  static constexpr std::string_view kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  constexpr unsigned kLast = std::size(kUnits) - 1;
  // The size in tenths of unit u (1024^(u+1)), rounded half up. The
  // remainder is below 2^60, so r * 10 + 2^59 stays below 2^64.
  auto tenths = [bytes](unsigned u) {
    const unsigned shift = 10 * (u + 1);
    const std::uint64_t unit = std::uint64_t{1} << shift, r = bytes & (unit - 1);
    return (bytes >> shift) * 10 + ((r * 10 + unit / 2) >> shift);
  };
  unsigned u = 0;  // the largest unit the size reaches
  while (u < kLast && (bytes >> (10 * (u + 2))) != 0) ++u;
  std::uint64_t t = tenths(u);
  if (t >= 10240 && u < kLast) t = tenths(++u);  // 1023.95 KiB and more: 1.0 MiB
  return fmt::format("{}.{} {}", t / 10, t % 10, kUnits[u]);
}

// How an applet's human-readable output shows sizes: human_size(), or the
// exact count (--bytes, tools/tools.h add_bytes_flag).
enum class SizeStyle : std::uint8_t { Human, Exact };

// A size in running text: "1.7 MiB", or "1812792 bytes".
inline std::string size_text(std::uint64_t bytes, SizeStyle style) {
  return style == SizeStyle::Human ? human_size(bytes) : fmt::format("{} bytes", bytes);
}

// A size in a column whose header says what it counts: "1.7 MiB", or "1812792".
inline std::string size_cell(std::uint64_t bytes, SizeStyle style) {
  return style == SizeStyle::Human ? human_size(bytes) : fmt::format("{}", bytes);
}

}  // namespace ot
