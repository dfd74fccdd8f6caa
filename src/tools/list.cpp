// offloadtool list: the entries of a bundle.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "bundler/archive_unbundle.h"
#include "formats/bundle_binary.h"
#include "tools/native_bundler_options.h"
#include "tools/tools.h"

namespace ot::tools {
namespace {

struct ListOptions {
  std::string input, type;
};

int list(const ListOptions& o) {
  bundler::Config c = make_config();
  c.inputs = {o.input};
  c.type = o.type.empty() ? type_from_content(o.input) : o.type;
  if (c.type.empty()) fail(o.input, "not an offload bundle");
  if (c.type == "a") {  // "<member>: <bundle id>" for every entry of every member
    std::string text;
    for (const bundler::ArchiveEntry& e : bundler::archive_entries(c)) text += e.member + ": " + e.bundle_id + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  bundler::list(c);
  return 0;
}

}  // namespace

cli::AppletBody define_list(CLI::App& app) {
  auto o = std::make_shared<ListOptions>();
  app.description("List the bundle IDs of an offload bundle (or of several concatenated ones), in file order; of an "
                  "archive, \"<member>: <bundle id>\" for every member.");
  app.add_option("input", o->input, "bundle to read ('-' for standard input)")->required();
  app.add_option("--type", o->type, "file type (default: detected from the content)");
  return [o](const cli::Invocation&) { return list(*o); };
}

}  // namespace ot::tools
