// JSON text for the --json outputs: strings escaped as JSON requires (bytes
// that are not printable ASCII as \u00XX, so that any file name round-trips
// byte for byte), null for absent values. One helper for every applet.
#pragma once

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace ot::json {

// `s` as a JSON string, appended to `out`: runs that need no escape go in
// whole (a listing of a ROCm library escapes ~4000 strings; building each one
// a character at a time was a fifth of `list --json`).
inline void append_str(fmt::memory_buffer& out, std::string_view s) {
  out.push_back('"');
  std::size_t clean = 0;  // start of the run not yet appended
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') continue;
    out.append(s.data() + clean, s.data() + i);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(s[i]);
    } else {
      fmt::format_to(fmt::appender(out), "\\u{:04x}", c);
    }
    clean = i + 1;
  }
  out.append(s.data() + clean, s.data() + s.size());
  out.push_back('"');
}

inline std::string str(std::string_view s) {
  fmt::memory_buffer out;
  append_str(out, s);
  return fmt::to_string(out);
}
// "" -> null
inline std::string str_or_null(const std::string& s) { return s.empty() ? "null" : str(s); }
inline const char* boolean(bool b) { return b ? "true" : "false"; }

}  // namespace ot::json
