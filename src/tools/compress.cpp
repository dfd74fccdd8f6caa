// offloadtool compress: compress, decompress, recompress, describe or verify
// offload bundles (CCOB, the format `clang-offload-bundler -compress` writes).
//
//   offloadtool compress INPUT -o OUTPUT [settings]     bundle -> CCOB (LLVM 19's bytes by default)
//   offloadtool compress -d INPUT -o OUTPUT             CCOB -> bundle (--hash check to check the hash)
//   offloadtool compress --recompress INPUT -o OUTPUT [settings]
//   offloadtool compress --info [--json] INPUT
//   offloadtool compress --verify INPUT
//
// `--info --json` prints one JSON object, schema json::Schema::CompressInfo
// (support/json_schemas.cpp documents its members; offloadtool-json(7)).
// Hashes are LLVM's truncated MD5 (the first 8 digest bytes read as a
// little-endian integer), printed as LLVM's -verbose prints them.
#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdio>
#include <memory>

#include "cli/diagnostics.h"
#include "compress/bundle_file.h"
#include "contents/walker.h"
#include "formats/bundle_binary.h"
#include "formats/compressed_bundle.h"
#include "support/json.h"
#include "support/json_schemas.h"
#include "support/mapped_file.h"
#include "support/printable.h"
#include "target/llvm_release.h"
#include "tools/native_bundler_options.h"
#include "tools/tools.h"

namespace ot::tools {
namespace {

double ratio_of(const compress::DecodedCcob& d) {
  return d.compressed_size ? static_cast<double>(d.header.uncompressed_size) / static_cast<double>(d.compressed_size)
                           : 0.0;
}

// `found`: bundles the walker found inside another container (compress --info of an
// object, library, archive or package): each gets its "path", and "offset" is
// its offset in the file, or null where its bytes do not lie there as stored.
struct FoundBundle {
  std::vector<std::string> path;
  std::string name;
  std::optional<std::uint64_t> offset;
};

void print_json(const std::string& input, std::uint64_t file_size, const std::vector<compress::BundleInfo>& infos,
                const std::vector<FoundBundle>& found = {}) {
  std::string out = fmt::format(
      "{{\n  \"schema\": {},\n  \"file\": {},\n  \"size\": {},\n  \"bundles\": [",
      json::str(json::schema_name(json::Schema::CompressInfo)), json::str(input), file_size);
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const compress::BundleInfo& b = infos[i];
    std::string offset = std::to_string(b.offset), path;
    if (!found.empty()) {
      offset = found[i].offset ? std::to_string(*found[i].offset) : "null";
      for (const std::string& p : found[i].path) path += (path.empty() ? "" : ", ") + json::str(p);
      path = fmt::format(", \"path\": [{}]", path);
    }
    out += fmt::format("{}\n    {{\"index\": {}, \"offset\": {}{}, \"size\": {}, \"compressed\": {}", i ? "," : "",
                       i, offset, path, b.size, b.compressed);
    if (b.ccob) {
      const compress::DecodedCcob& d = *b.ccob;
      const formats::CcobHeader& h = d.header;
      auto opt = [](const std::optional<std::uint64_t>& v) { return v ? std::to_string(*v) : std::string("null"); };
      out += fmt::format(
          ",\n     \"format_version\": {}, \"method\": \"{}\", \"header_size\": {}, \"total_size\": {},\n"
          "     \"compressed_size\": {}, \"uncompressed_size\": {}, \"ratio\": {:.4f},\n"
          "     \"window_log\": {}, \"content_size\": {},\n"
          "     \"stored_hash\": \"0x{:016x}\", \"recomputed_hash\": \"0x{:016x}\", \"hash_match\": {}",
          h.version, codec::method_name(h.method), h.header_size, opt(h.total_size), d.compressed_size,
          h.uncompressed_size, ratio_of(d), b.stream ? std::to_string(b.stream->window_log) : "null",
          opt(b.stream ? b.stream->content_size : std::nullopt), h.hash, d.recomputed_hash.value_or(0),
          d.hash_matches());
    }
    out += "}";
  }
  out += infos.empty() ? "]\n}\n" : "\n  ]\n}\n";
  print(out);
}

// Sizes as people read them (support/human_size.h), exact with --bytes.
void print_text(const std::string& input, const std::vector<compress::BundleInfo>& infos, SizeStyle sizes,
                const std::vector<FoundBundle>& found = {}) {
  std::string out = fmt::format("{}: {} bundle{}\n", printable(input), infos.size(), infos.size() == 1 ? "" : "s");
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const compress::BundleInfo& b = infos[i];
    std::string name = found.empty() ? fmt::format("bundle {} at 0x{:x}", i, b.offset) : printable(found[i].name);
    if (!b.ccob) {
      out += fmt::format("\n{}: uncompressed, {}\n", name, size_text(b.size, sizes));
      continue;
    }
    const compress::DecodedCcob& d = *b.ccob;
    const formats::CcobHeader& h = d.header;
    out += fmt::format("\n{}: compressed bundle version {}, {}\n", name, h.version, codec::method_name(h.method));
    out += fmt::format("  {:<17}{}\n", "header", size_text(h.header_size, sizes));
    if (h.total_size) out += fmt::format("  {:<17}{}\n", "total size", size_text(*h.total_size, sizes));
    out += fmt::format("  {:<17}{}\n", "compressed", size_text(d.compressed_size, sizes));
    out += fmt::format("  {:<17}{} (ratio {:.2f})\n", "uncompressed", size_text(h.uncompressed_size, sizes),
                       ratio_of(d));
    if (b.stream) out += fmt::format("  {:<17}{}\n", "window log", b.stream->window_log);
    out += fmt::format("  {:<17}0x{:016x}\n", "stored hash", h.hash);
    out += fmt::format("  {:<17}0x{:016x} ({})\n", "recomputed hash", d.recomputed_hash.value_or(0),
                       d.hash_matches() ? "matches" : "MISMATCH");
  }
  print(out);
}

struct CompressOptions {
  std::string input, output, method = "zstd", window = "llvm";
  bool decompress = false, recompress = false, info = false, verify = false, as_json = false;
  SizeStyle sizes = SizeStyle::Human;  // --info's text
  // LLVM never checks the hash (its unbundling reports it only with
  // -verbose), and MD5 over the whole bundle would make decompression slower
  // than LLVM's (1.84x, measured); --hash check and --verify check it.
  std::string hash = "skip";
  bool long_distance = true;
  int level = -1000, threads = 0;
  std::uint16_t ccob_version = 0;  // 0: the release's (target::traits)
  Progress::Mode progress = Progress::Mode::Auto;
};

// --info of a file that is not itself a bundle (an object, a library, an
// archive, a package): every bundle the walker finds in it, described alike.
class BundleDescriber : public contents::Visitor {
 public:
  std::vector<compress::BundleInfo> infos;
  std::vector<FoundBundle> found;
  void bundle(const contents::BundleSite& b) override {
    infos.push_back(compress::inspect_bundle(b.bytes, b.compressed, b.errname, b.local_offset));
    found.push_back({b.where.path(), b.where.name(), b.offset});
  }
  void entry(const contents::Container&, const contents::Entry&) override {}
  // inspect_bundle decodes each compressed bundle (its hash); the walk need not.
  bool wants_payloads() const override { return false; }
};


int describe(const CompressOptions& o) {
  if (!o.output.empty()) fail("", "--info and --verify write no output file: drop -o");
  if (!o.info && o.sizes == SizeStyle::Exact) fail("", "--bytes goes with --info");
  if (o.info && o.input != "-") {
    auto in = InputFile::open(o.input);
    if (!formats::has_binary_bundle_magic(in->bytes()) && !formats::has_ccob_magic(in->bytes())) {
      BundleDescriber d;
      contents::walk_bytes(in->bytes(), o.input, d);
      if (d.infos.empty()) fail(o.input, "not an offload bundle or compressed offload bundle, and holds none");
      if (o.as_json)
        print_json(o.input, in->size(), d.infos, d.found);
      else
        print_text(o.input, d.infos, o.sizes, d.found);
      return 0;
    }
  }
  std::vector<compress::BundleInfo> infos = compress::inspect_file(o.input);
  if (o.info) {
    if (o.as_json)
      print_json(o.input, infos.empty() ? 0 : infos.back().offset + infos.back().size, infos);
    else
      print_text(o.input, infos, o.sizes);
    return 0;
  }
  for (const compress::BundleInfo& b : infos)
    if (b.ccob && !b.ccob->hash_matches()) throw compress::hash_mismatch_error(*b.ccob, o.input, b.offset);
  std::size_t n = 0;
  for (const compress::BundleInfo& b : infos) n += b.compressed;
  std::printf("%s: ok (%zu bundle%s, %zu compressed)\n", o.input.c_str(), infos.size(), infos.size() == 1 ? "" : "s",
              n);
  return 0;
}

// long_given: --long or --no-long was given.
int recode(const CompressOptions& c, bool long_given, const cli::Invocation& inv) {
  if (c.as_json) fail("", "--json goes with --info");
  if (c.sizes == SizeStyle::Exact) fail("", "--bytes goes with --info");
  if (c.output.empty()) fail("", "no output file: give -o (or '-o -' for standard output)");
  compress::RecodeOptions o;
  o.action = c.decompress   ? compress::Action::Decompress
             : c.recompress ? compress::Action::Recompress
                            : compress::Action::Compress;
  o.hash = c.hash == "skip"   ? compress::RecodeOptions::Hash::Skip
           : c.hash == "warn" ? compress::RecodeOptions::Hash::Warn
                              : compress::RecodeOptions::Hash::Check;
  o.warn = [&](const std::string& w) { cli::print_warning(inv.prog, w); };
  codec::Params& p = o.ccob.params;
  p.method = c.method == "zlib" ? codec::Method::Zlib : codec::Method::Zstd;
  p.level = c.level != -1000 ? c.level : codec::default_level(p.method);
  p.long_distance = c.long_distance;
  p.threads = c.threads;
  if (c.window == "auto") {
    o.ccob.auto_window = true;
  } else if (c.window != "llvm") {
    int log = 0;
    auto [end, ec] = std::from_chars(c.window.data(), c.window.data() + c.window.size(), log);
    if (ec != std::errc() || end != c.window.data() + c.window.size() || log < 10 || log > 31)
      fail("", "--window {}: expected llvm, auto or a window log from 10 to 31", c.window);
    p.window_log = log;
  }
  if (p.method == codec::Method::Zlib && (c.threads > 0 || c.window != "llvm" || long_given))
    fail("", "--threads, --window and --long are zstd settings");
  o.ccob.version = c.ccob_version ? c.ccob_version : target::traits(inv.release).ccob_version;
  Progress progress(c.progress, fmt::format("{} {}", inv.prog, printable(c.input)));
  if (progress.enabled()) o.progress = [&progress](std::uint64_t done, std::uint64_t total) { progress.update(done, total); };
  compress::recode_file(c.input, c.output, o);
  return 0;
}

}  // namespace

cli::AppletBody define_compress(CLI::App& app) {
  auto o = std::make_shared<CompressOptions>();
  app.description(fmt::format(
      "Compress, decompress or recompress offload bundles (CCOB, what clang-offload-bundler -compress writes),\n"
      "describe or verify them. Files holding several concatenated bundles are handled bundle by bundle.\n"
      "Defaults give the bytes of the LLVM release impersonated (offloadtool --version; one of {});\n"
      "--threads and --window auto do not (LLVM still reads them).",
      target::supported_majors_text()));
  app.add_option("input", o->input, "bundle or compressed bundle ('-' for standard input)")->required();
  app.add_option("-o,--output", o->output, "output file ('-' for standard output)");
  auto* d = app.add_flag("-d,--decompress", o->decompress, "decompress (--hash check: and check the stored hash)");
  auto* r = app.add_flag("--recompress", o->recompress, "decompress and compress again with the given settings");
  auto* i = app.add_flag("--info", o->info, "describe each bundle: header, sizes, ratio, stored and recomputed hash");
  auto* v = app.add_flag("--verify", o->verify, "decompress everything and check sizes and hashes (exit 1 if not)");
  d->excludes(r, i, v);
  r->excludes(i, v);
  i->excludes(v);
  app.add_flag("--json", o->as_json,
               fmt::format("with --info: JSON (schema {}; offloadtool-json(7))",
                           json::schema_name(json::Schema::CompressInfo)));
  add_progress_option(app, o->progress);
  add_bytes_flag(app, o->sizes, "with --info: ");
  app.add_option("--hash", o->hash,
                 "decompressing: check (a stored hash that does not match is an error), warn, or skip "
                 "(not computed, as LLVM; the default)")
      ->check(CLI::IsMember({"check", "warn", "skip"}));
  app.add_option("--method", o->method, "zstd (default) or zlib")->check(CLI::IsMember({"zstd", "zlib"}));
  app.add_option("--level", o->level, "compression level (default: zstd 3, zlib 6, as LLVM)");
  CLI::Option* long_flag =
      app.add_flag("--long,!--no-long", o->long_distance, "zstd long-distance matching (default on, as LLVM)");
  app.add_option("--ccob-version", o->ccob_version,
                 "compressed bundle format version: 2 (LLVM 19's) or 3 (LLVM 20+'s; LLVM 19 cannot read it);\n"
                 "default: the LLVM release impersonated's (offloadtool --version)")
      ->check(CLI::IsMember({2, 3}));
  app.add_option("--threads", o->threads, "zstd worker threads; the output is the same for every N >= 1 but not LLVM's")
      ->check(CLI::Range(0, 256));
  app.add_option("--window", o->window,
                 "zstd window: llvm (the library's, default), auto (covers the largest entry) or a log2 10..31");
  // long_flag belongs to `app`, which outlives the body (cli/run.cpp).
  return [o, long_flag](const cli::Invocation& inv) {
    return o->info || o->verify ? describe(*o) : recode(*o, long_flag->count() > 0, inv);
  };
}

}  // namespace ot::tools
