// offloadtool bundle: bundle host and device files into one file.
#include "cli/version.h"
#include "tools/native_bundler_options.h"
#include "tools/tools.h"

namespace ot::tools {

int run_bundle(const cli::Invocation& inv) {
  CLI::App app{"Bundle host and device files into one offload bundle (the format clang-offload-bundler writes)."};
  app.name(inv.prog);
  app.set_version_flag("--version", cli::version_text);
  std::vector<std::string> pairs;
  std::string output, type, compress_method = "none";
  std::uint64_t align = 1;
  int level = -1000, threads = 0;
  std::uint16_t ccob_version = 2;
  app.add_option("-t,--target", pairs, "<bundle id>=<file>, in bundle order (repeat)")->required();
  app.add_option("-o,--output", output, "output file ('-' for standard output)")->required();
  app.add_option("--type", type, "file type: i ii cui hipi d ll s bc gch ast o (default: from the output's extension)");
  app.add_option("--align", align, "alignment of each entry in binary bundles")->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 32));
  app.add_option("--compress", compress_method, "compress the bundle (CCOB): zstd, zlib or none")
      ->check(CLI::IsMember({"none", "zstd", "zlib"}))->expected(0, 1)->default_str("zstd");
  app.add_option("--level", level, "compression level (default: zstd 3, zlib 6, as LLVM)");
  app.add_option("--ccob-version", ccob_version, "compressed bundle format version")->check(CLI::IsMember({2, 3}));
  app.add_option("--threads", threads, "zstd worker threads (output then differs from LLVM's single-threaded bytes)")
      ->check(CLI::Range(0, 256));
  return run_native(app, inv, [&] {
    bundler::Config c = make_config();
    for (const std::string& p : pairs) {
      auto [id, file] = split_target_pair(p, inv.prog);
      c.targets.push_back(id);
      c.inputs.push_back(file);
    }
    c.outputs = {output};
    c.type = type.empty() ? type_from_extension(output) : type;
    if (c.type.empty()) fail("", "cannot tell the file type from '{}': give --type", output);
    if (c.type == "a") fail("", "archives can only be unbundled");
    c.bundle_align = align;
    c.compress = app.count("--compress") > 0 && compress_method != "none";
    c.compression.method = compress_method == "zlib" ? compress::Method::Zlib : compress::Method::Zstd;
    c.compression.level = level != -1000 ? level : (c.compression.method == compress::Method::Zlib ? 6 : 3);
    c.compression.threads = threads;
    c.ccob_version = ccob_version;
    auto targets = bundler::check_targets(c, false);
    bundler::bundle(c, targets);
    return 0;
  });
}

}  // namespace ot::tools
