#include "contents/uri.h"

#include <filesystem>

#include <fmt/compile.h>
#include <fmt/format.h>

namespace ot::contents {

std::string percent_encode_path(std::string_view path) {
  std::string out;
  for (char ch : path) {
    auto c = static_cast<unsigned char>(ch);
    // What roc-obj-ls (Perl's URI::Encode) leaves bare: RFC 3986's unreserved
    // and reserved characters; but '#' and '?', which would end the path of
    // the URI, are encoded.
    bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                std::string_view("-._~!*'();:@&=+$,/[]").find(ch) != std::string_view::npos;
    if (keep)
      out += ch;
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::string file_uri(const std::string& path) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  return "file://" + percent_encode_path(ec ? path : abs.lexically_normal().string());
}

void append_code_object_uri(fmt::memory_buffer& out, std::string_view prefix, std::uint64_t offset,
                            std::uint64_t size) {
  // Compiled: fmt would otherwise parse the format string once per entry.
  fmt::format_to(fmt::appender(out), FMT_COMPILE("{}#offset={}&size={}"), prefix, offset, size);
}

std::string code_object_uri(std::string_view file_uri, std::uint64_t offset, std::uint64_t size) {
  fmt::memory_buffer out;
  append_code_object_uri(out, file_uri, offset, size);
  return fmt::to_string(out);
}

}  // namespace ot::contents
