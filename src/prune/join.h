// join: the way back from AMD's kpack split (docs/kpack.md "join"). A kpack'd
// host binary -- HIPK records pointing at a .rocm_kpack_ref marker, its
// .hip_fatbin NOBITS, its code objects in per-architecture .kpack archives --
// becomes a self-contained fat binary again: each record clang's HIPF one,
// pointing at its bundle in a real .hip_fatbin built from the archives' code
// objects (prune/linked_elf.cpp and, for PE images, prune/pe_image.cpp do the
// edit: the one editor of linked files),
// so that a HIP runtime without kpack support loads it.
//
//   archives    found as AMD's loader finds them (contents/kpack_search, through
//               the walker): the marker's search paths from the binary's folder,
//               ROCM_KPACK_PATH / _PREFIX; for each architecture the first
//               archive holding the record's key ("<kernel_name>#<index>")
//   bundles     one per record, in the records' order: the host entry first
//               (clang's "host-<triple>-", empty: the release's, target/llvm_release.h), then the code objects by
//               bundle entry ID (the ID the splitter recorded as the entry's
//               "target" metadata, else hipv4-amdgcn-amd-amdhsa--<arch>), sorted
//               as clang's driver sorts its --offload-arch list; payloads and
//               bundles at 4 KiB boundaries, as clang 19 lays out .hip_fatbin
//   --keep      only the code objects the targets select (prune's rule)
//
// Code objects stream from the archives (a zstd frame decoded in pieces):
// memory stays flat. Everything is checked before the first byte goes out. A
// record no archive has a code object for is an error naming the key and the
// paths looked at.
#pragma once

#include <optional>
#include <string>

#include "prune/prune.h"
#include "prune/tree.h"
#include "target/llvm_release.h"

namespace ot::prune {

// Joins the kpack'd binary `in` (`file` names it, and its folder is where the
// marker's relative paths start); `keep`: the targets to keep, all when null.
// `release`: the LLVM release whose clang's layout the bundles follow.
Report join_file(const InputFile& in, const Selection* keep, target::LlvmRelease release, const std::string& file,
                 const codec::Sink& sink);

// One file of a directory: a kpack'd binary joined (Write), a kpack archive
// left out (Remove: its code objects are in the joined binaries now), any
// other copied.
FileOutcome join_tree_file(const InputFile& in, const Selection* keep, target::LlvmRelease release,
                           const std::string& file, const codec::Sink& sink);

// A directory joined into a new one at `out_dir` (prune_tree's machinery): the
// folders the archives leave empty (.kpack) are left out too.
TreeReport join_tree(const std::string& root, const Selection* keep, target::LlvmRelease release,
                     const std::string& out_dir);

}  // namespace ot::prune
