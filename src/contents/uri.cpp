#include "contents/uri.h"

#include <filesystem>

#include <fmt/format.h>

namespace ot::contents {

std::string percent_encode_path(std::string_view path) {
  std::string out;
  for (char ch : path) {
    auto c = static_cast<unsigned char>(ch);
    bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
                c == '_' || c == '~' || c == '/';
    if (keep)
      out += ch;
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::string code_object_uri(const std::string& path, std::uint64_t offset, std::uint64_t size) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  std::string p = ec ? path : abs.lexically_normal().string();
  return fmt::format("file://{}#offset={}&size={}", percent_encode_path(p), offset, size);
}

}  // namespace ot::contents
