#include "formats/bundle_text.h"

#include <algorithm>
#include <functional>

namespace ot::formats {

std::optional<std::string_view> text_comment_for_type(std::string_view type) {
  if (type == "i" || type == "ii" || type == "cui" || type == "hipi") return "//";
  if (type == "d" || type == "s") return "#";
  if (type == "ll") return ";";
  return std::nullopt;
}

std::string text_start_marker(std::string_view comment) {
  return fmt::format("\n{} __CLANG_OFFLOAD_BUNDLE____START__ ", comment);
}
std::string text_end_marker(std::string_view comment) {
  return fmt::format("\n{} __CLANG_OFFLOAD_BUNDLE____END__ ", comment);
}

std::optional<std::string_view> find_text_comment(Bytes data) {
  const std::string_view text = as_chars(data);
  for (std::string_view comment : {"//", "#", ";"})
    if (text.find(text_start_marker(comment)) != std::string_view::npos) return comment;
  return std::nullopt;
}

std::vector<BundleEntry> read_text_bundle(Bytes data, std::string_view comment, const std::string& file) {
  const std::string_view text = as_chars(data);
  const std::string start = text_start_marker(comment), end = text_end_marker(comment);
  const std::boyer_moore_horspool_searcher start_search(start.begin(), start.end());
  const std::boyer_moore_horspool_searcher end_search(end.begin(), end.end());
  std::vector<BundleEntry> entries;
  std::size_t cursor = 0;
  for (;;) {
    auto s = std::search(text.begin() + static_cast<std::ptrdiff_t>(cursor), text.end(), start_search);
    if (s == text.end()) break;
    std::size_t id_at = static_cast<std::size_t>(s - text.begin()) + start.size();
    std::size_t nl = text.find('\n', id_at);
    if (nl == std::string_view::npos) break;
    BundleEntry e;
    e.id = std::string(text.substr(id_at, nl - id_at));
    e.offset = nl + 1;
    auto f = std::search(text.begin() + static_cast<std::ptrdiff_t>(e.offset), text.end(), end_search);
    if (f == text.end())
      fail_at({file, static_cast<std::uint64_t>(s - text.begin())}, "text bundle entry '{}' has no end marker", e.id);
    std::size_t end_at = static_cast<std::size_t>(f - text.begin());
    e.size = end_at - e.offset;
    std::size_t end_nl = text.find('\n', end_at + end.size());
    entries.push_back(std::move(e));
    if (end_nl == std::string_view::npos) break;
    cursor = end_nl + 1;
  }
  return entries;
}

}  // namespace ot::formats
