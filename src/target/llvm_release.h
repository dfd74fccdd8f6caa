// The LLVM releases offloadtool impersonates, as one table of differences.
// Everything that depends on the release reads it from here: a new release
// (20, 21, 24) is a row of this table, not a fork of the code that uses it.
// What each field means is observed behaviour of Debian's builds (LLVM 19.1.7,
// 22.1.8 and sid's 23.1.4; the project's reference notes, section numbers below,
// docs/llvm23.md for 23).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace ot::target {

enum class LlvmRelease : std::uint8_t { Llvm19, Llvm22, Llvm23 };

// How clang-offload-bundler parses and standardises a bundle entry ID.
enum class BundleIdRules : std::uint8_t {
  LastDashArch,    // <= 21: the last '-' piece is tried as an arch name, the rest is the triple as given
  FivePieces,      // 22: split on '-' at most 5 times; piece 5 is the environment, the triple is normalised,
                   //     an unknown arch name is dropped; fewer than 5 pieces is an error
  FivePiecesAmdgpu,  // 23: as 22, and a triple arch starting with "amdgpu" (amdgpu, amdgpu9.06, ...) is
                     //     valid and kept as written; 23's offload arch names (gfx1170, sm_100f, ...)
};

// Where a host object keeps its offload entries, and their layout (what the
// wrapper's descriptor points at and its globals_reg walks).
enum class EntryAbi : std::uint8_t {
  PerKind32,       // 32-byte {addr, name, size, flags, data} in omp_ / cuda_ / hip_offloading_entries
  Unified56,       // 56-byte {reserved, version 1, kind, flags, addr, name, size, data, aux_addr} in one
                   // section llvm_offload_entries, filtered by kind. The 56-byte layout came with
                   // llvm-project #124018 (January 2025, before the 20 branch), the one section with
                   // #125731 (February 2025, after it): releases 20 and 21 differ here (neither is supported).
};

struct ReleaseTraits {
  LlvmRelease release;
  int major;                         // 19, 22, 23
  std::string_view full_version;     // "19.1.7": what Debian ships and the reference notes were taken from
  std::string_view debian_revision;  // "3~deb12u1": LLVM's --version texts carry it
  BundleIdRules bundle_ids;
  std::uint16_t ccob_version;        // -compress without COMPRESSED_BUNDLE_FORMAT_VERSION (22: 3, 19: 2)
  // Reading a bundle: an input shorter than this is never taken for a CCOB
  // (nor reported as "Uncompressed bundle." with -verbose): 19 20 bytes, 22 8.
  std::uint8_t ccob_sniff_size;
  // A CCOB of a version other than 1-3 is "header size too small" (22); 19
  // reads versions below 2 as 1 and the others as 2.
  bool ccob_known_versions_only;
  // 23's CCOB reader (llvm::object::CompressedOffloadBundle): its messages
  // start lower-case ("unknown compressing method"), -verbose says
  // "Uncompressed bundle" (no period), a version other than 1-3 is handed to
  // zstd, and a timer report closes -verbose runs that (de)compressed.
  bool ccob_object_reader;
  // -list and -unbundle read several bundles concatenated in one input (23).
  bool several_bundles;
  std::uint16_t hip_offload_kind;    // OffloadBinary OffloadKind of kind=hip (19: 3, 22: 4)
  std::uint16_t sycl_offload_kind;   // of kind=sycl (19: 0 = unknown, 22: 8)
  EntryAbi entries;
  // llvm-offload-binary / clang-offload-packager (reference 2.2)
  bool packager_requires_triple;     // 'file' and 'triple' required (19) or only 'file' (22)
  bool packager_help_without_arguments;  // help (exit 0) when neither -o nor an input is given; 19: nothing
  bool packager_old_name_deprecated; // a warning when argv[0]'s stem ends with clang-offload-packager
  // The OffloadBinary version llvm-offload-binary writes: 1 (one binary per
  // image, <= 22) or 2 (one binary holding every image, 23). It is also the
  // highest version LLVM's own reader accepts (OffloadBinary::Version), with
  // that reader's checks (formats::llvm_verdict); offloadtool reads version 2
  // under every release.
  std::uint16_t offload_binary_version;
  // Extracting (23, PR #184774): without --image every image is extracted;
  // each file written under a generated name is reported on stdout
  // ("Extracted: <name>"); an image that is itself an OffloadBinary gives its
  // images instead (recursively, numbered with the same counter); an empty
  // arch adds no "-<arch>" to the name. 19 and 22: none of that.
  bool packager_extracts_all;
  // Image kind 6 is SPIR-V, extension "spv" (23); 19 and 22 know 0-5 only.
  bool spirv_image_kind;
  // The host entry's ID in the bundles clang's HIP driver writes to .hip_fatbin
  // is "host-<arch>-" + this + "-" (observed on Debian's builds, for an ELF
  // target): 19 "unknown-linux-" (host-x86_64-unknown-linux--), 22
  // "unknown-linux-gnu", 23 "pc-linux-gnu". join lays bundles out as clang
  // does (prune/join.h).
  std::string_view hip_host_rest;
  // The same for an AArch64 ELF file: 23 writes the target's normalised
  // triple, aarch64-unknown-linux-gnu (clang 23 --target=aarch64-linux-gnu,
  // the default of Debian's arm64 clang), not x86_64's pc vendor; 19 and 22
  // as for x86_64.
  std::string_view hip_host_rest_aarch64;
  // The same for --target=<arch>-pc-windows-msvc (a PE image): 19 and 22
  // write their ELF IDs there too; 23 the target's, "pc-windows-msvc"
  // (host-x86_64-pc-windows-msvc-; observed with Debian sid's clang 23.1.4).
  std::string_view hip_host_rest_pe;
  // Whether the <arch> of that ID is the target's (23: host-aarch64-pc-
  // windows-msvc- for aarch64-pc-windows-msvc), or, as in 19 and 22, the
  // compiling machine's default triple's (host-x86_64-unknown-linux-- from
  // Debian's amd64 clang 19 for aarch64-pc-windows-msvc and
  // aarch64-unknown-linux-gnu alike).
  bool hip_host_from_target;
  // The order of the code objects after the host entry in those bundles: by
  // bundle entry ID, ascending in 19 and 22, descending in 23 (gfx942,
  // gfx90a:xnack-, gfx906, gfx803, gfx1100; observed with Debian sid's clang
  // 23.1.4, ELF and PE targets alike).
  bool hip_ids_descending;
};

const ReleaseTraits& traits(LlvmRelease release);
std::span<const ReleaseTraits> supported_releases();  // oldest first
// The release with that major number, if supported.
std::optional<LlvmRelease> release_for_major(int major);
// "19, 22": for messages naming what is supported.
std::string_view supported_majors_text();

}  // namespace ot::target
