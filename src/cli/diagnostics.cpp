#include "cli/diagnostics.h"

#include <cstdio>

namespace ot::cli {

void print_raw(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

void print_error(std::string_view prog, std::string_view message) {
  std::string line;
  line.append(prog).append(": error: ").append(message).append("\n");
  print_raw(line);
}

void print_warning(std::string_view prog, std::string_view message) {
  std::string line;
  line.append(prog).append(": warning: ").append(message).append("\n");
  print_raw(line);
}

}  // namespace ot::cli
