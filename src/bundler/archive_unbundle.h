// Heterogeneous device archives (HDAs): unbundling `-type=a` as LLVM 19 does
// (reference 2.16, 2.6, 1.6). (The native extraction of any input's device
// code into a folder is bundler/extract_dir.h.)
//
// Archives are read with archive/ar_reader.h (not libarchive: it rejects GNU
// long names containing '/', which clang-offload-packager --archive writes; see
// that header) and written with archive/ar_writer.h, our own deterministic
// writer, because it reproduces LLVM's bytes (symbol table, long-name table).
//
// Members are read as bundle inputs (bundler/bundle_input.h), views into the
// mapped archive whose payloads are copied from there. Only compressed members
// (decompressed one at a time) and host objects (whose bundle sections are
// stripped) are rewritten; their results go to one unlinked scratch file
// beside the outputs, mapped for the final write.
//
// Errors inside a member name "<archive>(<member>)" and an offset inside the
// archive.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "bundler/offload_bundler.h"
#include "target/bundle_id.h"

namespace ot::bundler {

// The name LLVM gives a device-archive member made from `bundle_id` found in
// the archive member `member_name`:
//   stem + "-" + bundle_id + stem + ext, with every ':' replaced by '_',
// where stem/ext are those of filename(member_name), and ext becomes ".bc"
// when the bundle's target ID contains "gfx", ".cubin" when it contains "sm_".
std::string device_member_name(std::string_view member_name, std::string_view bundle_id);
// The same with the extension rule worked out beforehand: `device_ext` is
// device_extension(bundle_id) -- ".bc", ".cubin", or empty (the member's own).
std::string device_member_name(std::string_view member_name, std::string_view bundle_id, std::string_view device_ext);
std::string_view device_extension(std::string_view bundle_id);

// -unbundle -type=a: one device archive per target, in the order of
// config.outputs. Checks config.check_input_archive first. LLVM's messages;
// nothing is written when anything fails.
void unbundle_archive(const Config& config, const std::vector<target::BundleId>& targets);

// -check-input-archive: in every member, the bundle IDs of its raw (not
// decompressed) bundle must not conflict (reference 2.6), else LLVM's
// "conflicting TargetIDs [a, b] found in <member> of <archive>".
void check_input_archive(const Config& config);

// Every bundle entry of every member of the archive config.inputs[0], in
// archive order and, within a member, file order (members read as -type=a
// reads them; compressed members decompressed). LLVM 19's -list prints nothing
// for an archive; this is the native `offloadtool list`.
struct ArchiveEntry {
  std::string member;
  std::string bundle_id;
};
std::vector<ArchiveEntry> archive_entries(const Config& config);

}  // namespace ot::bundler
