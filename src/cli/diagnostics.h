// Everything offloadtool says on stderr goes through here.
#pragma once

#include <string>
#include <string_view>

namespace ot::cli {

void print_error(std::string_view prog, std::string_view message);    // "<prog>: error: <message>"
void print_warning(std::string_view prog, std::string_view message);  // "<prog>: warning: <message>"
void print_raw(std::string_view text);                                // verbatim to stderr

}  // namespace ot::cli
