// offloadtool join: kpack'd binaries given their device code back (prune/join.h
// does the work), the way back from AMD's kpack split.
//
//   offloadtool join FILE [--keep TARGET...] -o OUT
//   offloadtool join DIR  [--keep TARGET...] -o OUTDIR
#include <CLI/CLI.hpp>

#include <memory>

#include "contents/tree.h"
#include "prune/join.h"
#include "prune/tree.h"
#include "support/mapped_file.h"
#include "support/output_file.h"
#include "tools/tools.h"

namespace ot::tools {
namespace {

struct JoinOptions {
  std::string input;
  std::string output;
  std::vector<std::string> keep;
};

int join(const JoinOptions& o, const cli::Invocation& inv) {
  if (o.output.empty()) fail("", "no output: give -o FILE (or -o DIR for a directory)");
  std::optional<prune::Selection> keep;
  if (!o.keep.empty()) keep = prune::make_selection(prune::Selection::Mode::Keep, o.keep);
  const prune::Selection* k = keep ? &*keep : nullptr;
  if (contents::is_directory(o.input)) {
    if (o.output == "-") fail("", "a directory cannot be written to standard output: give -o DIR");
    prune::join_tree(o.input, k, inv.release, o.output);
    return 0;
  }
  std::shared_ptr<InputFile> in = InputFile::open(o.input);
  // Nothing reaches the output before the whole file was checked; the output
  // replaces its destination only when complete, with the input's mode.
  OutputFile out(o.output);
  if (o.input != "-") out.copy_mode_from(o.input);
  prune::PieceWriter writer(out, *in);
  prune::join_file(*in, k, inv.release, o.input, [&](Bytes b) { writer(b); });
  out.commit();
  return 0;
}

}  // namespace

cli::AppletBody define_join(CLI::App& app) {
  auto o = std::make_shared<JoinOptions>();
  app.description(
      "Give kpack'd binaries their device code back: the way back from AMD's kpack split (rocm-kpack, "
      "offloadtool split). A kpack'd ELF shared library or executable (HIPK records pointing at a .rocm_kpack_ref "
      "marker, its .hip_fatbin NOBITS) becomes a self-contained fat binary again, which a HIP runtime without kpack "
      "support loads: its archives are found as AMD's loader finds them (the marker's search paths from the binary's "
      "folder, @GFXARCH@, ROCM_KPACK_PATH and ROCM_KPACK_PATH_PREFIX), each record gets one offload bundle of the "
      "code objects the archives hold for it (the host entry first, the bundle entry IDs the splitter recorded, "
      "sorted, at 4 KiB boundaries, as clang lays out .hip_fatbin; the host entry's ID is the one the clang of the "
      "LLVM release offloadtool impersonates writes: OFFLOADTOOL_LLVM, offloadtool --version), the records get clang's HIPF magic and "
      "pointers to their bundles again (relocation addends, RELR slots or absolute values), and the marker's segment "
      "maps the new .hip_fatbin at the end of the file. A kpack'd PE image (DLL, EXE) gets its bundles back in .hip_fat "
      "at its own address (the raw data after it moved up, .kpackrf dropped, CheckSum computed again). A directory gives a new directory (-o OUTDIR): kpack'd "
      "binaries joined, the kpack archives and the folders they leave empty (.kpack) left out, the rest copied as "
      "prune copies a tree. A record no archive holds a code object for is an error naming its key and the paths "
      "looked at. docs/kpack.md says more.");
  app.add_option("input", o->input, "the kpack'd binary or the directory to join")->required();
  app.add_option("--keep", o->keep, "keep only the code objects these targets select (comma-separated or repeated; "
                 "default: every architecture an archive holds)")
      ->delimiter(',')
      ->allow_extra_args(false);
  app.add_option("-o,--output", o->output, "the joined file or directory")->required();
  return [o](const cli::Invocation& inv) { return join(*o, inv); };
}

}  // namespace ot::tools
