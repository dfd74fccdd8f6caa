// --bytes: what the applets that print sizes share (support/human_size.h).
#include <CLI/CLI.hpp>

#include "tools/tools.h"

namespace ot::tools {

void add_bytes_flag(CLI::App& app, SizeStyle& sizes, std::string_view when) {
  app.add_flag_callback(
      "--bytes", [&sizes] { sizes = SizeStyle::Exact; },
      std::string(when) +
          "print sizes as exact byte counts (decimal) instead of binary units with one decimal, rounded half up "
          "(512 B, 1.7 MiB); offsets stay in hex");
}

}  // namespace ot::tools
