// zstd and zlib behind one interface: a streaming compressor (so a bundle is
// never assembled in memory to be compressed) and a bounded one-shot decompressor.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "support/bytes.h"

namespace ot {
class InputFile;   // support/mapped_file.h
class OutputFile;  // support/output_file.h
}

namespace ot::codec {

// The numbers are llvm::compression::Format, stored in CCOB headers.
enum class Method : std::uint16_t { Zlib = 0, Zstd = 1 };

std::string_view method_name(Method m);  // "zlib" / "zstd"

struct Params {
  Method method = Method::Zstd;
  int level = 3;
  bool long_distance = true;  // zstd only (ZSTD_c_enableLongDistanceMatching)
  int threads = 0;            // zstd workers; 0 = single-threaded, LLVM's bytes
  int window_log = 0;         // zstd; 0 = the library's choice for the level
};

// LLVM's default level for a method (zstd 3, zlib 6): what the bundler uses.
constexpr int default_level(Method m) { return m == Method::Zlib ? 6 : 3; }

using Sink = std::function<void(Bytes)>;

// Multi-threaded zstd (Params::threads > 0) cuts the input into jobs of this
// size, each reloading 2^-(9-kMtOverlapLog) of the window from the previous
// one; both are fixed so that the bytes are the same for every thread count.
inline constexpr std::size_t kMtJobSize = 8u << 20;
inline constexpr int kMtOverlapLog = 6;

// The most zstd workers this libzstd accepts (ZSTD_c_nbWorkers' upper bound):
// 0 when it was built without its multi-threaded compressor (ZSTD_MULTITHREAD),
// as Debian's libzstd.a is, and Params::threads > 0 then fails.
int max_threads();

class Compressor {
 public:
  // How the input arrives. Buffered: in any pieces (zstd copies them into its
  // own window buffer). Stable: each write continues the previous one in
  // memory -- successive extensions of one buffer that stays mapped until
  // finish() -- and zstd reads it in place (ZSTD_c_stableInBuffer). The bytes
  // are then exactly those of one ZSTD_compress2 call over the whole buffer
  // (LLVM's), however the input is cut, while the compressor reads no further
  // back than window_size(): the caller may drop older pages from memory, as
  // long as reading them again gives the same bytes (a file mapping).
  enum class Input { Buffered, Stable };

  // `total_size` is the exact number of bytes that will be fed (pledged to zstd,
  // so the frame header matches what ZSTD_compress2 writes for the same input).
  Compressor(const Params& params, std::uint64_t total_size, Sink sink, Input input = Input::Buffered);
  ~Compressor();
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;

  void write(Bytes data);
  void finish();
  // How far behind the newest input the compressor may still read.
  std::uint64_t window_size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One call over the whole input, exactly as llvm::compression does
// (ZSTD_compress2 / compress2). zstd's buffered streaming finds other matches
// once the input outgrows its window buffer; Compressor::Input::Stable gives
// these bytes without the whole input in memory.
std::vector<std::byte> compress_all(const Params& params, Bytes data);

// Decompress `src` into exactly `size` bytes. Errors are LLVM's texts
// ("Src size is incorrect", "zlib error: Z_DATA_ERROR") without a prefix, thrown
// as ot::Error with an empty file; the caller adds context. A declared size the
// compressed data cannot possibly hold is rejected before anything is allocated.
std::vector<std::byte> decompress(Method method, Bytes src, std::uint64_t size);

// The same as decompress(), handing the output to `sink` in pieces of at most
// a few MiB, so that memory stays bounded whatever `size` is.
// `consumed(n)` reports that the first n bytes of `src` are no longer needed.
void decompress_stream(Method method, Bytes src, std::uint64_t size, const Sink& sink,
                       const std::function<void(std::uint64_t)>& consumed = {});

// The first min(n, size) bytes `src` decompresses to (fewer where the data
// ends or stops early: the whole decode reports that), decoding no further, so
// that content which is not what it should be is refused before a declared
// size of many GiB is written out. Memory: the codec's buffers and n. Errors
// as decompress_stream's.
std::vector<std::byte> decompress_head(Method method, Bytes src, std::uint64_t size, std::size_t n);

// The same into `dst` (exactly the declared size), which the decoder also uses
// as its window (zstd: ZSTD_d_stableOutBuffer): no window buffer of its own, so
// with `dst` a file mapping the caller may drop pages behind from memory (they
// are read back from the file when the decoder refers to them).
// `produced(n)`: the first n bytes of `dst` are final.
void decompress_into(Method method, Bytes src, std::span<std::byte> dst,
                     const std::function<void(std::uint64_t)>& produced,
                     const std::function<void(std::uint64_t)>& consumed = {});

// The largest output `compressed_size` bytes of this method can decode to.
std::uint64_t max_decompressed_size(Method method, std::uint64_t compressed_size);

// Decompressed bundles up to this size are held in memory; larger ones go
// through decompress_to_file, so that memory stays flat.
inline constexpr std::uint64_t kInMemoryLimit = 64u << 20;

// The same as decompress(), appended to `target` at its write position. Where
// `target` is a file (and the declared size one the data can hold), the decoder
// writes straight into a mapping of it (OutputFile::map_appended) and uses that
// as its window (decompress_into), and pages more than 4 MiB behind it are
// dropped (read back from the file when the decoder refers to them): neither
// the output nor zstd's window stays in memory, and nothing is copied through
// write(). Otherwise (a pipe, a file system that cannot allocate ahead, an
// implausible size, which the decoder then reports) the output streams through
// the codec's buffers and the frame's window. `produced(b)` sees every
// decompressed piece once, in order.
void decompress_to(OutputFile& target, Method method, Bytes src, std::uint64_t size, const Sink& produced = {},
                   const std::function<void(std::uint64_t)>& consumed = {});

// The same into an unlinked scratch file beside `near` (OutputFile::scratch),
// mapped back read-only and showing `name` in errors: for bundles too large
// for memory.
std::shared_ptr<InputFile> decompress_to_file(Method method, Bytes src, std::uint64_t size, const std::string& near,
                                              const std::string& name, const Sink& produced = {},
                                              const std::function<void(std::uint64_t)>& consumed = {});

}  // namespace ot::codec
