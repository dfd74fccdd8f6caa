// offloadtool split: what AMD's rocm-kpack splitter does, natively (prune/split.h
// does the work): HIP binaries (ELF, PE) rewritten to fetch their code objects
// from per-architecture kpack archives, written beside them.
//
//   offloadtool split FILE... -o OUTDIR [--name NAME] [--compress none|zstd] [--root DIR]
//   offloadtool split DIR -o OUTDIR
//   offloadtool split PACKAGE -o OUTPACKAGE      (.deb, tarball, wheel)
#include <CLI/CLI.hpp>

#include <filesystem>
#include <memory>
#include <optional>

#include "prune/split.h"
#include "support/printable.h"
#include "tools/tools.h"

namespace ot::tools {
namespace {

struct SplitOptions {
  std::vector<std::string> inputs;
  std::string output, name, compress = "none";
  std::optional<std::string> root;
  SizeStyle sizes = SizeStyle::Human;
};

// The default archive name: the first input's name up to its first '.'
// ("librocsparse.so.0" -> "librocsparse"), as AMD names archives by artifact.
std::string default_name(const std::string& input) {
  std::string base = std::filesystem::path(input).lexically_normal().filename().string();
  if (base.empty() || base == "." || base == "..") base = std::filesystem::absolute(input).lexically_normal().filename().string();
  if (auto dot = base.find('.'); dot != std::string::npos && dot > 0) base.resize(dot);
  return base.empty() ? std::string("kpack") : base;
}

int run_split(const SplitOptions& o) {
  prune::SplitOptions opts;
  opts.name = o.name.empty() ? default_name(o.inputs.front()) : o.name;
  opts.scheme = o.compress == "zstd" ? formats::KpackScheme::ZstdPerKernel : formats::KpackScheme::None;
  opts.root = o.root;
  prune::SplitReport r = prune::split(o.inputs, o.output, opts);
  for (const prune::SplitFile& f : r.files) {
    print(fmt::format("split {}: {} records, {} code objects, {} -> {}\n", printable(f.path), f.binary.records,
                      f.code_objects, size_text(f.binary.size_before, o.sizes), size_text(f.binary.size_after, o.sizes)));
    for (const std::string& n : f.binary.notes) print(fmt::format("note: {}: {}\n", printable(f.path), printable(n)));
  }
  for (const std::string& n : r.notes) print(fmt::format("note: {}\n", printable(n)));
  for (const prune::SplitArchive& a : r.archives)
    print(fmt::format("archive {}: {} code objects, {}\n", printable(a.path), a.kernels, size_text(a.size, o.sizes)));
  return 0;
}

}  // namespace

cli::AppletBody define_split(CLI::App& app) {
  auto o = std::make_shared<SplitOptions>();
  app.description(
      "Split HIP binaries as AMD's rocm-kpack splitter does (docs/kpack.md): each ELF shared library or executable "
      "with a .hip_fatbin, and each Windows PE image (DLL, EXE) with a .hip_fat, is rewritten so that the HIP runtime "
      "fetches its code objects from per-architecture kpack archives (ELF: a .rocm_kpack_ref section naming "
      "../.kpack/NAME_@GFXARCH@.kpack and the binary, mapped by a segment of its own; the records of "
      ".hipFatBinSegment made HIPK with their index; .hip_fatbin made NOBITS with its whole pages cut out of the "
      "file. PE: the marker in a .kpackrf section appended after the last; the records of .hipFatB made HIPK; "
      ".hip_fat's whole pages cut from its raw data, CheckSum computed again), and its code objects (compressed "
      "bundles decompressed) go to "
      "OUTDIR/.kpack/NAME_<arch>.kpack, one archive per architecture, keyed \"<path>#<n>\" (--root moves them "
      "to OUTDIR/ROOT/.kpack, paths then taken from ROOT). A directory is "
      "rewritten as a new tree (other files cloned, links kept); files given alone land at OUTDIR/<name>. A package "
      "(.deb, tarball, wheel) is written as a new package of the same kind: its HIP binaries rewritten, the archives "
      "added as members PREFIX/.kpack/NAME_<arch>.kpack, PREFIX the install prefix of its first HIP binary (what "
      "comes before lib/, lib64/, lib32/ or bin/: usr for usr/lib/x86_64-linux-gnu/librocrand.so.1; else its "
      "folder) unless --root "
      "says (md5sums, Installed-Size and RECORD updated). Where "
      "AMD's splitter writes a broken pointer (DT_RELR, non-PIE executables) the right value is written and a note "
      "says so; a PE image with data after its last section (an overlay, COFF symbols, a signature), which AMD's "
      "splitter leaves inconsistent, is refused. The output (folder or package) must not exist; it is renamed into place when complete.");
  app.add_option("input", o->inputs, "the HIP binaries, or one directory, or one package, to split")->required();
  app.add_option("-o,--output", o->output, "the new folder (the new package, for a package) to write")->required();
  app.add_option("--name", o->name,
                 "the archives' name and group (AMD's artifact prefix, e.g. blas_lib; default: the first input's "
                 "name up to its first '.')");
  app.add_option("--compress", o->compress,
                 "how archives store code objects: none (as AMD's splitter writes them; default) or zstd (one "
                 "level-3 zstd frame per code object, AMD's zstd-per-kernel scheme)")
      ->check(CLI::IsMember({"none", "zstd"}));
  app.add_option("--root", o->root,
                 "the folder of the output (a path inside the package) whose .kpack/ holds the archives and from "
                 "which the binaries' kernel names are taken, AMD's install prefix (e.g. opt/rocm); every HIP binary "
                 "must lie under it. Default: the top of the output; for a package, its first HIP binary's install "
                 "prefix");
  add_bytes_flag(app, o->sizes, "");
  return [o](const cli::Invocation&) { return run_split(*o); };
}

}  // namespace ot::tools
