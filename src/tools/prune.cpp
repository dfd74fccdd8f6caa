// offloadtool prune: a container, relocatable object or ar archive rewritten
// with only the device entries of the GPUs kept (prune/prune.h does the work);
// a package (.deb, tarball, wheel) rewritten member by member (prune/package.h).
//
//   offloadtool prune --keep TARGET... FILE -o OUT
//   offloadtool prune --drop TARGET... FILE --in-place
//   offloadtool prune --keep TARGET... FILE --dry-run [--json]
//   offloadtool prune --keep-detected FILE -o OUT            (this machine's AMD and NVIDIA GPUs, as compat detect finds them)
//
// --json prints one JSON object, schema json::Schema::Prune (support/json_schemas.cpp
// documents its members; offloadtool-json(7)); for a package json::Schema::PruneTree.
#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <thread>

#include "cli/diagnostics.h"
#include "compat/detect.h"
#include "contents/tree.h"
#include "prune/package.h"
#include "prune/prune.h"
#include "prune/tree.h"
#include "support/json.h"
#include "support/json_schemas.h"
#include "support/mapped_file.h"
#include "support/output_file.h"
#include "support/printable.h"
#include "tools/tools.h"

namespace ot::tools {
namespace {

struct PruneOptions {
  std::string input;
  std::string output;
  std::vector<std::string> keep, drop;
  bool in_place = false, dry_run = false, json = false, allow_empty = false, keep_detected = false,
       strip_signature = false;
  SizeStyle sizes = SizeStyle::Human;  // --dry-run's text
  std::string sysfs = "/sys", xnack;
  std::uint64_t max_inflate_ratio = prune::PackageOptions{}.max_ratio;
  Progress::Mode progress = Progress::Mode::Auto;
};

// Sizes as people read them (support/human_size.h), exact with --bytes.
std::string text_report(const prune::Report& r, SizeStyle sizes) {
  std::string out;
  for (const prune::EntryReport& e : r.entries)
    out += fmt::format("{} {} ({}){}{}\n", e.kept ? "keep" : "drop", printable(e.id), size_text(e.size, sizes),
                       e.where.empty() ? "" : " in ", printable(e.where));
  for (const std::string& n : r.notes) out += fmt::format("note: {}\n", printable(n));
  out += fmt::format("{}: {} of {} entries dropped, {} -> {} ({} saved)\n", printable(r.container), r.dropped(),
                     r.entries.size(), size_text(r.size_before, sizes), size_text(r.size_after, sizes),
                     size_text(r.size_before > r.size_after ? r.size_before - r.size_after : 0, sizes));
  return out;
}

// One entry of a report: {"id", "size", "kept"[, "where"]} (offloadtool-prune/2 and -tree/1 alike).
std::string entry_json(const prune::EntryReport& e) {
  return fmt::format("{{\"id\": {}, \"size\": {}, \"kept\": {}{}}}", json::str(e.id), e.size, e.kept,
                     e.where.empty() ? "" : fmt::format(", \"where\": {}", json::str(e.where)));
}

std::string notes_json(const std::vector<std::string>& notes) {
  std::string out;
  for (const std::string& n : notes) out += fmt::format("{}{}", out.empty() ? "" : ", ", json::str(n));
  return out;
}

std::string saved_json(std::uint64_t before, std::uint64_t after) {
  return std::to_string(static_cast<std::int64_t>(before) - static_cast<std::int64_t>(after));
}

std::string json_report(const PruneOptions& o, const prune::Report& r) {
  std::string entries;
  for (const prune::EntryReport& e : r.entries)
    entries += fmt::format("{}\n    {}", entries.empty() ? "" : ",", entry_json(e));
  return fmt::format(
      "{{\n  \"schema\": {},\n  \"file\": {},\n  \"container\": {},\n"
      "  \"written\": {},\n  \"entries\": [{}\n  ],\n  \"size_before\": {},\n  \"size_after\": {},\n  \"saved\": {},\n  \"notes\": [{}]\n}}\n",
      json::str(json::schema_name(json::Schema::Prune)), json::str(o.input), json::str(r.container), !o.dry_run, entries, r.size_before, r.size_after,
      saved_json(r.size_before, r.size_after), notes_json(r.notes));
}

// A directory's or package's report (prune::TreeReport): the files with
// device code, what each lost, the bytes dropped per target.
std::string_view action_name(const prune::FileReport& f) {
  switch (f.action) {
    case prune::FileAction::Remove: return "remove";
    case prune::FileAction::Write: return f.report.dropped() ? "prune" : "copy";
    case prune::FileAction::Copy: return "copy";
  }
  return "copy";
}

std::string tree_text_report(const prune::TreeReport& t, SizeStyle sizes) {
  std::string out;
  for (const prune::FileReport& f : t.files) {
    const prune::Report& r = f.report;
    if (f.per_gpu)
      out += fmt::format("{} {}: per-GPU file ({}) of {}, {} -> {}\n", action_name(f), printable(f.path),
                         f.per_gpu->layout->name, f.per_gpu->target, size_text(r.size_before, sizes),
                         size_text(r.size_after, sizes));
    else
      out += fmt::format("{} {}: {} of {} entries dropped, {} -> {}\n", action_name(f), printable(f.path), r.dropped(),
                         r.entries.size(), size_text(r.size_before, sizes), size_text(r.size_after, sizes));
    for (const std::string& n : r.notes) out += fmt::format("  note: {}\n", printable(n));
  }
  for (const prune::TreeReport::Dropped& d : t.dropped_by_target()) {
    out += fmt::format("dropped {}: {} entries, {}", printable(d.target), d.entries, size_text(d.bytes, sizes));
    if (d.per_gpu_files)
      out += fmt::format("; {} per-GPU file{}, {}", d.per_gpu_files, d.per_gpu_files == 1 ? "" : "s",
                         size_text(d.per_gpu_bytes, sizes));
    out += "\n";
  }
  for (const std::string& n : t.notes) out += fmt::format("note: {}\n", printable(n));
  out += fmt::format("{}: {} files with device code, {} -> {} ({} saved)\n", printable(t.container), t.files.size(),
                     size_text(t.size_before, sizes), size_text(t.size_after, sizes),
                     size_text(t.size_before > t.size_after ? t.size_before - t.size_after : 0, sizes));
  return out;
}

std::string tree_json_report(const std::string& input, bool written, const prune::TreeReport& t) {
  std::string files;
  for (const prune::FileReport& f : t.files) {
    const prune::Report& r = f.report;
    std::string entries;
    for (const prune::EntryReport& e : r.entries) entries += fmt::format("{}{}", entries.empty() ? "" : ", ", entry_json(e));
    files += fmt::format(
        "{}\n    {{\"path\": {}, \"action\": {}, \"container\": {}, \"entries\": [{}], \"size_before\": {}, "
        "\"size_after\": {}, \"saved\": {}, \"notes\": [{}]{}}}",
        files.empty() ? "" : ",", json::str(f.path), json::str(action_name(f)), json::str(r.container), entries,
        r.size_before, r.size_after, saved_json(r.size_before, r.size_after), notes_json(r.notes),
        f.per_gpu ? fmt::format(", \"per_gpu\": {{\"layout\": {}, \"target\": {}}}", json::str(f.per_gpu->layout->name),
                                json::str(f.per_gpu->target))
                  : "");
  }
  std::string dropped;
  for (const prune::TreeReport::Dropped& d : t.dropped_by_target())
    dropped += fmt::format(
        "{}\n    {{\"target\": {}, \"entries\": {}, \"bytes\": {}, \"per_gpu_files\": {}, \"per_gpu_bytes\": {}}}",
        dropped.empty() ? "" : ",", json::str(d.target), d.entries, d.bytes, d.per_gpu_files, d.per_gpu_bytes);
  return fmt::format(
      "{{\n  \"schema\": {},\n  \"input\": {},\n  \"container\": {},\n  \"written\": {},\n  \"files\": [{}\n  ],\n"
      "  \"dropped\": [{}\n  ],\n  \"size_before\": {},\n  \"size_after\": {},\n  \"saved\": {},\n  \"notes\": [{}]\n}}\n",
      json::str(json::schema_name(json::Schema::PruneTree)), json::str(input), json::str(t.container), written, files,
      dropped, t.size_before, t.size_after, saved_json(t.size_before, t.size_after), notes_json(t.notes));
}

int prune_directory(const PruneOptions& o, const prune::Selection& selection) {
  if (o.output == "-") fail("", "a directory cannot be written to standard output: give -o DIR");
  prune::TreeMode mode = o.dry_run ? prune::TreeMode::DryRun : o.in_place ? prune::TreeMode::InPlace : prune::TreeMode::Copy;
  prune::TreeReport t = prune::prune_tree(o.input, selection, mode, o.output);
  if (o.json)
    print(tree_json_report(o.input, !o.dry_run, t));
  else if (o.dry_run)
    print(tree_text_report(t, o.sizes));
  return 0;
}

// --keep-detected: the targets of this machine's GPUs (compat detect): AMD
// target IDs from amdkfd's topology and NVIDIA sm_XY from the CUDA driver.
std::vector<std::string> detected_targets(const PruneOptions& o, const std::string& prog) {
  compat::DetectResult d = compat::detect(o.sysfs, compat::chosen_xnack(o.xnack));
  compat::CudaResult nv = compat::detect_cuda(compat::cuda_library());
  std::vector<std::string> out;
  for (const compat::DetectedGpu& g : d.gpus) {
    if (!g.target_id.empty())
      out.push_back(g.target_id);
    else if (!g.processor.empty())
      out.push_back(g.processor);
    else
      fail(g.properties, "--keep-detected: GPU node {} names no processor this build knows (gfx_target_version {}): "
           "give its target to --keep", g.node, g.gfx_target_version);
  }
  for (const compat::CudaGpu& g : nv.gpus) {
    if (g.target.empty())
      fail("", "--keep-detected: CUDA device {}{}: {}: give its target to --keep", g.ordinal,
           g.name.empty() ? "" : fmt::format(" ({})", g.name), g.note);
    out.push_back(g.target);
  }
  // An NVIDIA driver that loaded and then failed is an error even beside AMD
  // GPUs: what it would have found would otherwise be pruned away without a word.
  const bool nv_failed = !nv.error.empty() && !nv.no_driver && !nv.no_device;
  if (nv_failed && nv.loaded) fail("", "--keep-detected: {}", nv.error);
  if (out.empty())
    fail("", "--keep-detected: no GPU found: {}; {}", compat::amd_no_gpu_reason(d), compat::cuda_no_gpu_reason(nv));
  // The static build's probe could not start (compat/detect_cuda.cpp): no
  // NVIDIA GPU is known, which the user must hear of.
  if (nv_failed) cli::print_warning(prog, fmt::format("--keep-detected: {}", nv.error));
  return out;
}

// A package (.deb, tarball, wheel): prune/package.h.
int prune_package(const PruneOptions& o, const prune::Selection& selection, const InputFile& in) {
  prune::PackageOptions po;
  po.strip_signatures = o.strip_signature;
  po.max_ratio = o.max_inflate_ratio;
  // Up to 4 threads: each of liblzma's holds ~120 MB (at -6), and a package's prune keeps memory bounded.
  po.xz_threads = std::max(2u, std::min(4u, std::thread::hardware_concurrency()));
  prune::TreeReport report;
  if (o.dry_run) {
    report = prune::prune_package(in, selection, o.input, [](Bytes) {}, po);
  } else {
    OutputFile out(o.in_place ? o.input : o.output);
    if (o.input != "-") out.copy_mode_from(o.input);
    report = prune::prune_package(in, selection, o.input, [&](Bytes b) { out.write(b); }, po);
    out.commit();
  }
  if (o.json)
    print(tree_json_report(o.input, !o.dry_run, report));
  else if (o.dry_run)
    print(tree_text_report(report, o.sizes));
  return 0;
}

int prune_file(PruneOptions o, const cli::Invocation& inv) {
  if (o.keep_detected)
    for (std::string& t : detected_targets(o, inv.prog)) o.keep.push_back(std::move(t));
  if (o.keep.empty() && o.drop.empty()) fail("", "give the targets to --keep or to --drop");
  if (!o.dry_run && o.output.empty() && !o.in_place) fail("", "no output: give -o FILE, --in-place or --dry-run");
  if (o.dry_run && (!o.output.empty() || o.in_place)) fail("", "--dry-run writes nothing: drop -o and --in-place");
  prune::Selection selection =
      o.keep.empty() ? prune::make_selection(prune::Selection::Mode::Drop, o.drop, o.allow_empty)
                     : prune::make_selection(prune::Selection::Mode::Keep, o.keep, o.allow_empty);
  selection.strip_signature = o.strip_signature;
  if (contents::is_directory(o.input)) return prune_directory(o, selection);
  std::shared_ptr<InputFile> in = InputFile::open(o.input);
  if (prune::package_kind(in->bytes()) != prune::PackageKind::None) return prune_package(o, selection, *in);
  prune::Report report;
  if (o.dry_run) {
    report = prune::prune_file(*in, selection, o.input, [](Bytes) {});
  } else {
    // Nothing reaches the output before the whole container was checked, and
    // the output replaces its destination only when complete.
    OutputFile out(o.in_place ? o.input : o.output);
    // The output keeps the input's permission bits: a pruned executable or
    // library stays executable.
    if (o.input != "-") out.copy_mode_from(o.input);
    Progress progress(o.progress, fmt::format("{} {}", inv.prog, printable(o.input)));
    prune::PieceWriter writer(out, *in);
    report = prune::prune_file(*in, selection, o.input, [&](Bytes b) {
      progress.update(out.written() + b.size(), 0);
      writer(b);
    });
    out.commit();
  }
  if (o.json)
    print(json_report(o, report));
  else if (o.dry_run)
    print(text_report(report, o.sizes));
  return 0;
}

// The per-GPU file layouts (contents/per_gpu.h's table), in words for --help.
std::string per_gpu_layouts_text() {
  std::string out;
  for (const contents::PerGpuLayout& l : contents::per_gpu_layouts())
    out += fmt::format("{}{}: {}, {}", out.empty() ? "" : "; ", l.name, l.files, l.where);
  return out;
}

}  // namespace

cli::AppletBody define_prune(CLI::App& app) {
  auto o = std::make_shared<PruneOptions>();
  app.description(fmt::format(
      "Rewrite a file with only the device entries of the GPUs kept: a binary or text offload bundle, a compressed "
      "bundle (CCOB, compressed again with its method and version), concatenated offload binaries, NVIDIA fat "
      "binaries, an ELF or COFF relocatable object (the bundles of .hip_fatbin, the __CLANG_OFFLOAD_BUNDLE__ "
      "sections, .llvm.offloading, the fatbins of .nv_fatbin and __nv_relfatbin; the object laid out again with its "
      "symbols and relocations moved), an ar archive (every such member, the symbol table following), or a linked "
      "shared library or executable (HIP's .hip_fatbin, OpenMP's .llvm.offloading, CUDA's .nv_fatbin and "
      "__nv_relfatbin, which nvprune refuses), or a Windows PE image, DLL or EXE (.hip_fat, .nv_fatb, __nv_rel: each "
      "section packed and its raw data shrunk, no RVA moved, the registration records' pointers moved, CheckSum "
      "computed again; an Authenticode-signed image is refused unless --strip-signature), or an AMD kpack archive (the "
      "kept architectures' code objects under a new table of contents, zstd frames copied; docs/kpack.md). NVIDIA fatbins follow the CUDA driver, per fatbin: --keep sm_86 keeps "
      "what an sm_86 GPU loads (the sm_80 cubin where there is no sm_86 one, else the newest PTX), --keep "
      "compute_86 the PTX it would JIT, --drop names exact targets; a fatbin keeping nothing stays as an empty "
      "fatbin. Entries are laid out as the bundler or packager writes them. In a linked file the bundles "
      "or offload binaries are packed, the pointers that register them move with them (an OpenMP program registers "
      "one image less for each binary dropped), and the file shrinks by whole pages; no address of code or data "
      "changes, and what cannot be moved safely is refused. A target is a target ID (gfx90a, gfx90a:xnack+, "
      "gfx9-generic, sm_80, compute_80) or a bundle entry ID (hipv4-amdgcn-amd-amdhsa--gfx90a), as every applet "
      "takes targets (docs/targets.md), matched with compat's rules: a feature the target leaves "
      "out matches any setting, and a full target ID (gfx90a:sramecc+:xnack-) keeps what that GPU can load. Host "
      "entries always stay. A package is rewritten member by member in one decompression and one compression pass "
      "(prune/package.h): a .deb (data.tar.* with its format and compression, md5sums and Installed-Size in "
      "control.tar.* updated), a tarball (.tar, .tar.gz/.xz/.zst/.bz2) or a Python wheel (*.dist-info/RECORD "
      "rewritten and checked); members keep their order, owners, modes and times, bare code objects of dropped "
      "targets are left out, and rpm packages, signed packages (without --strip-signature) and member names that "
      "leave the folder are refused. A directory (an install) is pruned file by file (-o OUTDIR: a new tree, renamed "
      "into place when complete; --in-place: each file atomically): unchanged files cloned by the kernel, symlinks "
      "and hard links kept, modes and times kept. In directories and packages a standalone device-code file (a bare "
      "code object, cubin, PTX file, bundle, compressed bundle, fatbin, offload-binary file or kpack archive) of which "
      "no device entry stays is left out, kpack'd host binaries (their code in kpack archives) are copied, and per-GPU files follow their GPU: {}. A per-GPU file of a kept target is copied, "
      "of a dropped one left out; with --keep, one of a GPU no device code of the input is for stays as it is (the "
      "report says why).",
      per_gpu_layouts_text()));
  app.add_option("input", o->input, "the file, package or directory to prune")->required();
  auto* keep = app.add_option("--keep", o->keep, "keep only the entries these targets select (comma-separated or repeated)")
                   ->delimiter(',')
                   ->allow_extra_args(false);
  auto* drop = app.add_option("--drop", o->drop, "drop the entries these targets select (comma-separated or repeated)")
                   ->delimiter(',')
                   ->allow_extra_args(false);
  keep->excludes(drop);
  auto* detected = app.add_flag("--keep-detected", o->keep_detected,
                                "also keep what this machine's GPUs load, as compat detect finds them: AMD target IDs "
                                "from amdkfd's sysfs topology, NVIDIA sm_XY from the CUDA driver (libcuda.so.1, or "
                                "OFFLOADTOOL_LIBCUDA)");
  detected->excludes(drop);
  app.add_option("--sysfs", o->sysfs, "the sysfs root --keep-detected reads (default /sys)")->needs(detected);
  app.add_option("--xnack", o->xnack, "--keep-detected: the xnack setting the GPUs run with (on or off; default "
                 "HSA_XNACK, else either)")->needs(detected);
  auto* output = app.add_option("-o,--output", o->output, "the pruned file ('-' for standard output)");
  app.add_flag("--in-place", o->in_place, "replace the input (atomically, through a temporary file beside it)")
      ->excludes(output);
  app.add_flag("--dry-run", o->dry_run, "write nothing; print what would go and the bytes saved");
  app.add_flag("--json", o->json,
               fmt::format("print the report as one JSON object (schema {} for a file, {} for a directory or "
                           "package; offloadtool-json(7))",
                           json::schema_name(json::Schema::Prune), json::schema_name(json::Schema::PruneTree)));
  add_bytes_flag(app, o->sizes, "with --dry-run: ");
  app.add_flag("--allow-empty", o->allow_empty, "allow a result without any device entry (only host entries)");
  app.add_flag("--strip-signature,--strip-signatures", o->strip_signature,
               "remove the signatures pruning invalidates (refused otherwise): a PE image's Authenticode signature, "
               "a wheel's RECORD.jws or RECORD.p7s, a .deb's _gpg members (the report says so)");
  app.add_option("--max-inflate-ratio", o->max_inflate_ratio,
                 "a package's member that inflates past 1 GiB at more than this many times its compressed bytes is "
                 "refused as a decompression bomb, as soon as it does (default 1000; 0: no bound)")
      ->type_name("RATIO");
  add_progress_option(app, o->progress);
  return [o](const cli::Invocation& inv) { return prune_file(*o, inv); };
}

}  // namespace ot::tools
