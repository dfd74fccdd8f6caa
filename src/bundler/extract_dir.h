// The native `offloadtool unbundle --extract-dir`: the device code of any
// input contents/walker.h reads (bundles, CCOBs, objects, libraries and
// executables, offload binaries, ar archives, packages, nested) as one file
// per selected entry in a folder, named as device-archive members are (made
// safe, short enough and unique: extract_file_name, unique_file_name).
//
// One walk: each selected entry is written to its staged file while the walker
// visits it (its bytes are valid only then), so memory holds one entry at a
// time; entries lying uncompressed in the named file are copied from it by
// offset (copy_file_range), CCOB entries come decompressed.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "bundler/offload_bundler.h"
#include "compat/target_spec.h"
#include "contents/walker.h"

namespace ot::contents {
struct Container;
}

namespace ot::bundler {

// A file name that stays inside its folder: '/', '\\', NUL and other control
// characters become '_'; an empty name becomes "_"; "." and ".." get a leading
// '_'. Every other name is kept as it is.
std::string safe_file_name(std::string_view name);

// The longest name an extracted file may have: a folder takes 255 bytes
// (NAME_MAX on Linux, the BSDs and macOS), and OutputFile writes the file
// first as ".<name>.XXXXXX", 8 bytes more.
inline constexpr std::size_t kMaxFileName = 255 - 8;

// `text` when it has at most `max` bytes, else its start and its end with
// "~<tag>~" between them, `max` bytes at most (never cut inside a UTF-8
// character). `tag` tells apart texts that share their start and end.
std::string shorten_middle(std::string_view text, std::size_t max, std::string_view tag);

// `name` when it fits kMaxFileName, else shorten_middle of it with a tag of
// 8 hex digits of its MD5: recognisable, stable, and two long names that
// differ only in the middle stay apart.
std::string fit_file_name(std::string_view name);

// `name`, or the first of "<stem>.1<ext>", "<stem>.2<ext>"... (stem/ext split as
// llvm_path::stem/extension do; fit_file_name where that makes it too long)
// that is not in `taken`; the result is added to `taken`. So duplicate names
// never overwrite each other, deterministically.
std::string unique_file_name(const std::string& name, std::set<std::string>& taken);

// The file an entry with `bundle_id` of the member (or file) `base` is
// extracted to: safe_file_name of device_member_name, which holds the member's
// stem twice. When that exceeds kMaxFileName, the stem is shortened in the
// middle (both times the same, tagged with the hash of the whole name) so that
// the ID and the extension stay whole; where even that cannot fit (a very long
// ID), the whole name is (fit_file_name).
std::string extract_file_name(std::string_view base, std::string_view bundle_id);

// The member name an entry's file is named after (device_member_name): the
// innermost archive or package member holding its container, else the input's
// file name ("stdin" for "-"). So the entries of lib.so's .hip_fatbin are named
// after "lib.so", those of a .deb's ./usr/lib/libk.so.1 after that member.
std::string extract_base_name(const contents::Container& c, const std::string& input);

struct ExtractedFile {
  std::string member;     // the innermost archive member holding it ("" in the input itself)
  std::string bundle_id;  // as stored
  std::string path;       // written file: <dir>/<name>
};

// Writes the device code of `config.inputs[0]` (anything the walker reads) into
// `dir` (created if missing): every entry one of `targets` selects, or every
// entry when `targets` is empty, in file order. A target selects
//  - as a bundle entry ID: the entries compatible with it by LLVM's rules
//    (config.hip_openmp_compatible included; an NVIDIA fatbin entry when the
//    ID's target ID is its target);
//  - as a bare target ID (gfx90a, gfx90a:xnack-, gfx9-generic, sm_80, sm_90a,
//    compute_80): the entries of exactly that target, of any offload kind
//    (compat::is_of_target: a feature left out matches any setting).
// Names are device_member_name of extract_base_name, made safe and unique as
// above; host entries of objects (one zero byte) are the object without its
// bundle sections, as in device archives. Fails on an input (or a directory)
// without any device code with contents::kNoDeviceCode, when a target finds
// nothing unless config.allow_missing_bundles, and on a bundle storing an ID
// twice. All files are committed together: after an error nothing has been
// written. `limits`: the walk's (contents::Limits: depth, members, bytes, xz threads).
std::vector<ExtractedFile> extract_to_dir(const Config& config, const std::vector<compat::TargetSpec>& targets,
                                          const std::string& dir, const contents::Limits& limits = {});

}  // namespace ot::bundler
