// JSON text for the --json outputs: strings escaped as JSON requires (bytes
// that are not printable ASCII as \u00XX, so that any file name round-trips
// byte for byte), null for absent values. One helper for every applet.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace ot::json {

inline std::string str(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}
// "" -> null
inline std::string str_or_null(const std::string& s) { return s.empty() ? "null" : str(s); }
// nullopt -> null ("" stays a string)
inline std::string opt_str(const std::optional<std::string>& s) { return s ? str(*s) : "null"; }
inline const char* boolean(bool b) { return b ? "true" : "false"; }

}  // namespace ot::json
