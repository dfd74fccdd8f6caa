#include "cli/diagnostics.h"

#include <cstdio>

#include "support/printable.h"

namespace ot::cli {

void print_raw(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

// A line holding a control character (a file's name or ID, a library's
// message) is shown escaped whole: every error and warning is one line, and
// nothing in it reaches the terminal as a command.
void print_error(std::string_view prog, std::string_view message) {
  std::string line;
  line.append(prog).append(": error: ");
  line.append(has_control_characters(message) ? printable(message) : std::string(message)).append("\n");
  print_raw(line);
}

void print_warning(std::string_view prog, std::string_view message) {
  std::string line;
  line.append(prog).append(": warning: ");
  line.append(has_control_characters(message) ? printable(message) : std::string(message)).append("\n");
  print_raw(line);
}

}  // namespace ot::cli
