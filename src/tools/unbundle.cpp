// offloadtool unbundle: extract entries from a bundle.
#include "tools/native_bundler_options.h"
#include "tools/tools.h"

namespace ot::tools {

int run_unbundle(const cli::Invocation& inv) {
  CLI::App app{"Extract entries from an offload bundle (binary, text, object or compressed)."};
  app.name(inv.prog);
  app.set_version_flag("--version", std::string("offloadtool version " OT_VERSION));
  std::string input, type;
  std::vector<std::string> pairs;
  bool allow_missing = false, hip_openmp = false;
  app.add_option("input", input, "bundle to read ('-' for standard input)")->required();
  app.add_option("-t,--target", pairs, "<bundle id>=<output file> (repeat); compatible entries are matched as LLVM does")
      ->required();
  app.add_option("--type", type, "file type (default: detected from the content)");
  app.add_flag("--allow-missing", allow_missing, "write empty outputs for targets without a bundle");
  app.add_flag("--hip-openmp-compatible", hip_openmp, "let hip/hipv4 and openmp entries match each other");
  return run_native(app, inv, [&] {
    bundler::Config c = make_config();
    for (const std::string& p : pairs) {
      auto [id, file] = split_target_pair(p, inv.prog);
      c.targets.push_back(id);
      c.outputs.push_back(file);
    }
    c.inputs = {input};
    c.type = type.empty() ? type_from_content(input) : type;
    if (c.type.empty()) c.type = "bc";  // not a bundle: the binary handler finds no entries
    c.allow_missing_bundles = allow_missing;
    c.hip_openmp_compatible = hip_openmp;
    auto targets = bundler::check_targets(c, true);
    bundler::unbundle(c, targets);
    return 0;
  });
}

}  // namespace ot::tools
