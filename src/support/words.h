// Space-separated word lists, as the processor tables spell alternative names.
#pragma once

#include <string_view>

namespace ot {

// Whether the space-separated `list` holds `word`.
inline bool has_word(std::string_view list, std::string_view word) {
  while (!list.empty()) {
    auto sp = list.find(' ');
    if (list.substr(0, sp) == word) return true;
    if (sp == std::string_view::npos) break;
    list.remove_prefix(sp + 1);
  }
  return false;
}

}  // namespace ot
