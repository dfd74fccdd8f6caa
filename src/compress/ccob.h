// Whole compressed offload bundles (CCOB, reference 2.13) on top of the codec:
// compress an uncompressed bundle into a CCOB, decompress and check one,
// describe one. The header layout itself lives in formats/compressed_bundle.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compress/codec.h"
#include "formats/compressed_bundle.h"
#include "support/bytes.h"

namespace ot::compress {

struct CcobOptions {
  Params params;              // method, level, long distance, threads, window_log (0 = the library's)
  std::uint16_t version = 2;  // 2 (LLVM 19's) or 3; 1 (LLVM 18's) to keep an input's version
  bool auto_window = false;   // zstd: a window covering the largest entry (auto_window_log)
  // The header's hash (MD5 of the whole bundle, about a third of what zstd
  // level 3 costs) on a second thread, beside the compressor; false: on the
  // calling thread, before compressing. The bytes are the same either way.
  bool hash_beside = true;
};

// The zstd window log that lets long-distance matching reach from each entry
// of `bundle` back to the one before it (so near-identical per-GPU entries
// compress to about one), or 0 when the library's own window for these
// parameters already covers it (then the bytes stay LLVM's). Binary bundles are
// measured entry by entry; other bundles (text, objects) by their whole size.
// At most zstd's maximum, 31: LLVM 19 decodes one-shot, which accepts any
// window up to that.
int auto_window_log(Bytes bundle, const Params& params);

// The CCOB (header and compressed data) of the uncompressed bundle `plain`.
// With threads == 0 and no window of our own the bytes are LLVM 19's
// `clang-offload-bundler -compress` bytes; errors name `file`.
std::vector<std::byte> make_ccob(Bytes plain, const CcobOptions& options, const std::string& file);

// The same, handing the compressed data (without the header) to `sink` as it
// comes and returning the header, which goes in front of it (it holds the
// data's size and the hash, computed meanwhile: CcobOptions::hash_beside).
// `consumed(n)`: the first n bytes of `plain` are no longer read (by zstd,
// which reads LLVM's bytes in place up to a window back, nor the hash), so a
// mapped input may drop them from memory. The one path of `offloadtool
// compress`, `clang-offload-bundler -compress` and `bundle --compress`.
formats::CcobHeader compress_ccob(Bytes plain, const CcobOptions& options, const std::string& file,
                                  const Sink& sink, const std::function<void(std::uint64_t)>& consumed = {});

// What the compressed data says about itself (read from the zstd frame header
// or the zlib stream header); empty when the header cannot be read.
struct StreamInfo {
  int window_log = 0;                          // zstd: log2 of the window (rounded up); zlib: 8..15
  std::optional<std::uint64_t> content_size;   // zstd frame content size, when recorded
};
std::optional<StreamInfo> stream_info(Method method, Bytes compressed);

struct DecodedCcob {
  formats::CcobHeader header;
  std::uint64_t compressed_size = 0;  // bytes after the header that were decoded
  std::optional<std::uint64_t> recomputed_hash;  // truncated MD5 of the decompressed bytes, when asked for
  bool hash_matches() const { return !recomputed_hash || header.hash == *recomputed_hash; }
};

// Decompress the CCOB at the start of `data` (bounded by its total size; v1 runs
// to the end of `data`) into `sink`, in pieces, with memory bounded by the
// codec's buffers and the frame's window whatever the declared size. `base` is
// the offset of `data` in `file`, so that errors name the file offset. Only
// decoding errors are thrown; the caller decides what a hash mismatch means.
// The hash is recomputed (on a thread of its own) only when `hash` is true.
// `consumed(n)`: the first n bytes of `data` are no longer read.
// Whether the content of a CCOB (`payload`, decoding to `h.uncompressed_size`
// bytes) can be a bundle, told from its first 64 KiB alone: a binary bundle's
// magic, or a text bundle's start marker within them (the bundler writes it
// first). So a small file declaring GiBs of something else is refused before
// any of it is written out. A head that decodes short (damaged or cut data)
// says nothing: true, and the full decode reports the damage. Throws ot::Error
// (without file) for undecodable data.
bool may_hold_bundle(const formats::CcobHeader& h, Bytes payload);

DecodedCcob decode_ccob(Bytes data, const std::string& file, std::uint64_t base, const Sink& sink,
                        bool hash = true, const std::function<void(std::uint64_t)>& consumed = {});

// The same, appended to `target` (compress::decompress_to: into a mapping of
// it where it is a file, so that memory stays at a few MiB).
DecodedCcob decode_ccob_to(OutputFile& target, Bytes data, const std::string& file, std::uint64_t base, bool hash,
                           const std::function<void(std::uint64_t)>& consumed = {});

// The error for a hash mismatch of `d` (found at `base` in `file`).
Error hash_mismatch_error(const DecodedCcob& d, const std::string& file, std::uint64_t base);

}  // namespace ot::compress
