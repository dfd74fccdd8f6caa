// offloadtool bundle: bundle host and device files into one file.
#include <CLI/CLI.hpp>

#include <memory>

#include "tools/native_bundler_options.h"
#include "tools/tools.h"

namespace ot::tools {
namespace {

struct BundleOptions {
  std::vector<std::string> pairs;
  std::string output, type, compress_method = "none";
  std::uint64_t align = 1;
  int level = -1000, threads = 0;
  std::uint16_t ccob_version = 0;  // 0: the release's (target::traits)
};

int bundle(const BundleOptions& o, const cli::Invocation& inv) {
  bundler::Config c = make_config();
  for (const std::string& p : o.pairs) {
    auto [id, file] = split_target_pair(p, inv.prog);
    c.targets.push_back(id);
    c.inputs.push_back(file);
  }
  c.outputs = {o.output};
  c.type = o.type.empty() ? type_from_extension(o.output) : o.type;
  if (c.type.empty()) fail("", "cannot tell the file type from '{}': give --type", o.output);
  if (c.type == "a") fail("", "archives can only be unbundled");
  c.bundle_align = o.align;
  c.compress = o.compress_method != "none";  // "none" unless --compress was given
  c.compression.method = o.compress_method == "zlib" ? codec::Method::Zlib : codec::Method::Zstd;
  c.compression.level = o.level != -1000 ? o.level : codec::default_level(c.compression.method);
  c.compression.threads = o.threads;
  // The bytes LLVM defines follow the release impersonated: the CCOB
  // version, and how bundle IDs are standardised (22 refuses IDs it would lose).
  const target::ReleaseTraits& release = target::traits(inv.release);
  c.ccob_version = o.ccob_version ? o.ccob_version : release.ccob_version;
  c.id_rules = release.bundle_ids;
  c.reading = inv.release;  // whose name the refusal of a lossy ID gives
  auto targets = bundler::check_targets(c, false);
  bundler::bundle(c, targets);
  return 0;
}

}  // namespace

cli::AppletBody define_bundle(CLI::App& app) {
  auto o = std::make_shared<BundleOptions>();
  app.description("Bundle host and device files into one offload bundle (the format clang-offload-bundler writes).");
  app.add_option("-t,--target", o->pairs, "<bundle id>=<file>, in bundle order (repeat)")->required();
  app.add_option("-o,--output", o->output, "output file ('-' for standard output)")->required();
  app.add_option("--type", o->type, "file type: i ii cui hipi d ll s bc gch ast o (default: from the output's extension)");
  app.add_option("--align", o->align, "alignment of each entry in binary bundles")
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 32));
  app.add_option("--compress", o->compress_method, "compress the bundle (CCOB): zstd, zlib or none")
      ->check(CLI::IsMember({"none", "zstd", "zlib"}))->expected(0, 1)->default_str("zstd");
  app.add_option("--level", o->level, "compression level (default: zstd 3, zlib 6, as LLVM)");
  app.add_option("--ccob-version", o->ccob_version,
                 "compressed bundle format version: 2 or 3 (default: the LLVM release's, 19: 2, 22: 3)")
      ->check(CLI::IsMember({2, 3}));
  app.add_option("--threads", o->threads, "zstd worker threads (output then differs from LLVM's single-threaded bytes)")
      ->check(CLI::Range(0, 256));
  return [o](const cli::Invocation& inv) { return bundle(*o, inv); };
}

}  // namespace ot::tools
