// Reading bundle inputs, shared by unbundling, listing and device archives:
// the file handler LLVM 19 picks for a type, CCOB decompression with LLVM's
// messages and -verbose report, and the entries of one bundle -- a whole file,
// one of several concatenated bundles, or an archive member.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bundler/offload_bundler.h"
#include "codec/codec.h"
#include "formats/bundle_binary.h"
#include "support/mapped_file.h"

namespace ot {
class OutputFile;
}

namespace ot::bundler {

inline constexpr std::string_view kSectionPrefix = "__CLANG_OFFLOAD_BUNDLE__";

enum class Handler { Binary, Text, Object };

// The file handler LLVM would create for `type` with `reference` as its input
// (reference 2.7); an unknown type is LLVM's "invalid file type" error.
Handler handler_for(const std::string& type, Bytes reference);

// Bundles up to this size are (de)compressed in memory; larger ones through a
// scratch file, so that memory stays flat.
using codec::kInMemoryLimit;

// "1,234,567": LLVM's formatWithCommas (the -verbose statistics).
std::string with_commas(std::uint64_t v);
double seconds_since(std::chrono::steady_clock::time_point t0);

// An object bundle's host entry: the single byte 0, which stands for the
// object itself without its __CLANG_OFFLOAD_BUNDLE__ sections (LLVM's bundler
// writes it so; extracting it writes the stripped object).
bool is_host_marker(Bytes payload);

// One bundle after decompression, with its entries in file order. The bundle
// is file->bytes() from `base` on: a bundle inside a larger file (an archive
// member, one of several concatenated bundles) starts there; a decompressed
// one is a file of its own (memory, or a scratch file when large).
struct OpenedBundle {
  std::shared_ptr<InputFile> input;  // the file as read
  std::shared_ptr<InputFile> file;   // `input`, or the decompressed bundle
  std::uint64_t base = 0;
  std::uint64_t size = 0;
  std::string display;               // the bundle's name in errors
  Handler handler = Handler::Binary;
  std::vector<formats::BundleEntry> entries;

  bool decompressed() const { return file != input; }
  Bytes bytes() const { return file->bytes().subspan(base, size); }
  Bytes payload(const formats::BundleEntry& e) const { return file->bytes().subspan(base + e.offset, e.size); }
  // The host entry of an object bundle (bundler::is_host_marker).
  bool is_host_marker(const formats::BundleEntry& e) const;
  // The order LLVM offers the entries in: its StringMap order for binary
  // bundles, file order for text and object bundles.
  std::vector<std::size_t> llvm_order() const;
};

// The bundle in [base, base+size) of `in`, named `display` in errors (whose
// offsets count from the start of `in`). A CCOB is decompressed unless
// `decompress` is false (then it has no entries); LLVM's failure texts say
// "input" for a whole file and "code object" for a part of one.
OpenedBundle open_bundle(const Config& config, const std::shared_ptr<InputFile>& in, std::uint64_t base,
                         std::uint64_t size, const std::string& display, bool decompress = true);

// The bundles of the input `in`: one, or with config.concatenated every bundle
// of a sequence (formats::split_bundles).
std::vector<OpenedBundle> open_bundles(const Config& config, const std::shared_ptr<InputFile>& in);

// LLVM 23 reads several bundles from one input (reference 1.5, docs/llvm23.md),
// when the release read has several_bundles and the type is a binary one:
// CCOBs one after another (each ends where its header's total size says, the
// next is the next "CCOB" from there; each is listed on its own), or plain
// bundles found by searching for the magic 25 bytes after the last one found
// (read as LLVM reads a header, never failing). -unbundle splits a plain input
// only when it starts with a bundle, each piece up to the next magic, and
// takes each target from the first piece that has it (open_bundles returns
// these); -list prints, after each plain bundle found, every ID found so far.
// nullopt / empty: the input is read as 22 reads it.
std::optional<std::string> list_as_23(const Config& config, const std::shared_ptr<InputFile>& in);
std::vector<OpenedBundle> bundles_as_23_unbundles(const Config& config, const std::shared_ptr<InputFile>& in);

// The object of an object bundle without its bundle sections (what LLVM asks
// llvm-objcopy for when it extracts the host entry).
void write_stripped_object(const OpenedBundle& b, OutputFile& out);
// The same for the object `object`, which is all of `file` or bytes elsewhere
// (a part of it, a spooled member), named `display` in errors.
void write_stripped_object(const InputFile& file, Bytes object, const std::string& display, OutputFile& out);

}  // namespace ot::bundler
