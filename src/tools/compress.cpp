// offloadtool compress: compress, decompress, recompress, describe or verify
// offload bundles (CCOB, the format `clang-offload-bundler -compress` writes).
//
//   offloadtool compress INPUT -o OUTPUT [settings]     bundle -> CCOB (LLVM 19's bytes by default)
//   offloadtool compress -d INPUT -o OUTPUT             CCOB -> bundle (--hash check to check the hash)
//   offloadtool compress --recompress INPUT -o OUTPUT [settings]
//   offloadtool compress --info [--json] INPUT
//   offloadtool compress --verify INPUT
//
// `--info --json` prints one JSON object, schema "offloadtool.compress.info",
// version 1 (fields are only ever added within a version):
//   {
//     "schema": "offloadtool.compress.info", "version": 1,
//     "file": <input path>, "size": <bytes>,
//     "bundles": [ {
//       "index": <n, 0-based, file order>, "offset": <in the file>, "size": <bytes it occupies>,
//       "compressed": <bool>,
//       -- only when compressed:
//       "format_version": <1|2|3>, "method": <"zstd"|"zlib">, "header_size": <bytes>,
//       "total_size": <header + compressed bytes, from the header; null for version 1>,
//       "compressed_size": <bytes>, "uncompressed_size": <bytes>,
//       "ratio": <uncompressed / compressed, a number>,
//       "window_log": <log2 of the zstd window or zlib window bits; null if unreadable>,
//       "content_size": <size recorded in the zstd frame; null when absent or zlib>,
//       "stored_hash": "0x<16 hex digits>", "recomputed_hash": "0x<16 hex digits>",
//       "hash_match": <bool>
//     } ... ]
//   }
// Hashes are LLVM's truncated MD5 (the first 8 digest bytes read as a
// little-endian integer), printed as LLVM's -verbose prints them.
#include <charconv>
#include <cstdio>

#include "cli/diagnostics.h"
#include "cli/version.h"
#include "compress/bundle_file.h"
#include "tools/native_bundler_options.h"
#include "tools/tools.h"

namespace ot::tools {
namespace {

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\')
      out += {'\\', ch};
    else if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\u{:04x}", c);
    else
      out += ch;
  }
  return out + "\"";
}

double ratio_of(const compress::DecodedCcob& d) {
  return d.compressed_size ? static_cast<double>(d.header.uncompressed_size) / static_cast<double>(d.compressed_size)
                           : 0.0;
}

void print_json(const std::string& input, std::uint64_t file_size, const std::vector<compress::BundleInfo>& infos) {
  std::string out = fmt::format(
      "{{\n  \"schema\": \"offloadtool.compress.info\",\n  \"version\": 1,\n  \"file\": {},\n  \"size\": {},\n"
      "  \"bundles\": [",
      json_string(input), file_size);
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const compress::BundleInfo& b = infos[i];
    out += fmt::format("{}\n    {{\"index\": {}, \"offset\": {}, \"size\": {}, \"compressed\": {}", i ? "," : "", i,
                       b.offset, b.size, b.compressed);
    if (b.ccob) {
      const compress::DecodedCcob& d = *b.ccob;
      const formats::CcobHeader& h = d.header;
      auto opt = [](const std::optional<std::uint64_t>& v) { return v ? std::to_string(*v) : std::string("null"); };
      out += fmt::format(
          ",\n     \"format_version\": {}, \"method\": \"{}\", \"header_size\": {}, \"total_size\": {},\n"
          "     \"compressed_size\": {}, \"uncompressed_size\": {}, \"ratio\": {:.4f},\n"
          "     \"window_log\": {}, \"content_size\": {},\n"
          "     \"stored_hash\": \"0x{:016x}\", \"recomputed_hash\": \"0x{:016x}\", \"hash_match\": {}",
          h.version, compress::method_name(h.method), h.header_size, opt(h.total_size), d.compressed_size,
          h.uncompressed_size, ratio_of(d), b.stream ? std::to_string(b.stream->window_log) : "null",
          opt(b.stream ? b.stream->content_size : std::nullopt), h.hash, d.recomputed_hash.value_or(0),
          d.hash_matches());
    }
    out += "}";
  }
  out += infos.empty() ? "]\n}\n" : "\n  ]\n}\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void print_text(const std::string& input, const std::vector<compress::BundleInfo>& infos) {
  std::string out = fmt::format("{}: {} bundle{}\n", input, infos.size(), infos.size() == 1 ? "" : "s");
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const compress::BundleInfo& b = infos[i];
    if (!b.ccob) {
      out += fmt::format("\nbundle {} at 0x{:x}: uncompressed, {} bytes\n", i, b.offset, b.size);
      continue;
    }
    const compress::DecodedCcob& d = *b.ccob;
    const formats::CcobHeader& h = d.header;
    out += fmt::format("\nbundle {} at 0x{:x}: compressed bundle version {}, {}\n", i, b.offset, h.version,
                       compress::method_name(h.method));
    out += fmt::format("  {:<17}{} bytes\n", "header", h.header_size);
    if (h.total_size) out += fmt::format("  {:<17}{} bytes\n", "total size", *h.total_size);
    out += fmt::format("  {:<17}{} bytes\n", "compressed", d.compressed_size);
    out += fmt::format("  {:<17}{} bytes (ratio {:.2f})\n", "uncompressed", h.uncompressed_size, ratio_of(d));
    if (b.stream) out += fmt::format("  {:<17}{}\n", "window log", b.stream->window_log);
    out += fmt::format("  {:<17}0x{:016x}\n", "stored hash", h.hash);
    out += fmt::format("  {:<17}0x{:016x} ({})\n", "recomputed hash", d.recomputed_hash.value_or(0),
                       d.hash_matches() ? "matches" : "MISMATCH");
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace

int run_compress(const cli::Invocation& inv) {
  CLI::App app{
      "Compress, decompress or recompress offload bundles (CCOB, what clang-offload-bundler -compress writes),\n"
      "describe or verify them. Files holding several concatenated bundles are handled bundle by bundle.\n"
      "Defaults give LLVM 19's bytes; --threads and --window auto do not (LLVM 19 still reads them)."};
  app.name(inv.prog);
  app.set_version_flag("--version", cli::version_text);
  std::string input, output, method = "zstd", window = "llvm";
  bool decompress = false, recompress = false, info = false, verify = false, as_json = false;
  // LLVM never checks the hash (its unbundling reports it only with
  // -verbose), and MD5 over the whole bundle would make decompression slower
  // than LLVM's (1.84x, measured); --hash check and --verify check it.
  std::string hash = "skip";
  bool long_distance = true;
  int level = -1000, threads = 0;
  std::uint16_t ccob_version = 2;
  app.add_option("input", input, "bundle or compressed bundle ('-' for standard input)")->required();
  app.add_option("-o,--output", output, "output file ('-' for standard output)");
  auto* d = app.add_flag("-d,--decompress", decompress, "decompress (--hash check: and check the stored hash)");
  auto* r = app.add_flag("--recompress", recompress, "decompress and compress again with the given settings");
  auto* i = app.add_flag("--info", info, "describe each bundle: header, sizes, ratio, stored and recomputed hash");
  auto* v = app.add_flag("--verify", verify, "decompress everything and check sizes and hashes (exit 1 if not)");
  d->excludes(r, i, v);
  r->excludes(i, v);
  i->excludes(v);
  app.add_flag("--json", as_json, "with --info: JSON (schema offloadtool.compress.info, version 1)");
  app.add_option("--hash", hash,
                 "decompressing: check (a stored hash that does not match is an error), warn, or skip "
                 "(not computed, as LLVM; the default)")
      ->check(CLI::IsMember({"check", "warn", "skip"}));
  app.add_option("--method", method, "zstd (default) or zlib")->check(CLI::IsMember({"zstd", "zlib"}));
  app.add_option("--level", level, "compression level (default: zstd 3, zlib 6, as LLVM)");
  app.add_flag("--long,!--no-long", long_distance, "zstd long-distance matching (default on, as LLVM)");
  app.add_option("--ccob-version", ccob_version,
                 "compressed bundle format version: 2 (LLVM 19's, default) or 3 (LLVM 20+; LLVM 19 cannot read it)")
      ->check(CLI::IsMember({2, 3}));
  app.add_option("--threads", threads, "zstd worker threads; the output is the same for every N >= 1 but not LLVM's")
      ->check(CLI::Range(0, 256));
  app.add_option("--window", window,
                 "zstd window: llvm (the library's, default), auto (covers the largest entry) or a log2 10..31");
  return run_native(app, inv, [&] {
    if (info || verify) {
      if (!output.empty()) fail("", "--info and --verify write no output file: drop -o");
      std::vector<compress::BundleInfo> infos = compress::inspect_file(input);
      if (info) {
        if (as_json)
          print_json(input, infos.empty() ? 0 : infos.back().offset + infos.back().size, infos);
        else
          print_text(input, infos);
        return 0;
      }
      for (const compress::BundleInfo& b : infos)
        if (b.ccob && !b.ccob->hash_matches()) throw compress::hash_mismatch_error(*b.ccob, input, b.offset);
      std::size_t n = 0;
      for (const compress::BundleInfo& b : infos) n += b.compressed;
      std::printf("%s: ok (%zu bundle%s, %zu compressed)\n", input.c_str(), infos.size(), infos.size() == 1 ? "" : "s",
                  n);
      return 0;
    }
    if (as_json) fail("", "--json goes with --info");
    if (output.empty()) fail("", "no output file: give -o (or '-o -' for standard output)");
    compress::RecodeOptions o;
    o.action = decompress ? compress::Action::Decompress
               : recompress ? compress::Action::Recompress
                            : compress::Action::Compress;
    o.hash = hash == "skip"   ? compress::RecodeOptions::Hash::Skip
             : hash == "warn" ? compress::RecodeOptions::Hash::Warn
                              : compress::RecodeOptions::Hash::Check;
    o.warn = [&](const std::string& w) { cli::print_warning(inv.prog, w); };
    compress::Params& p = o.ccob.params;
    p.method = method == "zlib" ? compress::Method::Zlib : compress::Method::Zstd;
    p.level = level != -1000 ? level : (p.method == compress::Method::Zlib ? 6 : 3);
    p.long_distance = long_distance;
    p.threads = threads;
    if (window == "auto") {
      o.ccob.auto_window = true;
    } else if (window != "llvm") {
      int log = 0;
      auto [end, ec] = std::from_chars(window.data(), window.data() + window.size(), log);
      if (ec != std::errc() || end != window.data() + window.size() || log < 10 || log > 31)
        fail("", "--window {}: expected llvm, auto or a window log from 10 to 31", window);
      p.window_log = log;
    }
    if (p.method == compress::Method::Zlib && (threads > 0 || window != "llvm" || app.count("--long")))
      fail("", "--threads, --window and --long are zstd settings");
    o.ccob.version = ccob_version;
    compress::recode_file(input, output, o);
    return 0;
  });
}

}  // namespace ot::tools
