// size --html: the page. The template (size_html/page.html: its markup, style
// and script, ours and small, no network) is compiled in; the data it draws is
// the object `size --json --per-file --per-bundle` prints, embedded in it as it is.
#pragma once

#include <string>
#include <string_view>

namespace ot::tools {

// The page showing `size_json` (one offloadtool-size object). Its bytes depend
// on nothing else.
std::string size_html_page(std::string_view size_json);

}  // namespace ot::tools
