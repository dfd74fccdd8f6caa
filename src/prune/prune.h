// Pruning: a container rewritten with only the device entries a selection
// keeps, as the tool that made it would have written those entries. Knows
// nothing of command lines; the containers of objects, archives and linked
// libraries reuse prune_container for the bundles they hold.
//
//   selection   --keep / --drop targets, matched with compat's rules
//   containers  binary bundle   re-laid out (formats/bundle_binary), same alignment
//               text bundle     the dropped entries' marker-to-marker ranges cut out
//               CCOB (v1-v3)    decompressed, pruned, compressed again (compress/ccob)
//               OffloadBinary   concatenated binaries; the dropped ones left out
//               NVIDIA fatbins  each fatbin's kept entries as stored, under a new header
//               kpack archive   the kept architectures' code objects (zstd frames copied, never
//                               recompressed) under a new TOC (formats::write_kpack)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compat/target_spec.h"
#include "codec/codec.h"
#include "contents/per_gpu.h"
#include "contents/walker.h"
#include "support/bytes.h"
#include "support/error.h"

namespace ot {
class InputFile;
}
namespace ot::formats {
struct Fatbin;
}

namespace ot::prune {

struct Selection {
  enum class Mode { Keep, Drop } mode = Mode::Keep;
  std::vector<compat::TargetSpec> targets;
  // A container left without any device entry is an error unless this is set.
  bool allow_empty = false;
  // A PE image signed with Authenticode is refused (pruning breaks the
  // signature) unless this is set: the signature is then left out.
  bool strip_signature = false;
};

// Parses each text with compat::parse_spec (a bare target ID or a bundle entry
// ID); errors name the target.
Selection make_selection(Selection::Mode mode, const std::vector<std::string>& targets, bool allow_empty = false);

// Does `target` (as given to --keep/--drop) select the entry `entry`? Under the
// runtimes' rules the entry must be loadable on the target, where a feature the
// target leaves unspecified matches any setting: gfx90a selects gfx90a,
// gfx90a:xnack+ and gfx90a:xnack-; gfx90a:sramecc+:xnack- selects what that GPU
// loads (gfx90a, gfx90a:xnack-, gfx9-generic ...). A bundle entry ID also
// requires the kind and triple to match.
bool selects(const compat::TargetSpec& target, const compat::TargetSpec& entry);

// Whether the entry with bundle ID (or OffloadBinary "<kind>-<triple>-<arch>")
// `id` stays: host entries always do. An ID that does not parse is an error
// (`where` names it), since nothing can say whether it was meant.
bool stays(const Selection& selection, std::string_view id, const Where& where);

// Which entries of the NVIDIA fatbin `f` stay, under the CUDA driver's rules
// and per fatbin (each is a module the program loads on its own):
//   --keep sm_86       what an sm_86 GPU loads: the cubin of the same major
//                      version and the highest minor not above (sm_80), else
//                      the newest PTX not above it (compat's order)
//   --keep compute_86  the PTX an sm_86 GPU would JIT-compile (the newest not above)
//   --drop sm_35       the entries for exactly that target (sm_35 cubins; compute_35 PTX by that name)
// An entry of a kind we do not know goes with the targets of its arch number.
// Non-NVPTX targets select nothing here. A fatbin may keep no entry: the
// caller decides whether the file keeps any device code.
std::vector<bool> fatbin_keeps(const Selection& selection, const formats::Fatbin& f);

struct EntryReport {
  std::string id;
  std::uint64_t size = 0;  // payload bytes (uncompressed)
  bool kept = true;
  // Where in the file the entry's container lies ("section .hip_fatbin, bundle
  // 2 at 0x3000", "member k.o, section .hip_fatbin"); empty for the file itself.
  std::string where = {};
};

struct Report {
  std::string container;  // "binary bundle", "text bundle", "compressed bundle (zstd, version 2)", "offload binaries"
  std::vector<EntryReport> entries;  // input order
  std::uint64_t size_before = 0;     // bytes of the container, as given
  std::uint64_t size_after = 0;      // bytes of the pruned container
  std::vector<std::string> notes = {};  // what the user should know ("the file was not shrunk: ...")
  // A linked file none of whose device entries is for the kept targets, in a
  // directory or package: copied as it is (prune_tree_file), and no find for
  // check_found.
  bool none_for_targets = false;
  std::uint64_t dropped() const;     // entries left out
};

// Prunes the container filling `data` (a binary bundle, a text bundle, a CCOB
// holding either, or one or more concatenated OffloadBinaries) and hands the
// pruned container to `sink` in order, in pieces that may point into `data`.
// Everything is checked before the first byte reaches the sink. Errors name
// `file` and the offset.
Report prune_container(Bytes data, const Selection& selection, const std::string& file, const codec::Sink& sink);

// prune_container for NVIDIA fatbins whose headers are read from `src`: with
// pread where they lie in a file, so that a library's few thousand headers
// map none of its pages in (the pieces are views of src.data()).
Report prune_fatbin_container(const ByteSource& src, const Selection& selection, const std::string& file,
                              const codec::Sink& sink);

// Prunes the file `in` (`file` names it): any container prune_container
// knows, or one that holds them --
//   ELF shared library or executable   prune/linked_elf.cpp: .hip_fatbin packed, the file shrunk
//   ELF or COFF relocatable object     prune/object.cpp
//   ar archive                         prune/archive.cpp
// -- and hands the pruned file to `sink` in order. Pieces of `sink` that point
// into in.bytes() are ranges of the input (the caller may copy them in the
// kernel). Everything is checked before the first byte reaches the sink.
Report prune_file(const InputFile& in, const Selection& selection, const std::string& file, const codec::Sink& sink);

// What prune_tree_file did with one file of a directory tree or package.
enum class FileAction {
  Copy,    // no device code, or none of it dropped: the file stays as it is (the sink got nothing)
  Write,   // the sink got the pruned file; where report.dropped() is 0 the caller keeps the original
  Remove,  // a standalone device code file of which no device entry stays (a bare code object, cubin or
           // PTX of a dropped target; a bundle, compressed bundle, fatbin or offload binary of dropped
           // targets only), or a per-GPU file of a dropped target (per_gpu_rule.h): left out
};

struct FileOutcome {
  FileAction action = FileAction::Copy;
  // Its entries and sizes (a removed file: its entries, size_after 0); no
  // entries for a file without device code.
  Report report;
  // A per-GPU file (per_gpu_rule.h): its layout and target.
  std::optional<contents::PerGpuName> per_gpu = {};
};

// One file of a directory tree or package (`file` names it in errors and is
// its path there): a bare device code file stays or goes whole (a cubin or PTX
// file by the CUDA driver's rules, as a one-entry fatbin); a file without
// device code, or one that is itself a package (a tarball or wheel inside a
// tree is not descended into: noted), is copied; any other goes to prune_file.
// A standalone device code file (a bundle, compressed bundle, NVIDIA fatbin
// or offload binaries; not a host object, library or archive holding them)
// whose device entries all go is left out (Remove, its entries in the
// report); a host file whose device entries all go is an error unless the
// selection allows empty results, as for a file given alone. A file without
// device code that `rule` (when given) finds a per-GPU file at `path` (as the
// input stores it) gets the rule's outcome.
class PerGpuRule;
// Whether prune reads a file whose first bytes are `prefix` for device code:
// contents::may_hold_device_code.
bool prune_reads(Bytes prefix);
// The walk's limits for prune's walks: kpack archives are read as the
// standalone device code files they are (an archive of dropped architectures
// only is left out, one of several rewritten: prune_container), but a kpack'd
// binary's records are not followed: the binary holds no device code (its
// .hip_fatbin is NOBITS) and is copied as it is; its archives are files of
// the same tree or package, pruned on their own.
contents::Limits prune_walk_limits();
FileOutcome prune_tree_file(const InputFile& in, const Selection& selection, const std::string& file,
                            const codec::Sink& sink, const PerGpuRule* rule = nullptr, std::string_view path = {});

// The report of a directory or package prune: a row per file with device code.
struct FileReport {
  std::string path;  // in the tree or package, as stored
  FileAction action = FileAction::Copy;
  Report report;
  std::optional<contents::PerGpuName> per_gpu = {};  // a per-GPU file: its layout and target
};
struct TreeReport {
  std::string container;                // "directory", "Debian package (data.tar.xz)", "Python wheel", "tarball (xz)"
  std::vector<FileReport> files;        // the files with device code, in tree or member order
  std::uint64_t size_before = 0;        // all bytes of the input (a directory: its regular files' bytes)
  std::uint64_t size_after = 0;         // of the output
  std::vector<std::string> notes = {};  // what the user should know, in words
  // The entries dropped and the payload bytes they held, per target ID
  // ("gfx906:xnack-", "sm_80": a bundle's and a bare code object's alike; the
  // ID as stored where it does not parse), sorted by target.
  // Per-GPU files left out count apart: their files and bytes.
  struct Dropped {
    std::string target;
    std::uint64_t entries = 0, bytes = 0;
    std::uint64_t per_gpu_files = 0, per_gpu_bytes = 0;
  };
  std::vector<Dropped> dropped_by_target() const;
};

// The error of a container that has device entries of which none would stay
// (check_not_empty): its report, so that the files of a directory or package
// can be left out instead (prune_tree_file).
class NothingStays : public Error {
 public:
  NothingStays(Where where, std::string message, Report report)
      : Error(std::move(where), std::move(message)), report_(std::move(report)) {}
  const Report& report() const { return report_; }

 private:
  Report report_;
};

// Throws NothingStays (naming `file`) when `r` has device entries and none
// stays, unless the selection allows that.
void check_not_empty(const Selection& selection, const Report& r, const std::string& file);
// Fails (naming `file`, a directory or package) when none of its files holds
// device code, unless the selection allows empty results: called before
// anything is renamed into place or changed.
void check_found(const Selection& selection, const TreeReport& r, const std::string& file);

}  // namespace ot::prune
