// offloadtool unbundle: extract entries from a bundle, or device archives from
// a heterogeneous device archive, or all of an input's device code into a folder.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "bundler/archive_unbundle.h"
#include "bundler/extract_dir.h"
#include "compat/target_spec.h"
#include "support/mapped_file.h"
#include "support/printable.h"
#include "tools/native_bundler_options.h"
#include "tools/tools.h"

namespace ot::tools {

namespace {

constexpr const char* kFooter = R"(Inputs:
  A bundle (binary, text, object or compressed) or a static device library: an
  'ar' archive whose members are bundles ("heterogeneous device archive"). The
  type is detected from the content unless --type is given. With --extract-dir,
  also anything 'offloadtool list' reads: objects, shared libraries and
  executables (.hip_fatbin, __CLANG_OFFLOAD_BUNDLE__*, .llvm.offloading,
  .nv_fatbin and __nv_relfatbin sections), offload binaries, NVIDIA fat
  binaries, concatenated bundles and compressed bundles, tar, zip, cpio, rpm
  and .deb packages, nested.

Without --extract-dir, every --target is "<bundle id>=<output file>":
  for a bundle, the output gets the entry LLVM's clang-offload-bundler would
  unbundle for that ID (compatible IDs match: gfx906 serves gfx906:xnack+);
  for an archive, the output is a device archive holding every compatible code
  object of every member, byte for byte what clang-offload-bundler -type=a
  writes (members named <stem>-<bundle id><stem><ext>, ':' as '_').

With --extract-dir, the input may be a directory: each of its regular files is
read as an input, in byte order of the paths (symbolic links not followed, a
file with several hard links once), all into DIR with one set of names.

With --extract-dir DIR, every --target is a target, or several separated by
commas (--target gfx90a,sm_80); none: every entry. A target is
  - a bundle entry ID (hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+): it selects the
    entries compatible with it by LLVM's rules, as without --extract-dir;
  - a bare target: an AMD target ID (gfx1100, gfx90a:xnack-), a generic
    target (gfx9-generic) or an NVIDIA target (sm_80, sm_90a, compute_80). It
    selects exactly the entries of that target, of any offload kind: a feature
    left out means any setting (gfx90a selects gfx90a, gfx90a:xnack+ and
    gfx90a:xnack-; gfx90a:xnack- only gfx90a:xnack-), a generic target only
    code built for it, sm_80 the sm_80 cubins, compute_80 the compute_80 PTX.
(The target syntax of prune and compat; docs/targets.md.) An input without
any device code is an error, as in 'offloadtool list'.
Each selected code object becomes one file in DIR (created if missing),
named as it would be in a device archive after the innermost archive or
package member holding it; for an entry lying in the input itself (a bundle,
a library's .hip_fatbin) the input's own file name stands for the member name
("stdin" for '-'): libk.so's gfx906 entry becomes
libk-hipv4-amdgcn-amd-amdhsa--gfx906libk.bc. The content decides how the input
is read (--type is not used). Compressed bundles are written decompressed.
Host objects lose their bundle sections. NVIDIA fatbin entries are named as
cuobjdump -xelf/-xptx names them, <file stem>.<n>.sm_80.cubin and
<file stem>.<n>.sm_80.ptx (cubins and PTX counted apart), written decompressed,
PTX without its terminating NUL.
  - Names never leave DIR: '/', '\', NUL and control characters become '_',
    empty names become '_', '.' and '..' become '_.' and '_..'.
  - Duplicate names never overwrite each other: the second "x.bc" is written as
    "x.1.bc", the third as "x.2.bc", ... in input order (deterministic); so
    the same ID in several bundles of one library gives x.bc, x.1.bc, ...
  - Existing files in DIR with the same names are replaced.
  - All or nothing: files are staged in a hidden folder inside DIR
    (.offloadtool-extract-<pid>) and moved into place only when everything
    succeeded; after an error nothing is left. (Interrupted by a signal, the
    staging folder may remain: there can be more files than the signal
    handler tracks.)
  --verbose prints one line per written file: <path>\t<member>\t<bundle id>,
  <member> being the innermost archive or package member ('' for none).

Exit status: 0 on success, 1 on any error (nothing is written then).
)";

struct UnbundleOptions {
  std::string input, type, extract_dir;
  std::vector<std::string> pairs;
  bool allow_missing = false, hip_openmp = false, check_archive = false, verbose = false;
  contents::Limits limits;  // --extract-dir's walk
  Progress::Mode progress = Progress::Mode::Auto;
};

int unbundle(const UnbundleOptions& o, const cli::Invocation& inv) {
  bundler::Config c = make_config();
  c.inputs = {o.input};
  c.allow_missing_bundles = o.allow_missing;
  c.hip_openmp_compatible = o.hip_openmp;
  // A directory is read file by file, with --extract-dir only (bundler/extract_dir.h).
  const bool tree = !o.extract_dir.empty() && contents::is_directory(o.input);
  if (tree) {
    if (o.check_archive) fail(o.input, "--check-input-archive needs an archive input");
  } else {
    // Opened once: standard input serves the type's detection and the work.
    c.first_input = InputFile::open(o.input);
    c.type = o.type.empty() ? type_from_content(*c.first_input) : o.type;
    if (c.type.empty()) c.type = "bc";  // not a bundle: the binary handler finds no entries
    if (o.check_archive && c.type != "a") fail(o.input, "--check-input-archive needs an archive input");
    c.check_input_archive = o.check_archive;
  }
  if (!o.extract_dir.empty()) {
    for (const std::string& p : o.pairs)
      if (p.find('=') != std::string::npos)
        fail("", "'{}': with --extract-dir, --target takes a target without '=<file>' (see '{} --help')", p,
             inv.prog);
    const std::vector<compat::TargetSpec> targets = compat::parse_spec_list(o.pairs);
    if (o.check_archive) bundler::check_input_archive(c);
    std::vector<bundler::ExtractedFile> written;
    {
      Progress progress(o.progress, fmt::format("{} {}", inv.prog, printable(o.input)));
      written = bundler::extract_to_dir(c, targets, o.extract_dir, with_progress(o.limits, progress));
    }
    for (const bundler::ExtractedFile& f : written)
      if (o.verbose)
        print(fmt::format("{}\t{}\t{}\n", printable(f.path), printable(f.member), printable(f.bundle_id)));
    return 0;
  }
  if (o.pairs.empty())
    fail("", "--target <bundle id>=<output file> is required without --extract-dir (see '{} --help')", inv.prog);
  for (const std::string& p : o.pairs) {
    auto [id, file] = split_target_pair(p, inv.prog);
    c.targets.push_back(id);
    c.outputs.push_back(file);
  }
  auto targets = bundler::check_targets(c, true);
  bundler::unbundle(c, targets);
  return 0;
}

}  // namespace

cli::AppletBody define_unbundle(CLI::App& app) {
  auto o = std::make_shared<UnbundleOptions>();
  app.description("Extract entries from an offload bundle (binary, text, object or compressed) or a device archive.");
  app.footer(kFooter);
  app.add_option("input", o->input,
                 "bundle or archive to read (with --extract-dir: any container 'list' reads; '-' for standard input)")
      ->required();
  app.add_option("-t,--target", o->pairs,
                 "<bundle id>=<output file> (repeat); with --extract-dir: targets (bundle IDs, gfx1100, sm_80, ...; "
                 "comma-separated or repeated) selecting what to extract");
  app.add_option("--extract-dir", o->extract_dir, "write the selected device code objects as files into this folder");
  app.add_option("--type", o->type, "file type (default: detected from the content; 'a' for archives)");
  app.add_flag("--allow-missing", o->allow_missing,
               "a target without code objects is no error (empty output, empty device archive)");
  app.add_flag("--hip-openmp-compatible", o->hip_openmp, "let hip/hipv4 and openmp entries match each other");
  app.add_flag("--check-input-archive", o->check_archive,
               "archives: refuse members whose bundle IDs conflict (as clang-offload-bundler -check-input-archive)");
  app.add_flag("-v,--verbose", o->verbose, "with --extract-dir: list the written files");
  add_threads_option(app, o->limits);
  add_progress_option(app, o->progress);
  return [o](const cli::Invocation& inv) { return unbundle(*o, inv); };
}

}  // namespace ot::tools
