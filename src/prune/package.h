// Pruning packages: a Debian package, a tarball or a Python wheel rewritten
// member by member with each file pruned by prune_tree_file, in one streaming
// pass (archive/stream_reader in, archive/stream_writer out):
//
//   .deb            the outer ar layer kept (each member's header, the size
//                   patched, as prune/archive.cpp writes it); data.tar.* rewritten;
//                   in control.tar.*: md5sums updated for changed files and the
//                   lines of removed ones dropped, control's Installed-Size
//                   recomputed by dpkg-gencontrol's rule (below)
//   tarball         .tar, .tar.gz/.xz/.zst/.bz2 (conda's .tar.bz2 too): the
//                   same tar format (GNU, pax; ustar as pax) and compression
//   wheel (zip)     *.dist-info/RECORD rewritten: a changed file's
//                   sha256=<urlsafe base64, unpadded> and size, a removed file's
//                   line dropped; every line's hash checked against its member
//
// Member order, names, owners, modes and times stay; nothing new comes from
// the clock. A member whose first bytes show no device code
// (contents::may_hold_device_code) streams straight through; the others are
// spooled to an unlinked scratch file and pruned. Refused, before anything is
// committed: rpm packages (their header signs and digests the payload), a
// signed wheel (RECORD.jws, RECORD.p7s) or .deb (_gpg* members) unless
// `strip_signatures` (--strip-signature), member names that leave the extraction folder
// ("../x", "/x"), a RECORD that does not match its members, a member that
// inflates past 1 GiB at more than `max_ratio`:1 (PackageOptions).
//
// Installed-Size: dpkg-gencontrol counts ceil(size / 1024) for each regular
// file and symlink and 1 for anything else, over the package's tree; the
// tree behind a .deb is gone, so the value is adjusted by that rule for the
// files that changed: minus ceil(old / 1024), plus ceil(new / 1024) (0 for a
// removed file). What the packager counted besides the files stays counted.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "prune/prune.h"

namespace ot::prune {

enum class PackageKind { None, Deb, Tarball, Wheel, Rpm };

// What `data` is as a package; None for anything prune_file handles (an ar
// archive not starting with debian-binary, a compressed single file).
PackageKind package_kind(Bytes data);

struct PackageOptions {
  bool strip_signatures = false;  // leave signatures out (and say so) instead of refusing
  unsigned xz_threads = 2;        // liblzma's threaded encoder (the output does not depend on it)
  // Decompression bombs: a member that, past 1 GiB, has inflated to more than
  // this many times the compressed bytes read for it is refused (as soon as
  // it does; at once where its declared size is past 1 GiB and this many
  // times the whole compressed archive); 0: no bound. Deflate's ceiling is
  // 1032:1, so a gzip'd member of zeros at gzip's default level (1028:1) is
  // refused; bzip2, xz and zstd reach far past it.
  std::uint64_t max_ratio = 1000;
};

// Prunes the package `in` (`file` names it in errors and the report) and hands
// the new package to `sink` in order. Errors name the member
// ("pkg.deb(data.tar.xz)(./usr/lib/libk.so)"); so do the report's paths. A
// package without device code, or left without any of the device code it had,
// is an error unless the selection allows empty results (as for a directory).
TreeReport prune_package(const InputFile& in, const Selection& selection, const std::string& file,
                            const codec::Sink& sink, const PackageOptions& options = {});

// The same machinery for another rewrite of a package than prune's (split,
// prune/split.h), as prune/tree.h's TreeRewrite is for trees: each regular
// member that may hold device code (spooled to a scratch file, `in`) decided
// by `file` instead of prune_tree_file (Copy: copied; Write: what the sink
// got, even where nothing was dropped; Remove: left out); then the members
// `added` returns are written as new regular files, mode 0644, with the owner
// and times of the first member `file` wrote (a directory member, 0755, for
// each folder of theirs the archive lacks; none in a zip):
//
//   .deb     at the end of data.tar.*, with md5sums lines for them (after the
//            others) and Installed-Size grown by dpkg-gencontrol's rule
//            (ceil(size / 1024) per file, 1 per directory)
//   tarball  at the end
//   wheel    just before *.dist-info/RECORD, which lists them (sha256, size)
//            after its other lines; `added` is called there, so a member that
//            `file` writes after RECORD is refused
//
// Their names are relative to the package's root, given as its members are
// ("./" before them where the first written member has it).
struct PackageMember {
  std::string name;
  std::shared_ptr<InputFile> bytes;
};
struct PackageRewrite {
  std::function<FileOutcome(const std::shared_ptr<InputFile>& in, const std::string& member, std::string_view plain,
                            const codec::Sink& sink)>
      file;
  std::function<std::vector<PackageMember>()> added;
};
TreeReport rewrite_package(const InputFile& in, const PackageRewrite& rewrite, const std::string& file,
                           const codec::Sink& sink, const PackageOptions& options = {});

}  // namespace ot::prune
