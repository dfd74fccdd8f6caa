// Text from a file (entry IDs, member and section names, library messages) as
// the human-readable outputs show it: one helper for every applet, so that no
// name can end a line early or drive the terminal (ESC[2J). The JSON outputs
// escape with support/json.h instead.
//
// The escape, as docs/outputs.md documents it: a backslash is shown as \\, newline,
// carriage return and tab as \n, \r and \t, every other control character
// (C0, DEL, and C1: U+0080-U+009F) and every byte that is not part of valid
// UTF-8 as \xHH, one escape per byte. Everything else, UTF-8 included, is
// shown as it is. With the backslash escaped, the shown text maps back to
// exactly one string of bytes.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace ot {

namespace printable_detail {

// Length of the valid UTF-8 sequence at s[i] (a lead byte >= 0x80), else 0:
// overlong forms, surrogates and code points past U+10FFFF are not valid.
inline std::size_t utf8_length(std::string_view s, std::size_t i) {
  auto at = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  auto cont = [&](std::size_t k) { return at(k) >= 0x80 && at(k) <= 0xbf; };
  unsigned c = at(0), c1 = at(1);
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (!cont(1) || !cont(2) || (c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 > 0x9f)) return 0;
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3) || (c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 > 0x8f)) return 0;
    return 4;
  }
  return 0;
}

}  // namespace printable_detail

// `s` as the human-readable outputs show it, appended to `out`; runs that need
// no escape go in whole.
inline void append_printable(fmt::memory_buffer& out, std::string_view s) {
  std::size_t clean = 0;  // start of the run not yet appended
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      std::size_t n = printable_detail::utf8_length(s, i);
      bool c1 = n == 2 && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) <= 0x9f;  // U+0080-U+009F
      if (n && !c1) {
        i += n;
        continue;
      }
      if (c1) {  // both bytes escaped: the pair is one control character
        out.append(s.data() + clean, s.data() + i);
        fmt::format_to(fmt::appender(out), "\\x{:02x}\\x{:02x}", c, static_cast<unsigned char>(s[i + 1]));
        i += 2;
        clean = i;
        continue;
      }
    }
    out.append(s.data() + clean, s.data() + i);
    switch (c) {
      case '\\': out.append(std::string_view("\\\\")); break;
      case '\n': out.append(std::string_view("\\n")); break;
      case '\r': out.append(std::string_view("\\r")); break;
      case '\t': out.append(std::string_view("\\t")); break;
      default: fmt::format_to(fmt::appender(out), "\\x{:02x}", c);
    }
    ++i;
    clean = i;
  }
  out.append(s.data() + clean, s.data() + s.size());
}

inline std::string printable(std::string_view s) {
  fmt::memory_buffer out;
  append_printable(out, s);
  return fmt::to_string(out);
}

// Whether `s` holds a character printable() escapes other than the backslash
// (a control character or a byte that is not UTF-8).
inline bool has_control_characters(std::string_view s) {
  for (char ch : s)
    if (ch != '\\' && (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) >= 0x7f))
      return printable(s).size() != s.size() + static_cast<std::size_t>(std::count(s.begin(), s.end(), '\\'));
  return false;
}

}  // namespace ot
