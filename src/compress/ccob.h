// Whole compressed offload bundles (CCOB, reference 2.13) on top of the codec:
// compress an uncompressed bundle into a CCOB, decompress and check one,
// describe one. The header layout itself lives in formats/compressed_bundle.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "codec/codec.h"
#include "formats/bundle_binary.h"
#include "formats/compressed_bundle.h"
#include "support/bytes.h"

namespace ot::compress {

struct CcobOptions {
  codec::Params params;              // method, level, long distance, threads, window_log (0 = the library's)
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
int auto_window_log(Bytes bundle, const codec::Params& params);

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
                                  const codec::Sink& sink, const std::function<void(std::uint64_t)>& consumed = {});

// What the compressed data says about itself (read from the zstd frame header
// or the zlib stream header); empty when the header cannot be read.
struct StreamInfo {
  int window_log = 0;                          // zstd: log2 of the window (rounded up); zlib: 8..15
  std::optional<std::uint64_t> content_size;   // zstd frame content size, when recorded
};
std::optional<StreamInfo> stream_info(codec::Method method, Bytes compressed);

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

DecodedCcob decode_ccob(Bytes data, const std::string& file, std::uint64_t base, const codec::Sink& sink,
                        bool hash = true, const std::function<void(std::uint64_t)>& consumed = {});

// The same, appended to `target` (codec::decompress_to: into a mapping of
// it where it is a file, so that memory stays at a few MiB).
DecodedCcob decode_ccob_to(OutputFile& target, Bytes data, const std::string& file, std::uint64_t base, bool hash,
                           const std::function<void(std::uint64_t)>& consumed = {});

// The error for a hash mismatch of `d` (found at `base` in `file`).
Error hash_mismatch_error(const DecodedCcob& d, const std::string& file, std::uint64_t base);

// The decompressed bytes of a CCOB, decoded from its start only as far as they
// are read (codec::decompress_head, the prefix at least doubling, from
// 64 KiB, each time a read goes past it): a binary bundle's table and its code
// objects' ELF headers, without their payloads. Memory: the prefix read and the
// codec's buffers; time: decoding that prefix (about twice, counting the
// regrowths), whatever the declared size.
class CcobPrefix {
 public:
  // A read past what `payload` decodes to when it is only the first part of the
  // compressed data (`complete` false): the caller reads more and tries again.
  struct ShortPrefix {};

  // `payload`: the compressed bytes after the header `h` (formats::ccob_payload),
  // or their first part. Decoding errors, data that ends early and a read past
  // `max_prefix` decoded bytes (a bound on the memory a table may take) are
  // thrown as ot::Error at offset `at` of `file`.
  CcobPrefix(const formats::CcobHeader& h, Bytes payload, bool complete, std::string file, std::uint64_t at,
             std::uint64_t max_prefix = codec::kInMemoryLimit);

  // The first min(n, uncompressed size) decompressed bytes (valid until the
  // next call), decoding further where they are not at hand yet.
  Bytes head(std::uint64_t n);
  // All the decompressed bytes (h.uncompressed_size of them), read through head().
  ByteSource source();
  // How many bytes have been decompressed (and are held) so far.
  std::uint64_t decoded() const { return prefix_.size(); }

 private:
  formats::CcobHeader h_;
  Bytes payload_;
  bool complete_;
  std::string file_;
  std::uint64_t at_, max_prefix_;
  std::vector<std::byte> prefix_;
};

// The entries (IDs, and offsets and sizes in the decompressed bundle) of the
// binary bundle in the CCOB at the start of `data`, decoded only as far as the
// bundle's table. `data` may be the whole CCOB or only its first bytes (say,
// the first few hundred KiB of a package member): nullopt when those do not
// decode as far as the table reaches (read more and call again). A CCOB of
// version 1 records no total size, so `data` is never known to be the whole of
// it: a decode that runs out is nullopt there too. Throws ot::Error naming
// `file` and an offset for a damaged header or table, data that does not
// decode, a CCOB holding anything but a binary bundle (a text bundle's entries
// take decoding all of it), and a table reaching past kInMemoryLimit decoded
// bytes. The hash is not checked (it covers all the decompressed bytes).
std::optional<std::vector<formats::BundleEntry>> ccob_bundle_entries(Bytes data, const std::string& file);

}  // namespace ot::compress
