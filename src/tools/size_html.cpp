#include "tools/size_html.h"

#include <cassert>

#include "tools/size_html_page.h"  // kSizeHtmlPage: size_html/page.html, written by size_html/embed.py

namespace ot::tools {
namespace {

// Where the template takes the data: inside <script type="application/json">.
constexpr std::string_view kDataMark = "@SIZE_JSON@";

// JSON as the text of a script element. The HTML parser ends the element at
// "</script" and, after "<!--", reads "<script" and "</script" as nesting
// (HTML's "script data escaped" states), whatever JSON quotes say; '<' can
// only stand inside a JSON string, where "\u003c" means the same character.
// So every '<' is written that way: JSON.parse reads the same document.
std::string script_safe(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string size_html_page(std::string_view size_json) {
  const std::string_view page = kSizeHtmlPage;
  const std::size_t at = page.find(kDataMark);
  assert(at != std::string_view::npos && page.find(kDataMark, at + 1) == std::string_view::npos);
  std::string out(page.substr(0, at));
  out += script_safe(size_json);
  out += page.substr(at + kDataMark.size());
  return out;
}

}  // namespace ot::tools
