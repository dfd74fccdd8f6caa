// offloadtool list: the entries of a bundle.
#include <cstdio>

#include "bundler/archive_unbundle.h"
#include "cli/version.h"
#include "formats/bundle_binary.h"
#include "tools/native_bundler_options.h"
#include "tools/tools.h"

namespace ot::tools {

int run_list(const cli::Invocation& inv) {
  CLI::App app{"List the bundle IDs of an offload bundle (or of several concatenated ones), in file order; of an archive, \"<member>: <bundle id>\" for every member."};
  app.name(inv.prog);
  app.set_version_flag("--version", cli::version_text);
  std::string input, type;
  app.add_option("input", input, "bundle to read ('-' for standard input)")->required();
  app.add_option("--type", type, "file type (default: detected from the content)");
  return run_native(app, inv, [&] {
    bundler::Config c = make_config();
    c.inputs = {input};
    c.type = type.empty() ? type_from_content(input) : type;
    if (c.type.empty()) fail(input, "not an offload bundle");
    if (c.type == "a") {  // "<member>: <bundle id>" for every entry of every member
      std::string text;
      for (const bundler::ArchiveEntry& e : bundler::archive_entries(c)) text += e.member + ": " + e.bundle_id + "\n";
      std::fwrite(text.data(), 1, text.size(), stdout);
      return 0;
    }
    bundler::list(c);
    return 0;
  });
}

}  // namespace ot::tools
