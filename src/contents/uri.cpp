#include "contents/uri.h"

#include <filesystem>

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

std::string code_object_uri(const std::string& file_uri, std::uint64_t offset, std::uint64_t size) {
  return fmt::format("{}#offset={}&size={}", file_uri, offset, size);
}

}  // namespace ot::contents
