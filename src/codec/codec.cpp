#include "codec/codec.h"

// ZSTD_c_stableInBuffer is in zstd's experimental API (stable since 1.4.9 in
// behaviour); the static build links the same libzstd the headers describe.
#define ZSTD_STATIC_LINKING_ONLY
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>

#include "support/mapped_file.h"
#include "support/output_file.h"

namespace ot::codec {

std::string_view method_name(Method m) { return m == Method::Zstd ? "zstd" : "zlib"; }

namespace {

constexpr std::size_t kChunk = 1 << 20;

// zstd's ZSTD_WINDOWLOG_LIMIT_DEFAULT and ZSTD_WINDOWLOG_MAX_64 (both only in
// its experimental API section).
constexpr int kDefaultWindowLogLimit = 27, kMaxWindowLog = 31;

// Where to stop handing a zstd frame's data to a decoder whose output buffer
// cannot be cut (ZSTD_d_stableOutBuffer) so that it gives about kChunk of output
// per call: the end of the blocks from the block header at `at` whose output
// adds up to kChunk (a compressed block gives at most 128 KiB, a raw or RLE
// block its size; format: RFC 8878 3.1.1.2). Feeding input by size would not
// do: the second of two equal entries is a few bytes a block, so one MiB of
// input could be the rest of the frame. Past the last block, or where a block
// header cannot be read, the step ends at the end of `src`, and the decoder
// reports what is wrong.
std::size_t zstd_step_end(Bytes src, std::size_t at) {
  constexpr std::uint64_t kMaxBlockOutput = 128u << 10;  // ZSTD_BLOCKSIZE_MAX
  std::uint64_t output = 0;
  while (output < kChunk) {
    if (src.size() < 3 || at > src.size() - 3) return src.size();
    const std::uint32_t header = load_le<std::uint16_t>(src.data() + at) |
                                 static_cast<std::uint32_t>(std::to_integer<std::uint8_t>(src[at + 2])) << 16;
    const bool last = header & 1;
    const unsigned type = (header >> 1) & 3;  // 0 raw, 1 RLE, 2 compressed, 3 reserved
    const std::uint32_t size = header >> 3;
    if (type == 3) return src.size();
    output += type == 2 ? kMaxBlockOutput : size;
    const std::uint64_t next = at + 3 + std::uint64_t{type == 1 ? 1u : size};
    if (last || next >= src.size()) return src.size();
    at = static_cast<std::size_t>(next);
  }
  return at;
}

int window_log_limit(std::uint64_t size) {
  int log = kDefaultWindowLogLimit;
  while (log < kMaxWindowLog && (std::uint64_t{1} << log) < size) ++log;
  return log;
}

std::string zlib_error_text(int code) {
  switch (code) {
    case Z_MEM_ERROR: return "zlib error: Z_MEM_ERROR";
    case Z_BUF_ERROR: return "zlib error: Z_BUF_ERROR";
    case Z_STREAM_ERROR: return "zlib error: Z_STREAM_ERROR";
    case Z_DATA_ERROR: return "zlib error: Z_DATA_ERROR";
    default: return "zlib error: Z_UNKNOWN_ERROR";
  }
}

}  // namespace

struct Compressor::Impl {
  Params params;
  Sink sink;
  Input input = Input::Buffered;
  ZSTD_inBuffer stable{nullptr, 0, 0};  // Input::Stable: everything fed so far
  bool stable_ended = false;            // the frame is complete
  std::uint64_t total = 0;
  ZSTD_CCtx* zc = nullptr;
  z_stream zs{};
  bool zs_ready = false;
  std::vector<std::byte> out = std::vector<std::byte>(kChunk);

  ~Impl() {
    if (zc) ZSTD_freeCCtx(zc);
    if (zs_ready) deflateEnd(&zs);
  }

  void zstd_run(ZSTD_inBuffer& ib, ZSTD_EndDirective mode) {
    for (;;) {
      ZSTD_outBuffer ob{out.data(), out.size(), 0};
      std::size_t left = ZSTD_compressStream2(zc, &ob, &ib, mode);
      if (ZSTD_isError(left)) fail("", "zstd compression failed: {}", ZSTD_getErrorName(left));
      if (ob.pos) sink(Bytes(out.data(), ob.pos));
      bool done = mode == ZSTD_e_end ? left == 0 : ib.pos == ib.size;
      if (done) break;
    }
  }

  void zlib_run(Bytes in, int flush) {
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
    std::size_t remaining = in.size();
    do {
      // zlib counts in uInt: feed at most 1 GiB at a time.
      uInt step = static_cast<uInt>(std::min<std::size_t>(remaining, 1u << 30));
      zs.avail_in = step;
      remaining -= step;
      int f = remaining == 0 ? flush : Z_NO_FLUSH;
      do {
        zs.next_out = reinterpret_cast<Bytef*>(out.data());
        zs.avail_out = static_cast<uInt>(out.size());
        int rc = deflate(&zs, f);
        if (rc == Z_STREAM_ERROR) fail("", "zlib compression failed: {}", zlib_error_text(rc));
        std::size_t produced = out.size() - zs.avail_out;
        if (produced) sink(Bytes(out.data(), produced));
        if (f == Z_FINISH && rc == Z_STREAM_END) return;
      } while (zs.avail_out == 0 || (f == Z_FINISH));
    } while (remaining > 0);
  }
};

int max_threads() { return ZSTD_cParam_getBounds(ZSTD_c_nbWorkers).upperBound; }

Compressor::Compressor(const Params& params, std::uint64_t total_size, Sink sink, Input input) : impl_(new Impl) {
  impl_->params = params;
  impl_->sink = std::move(sink);
  impl_->input = input;
  impl_->total = total_size;
  if (params.method == Method::Zstd) {
    impl_->zc = ZSTD_createCCtx();
    if (!impl_->zc) throw std::bad_alloc();
    // The same parameters, in the same order, as llvm::compression::zstd::compress.
    ZSTD_CCtx_setParameter(impl_->zc, ZSTD_c_enableLongDistanceMatching, params.long_distance ? 1 : 0);
    std::size_t rc = ZSTD_CCtx_setParameter(impl_->zc, ZSTD_c_compressionLevel, params.level);
    if (ZSTD_isError(rc)) fail("", "invalid zstd compression level {}", params.level);
    if (params.window_log) ZSTD_CCtx_setParameter(impl_->zc, ZSTD_c_windowLog, params.window_log);
    if (params.threads > 0) {
      rc = ZSTD_CCtx_setParameter(impl_->zc, ZSTD_c_nbWorkers, params.threads);
      if (ZSTD_isError(rc)) fail("", "this libzstd cannot compress with {} threads", params.threads);
      // What decides the multi-threaded bytes, pinned so that they depend on
      // neither the worker count nor zstd's defaults: the job size (where the
      // input is cut into independently compressed jobs) and the overlap each
      // job reloads from the previous one (rsyncable cuts stay off, zstd's
      // default). Long-distance matches are searched serially over the whole
      // window, so they cross job borders.
      ZSTD_CCtx_setParameter(impl_->zc, ZSTD_c_jobSize, static_cast<int>(kMtJobSize));
      ZSTD_CCtx_setParameter(impl_->zc, ZSTD_c_overlapLog, kMtOverlapLog);
    }
    if (input == Input::Stable) ZSTD_CCtx_setParameter(impl_->zc, ZSTD_c_stableInBuffer, 1);
    ZSTD_CCtx_setPledgedSrcSize(impl_->zc, total_size);
  } else {
    if (params.level < -1 || params.level > 9) fail("", "invalid zlib compression level {}", params.level);
    int rc = deflateInit(&impl_->zs, params.level);
    if (rc != Z_OK) fail("", "zlib compression failed: {}", zlib_error_text(rc));
    impl_->zs_ready = true;
  }
}

Compressor::~Compressor() = default;

void Compressor::write(Bytes data) {
  if (impl_->params.method == Method::Zstd && impl_->input == Input::Stable) {
    ZSTD_inBuffer& in = impl_->stable;
    if (!in.src) in.src = data.data();
    if (data.data() != static_cast<const std::byte*>(in.src) + in.size && !data.empty())
      throw std::logic_error("Compressor: a stable input must continue the previous write");
    in.size += data.size();
    // The last piece ends the frame at once: a frame ended by finish() alone
    // would close with an empty last block (3 bytes ZSTD_compress2 does not
    // write) whenever the input had just filled a whole block.
    impl_->stable_ended = in.size == impl_->total;
    impl_->zstd_run(in, impl_->stable_ended ? ZSTD_e_end : ZSTD_e_continue);
    return;
  }
  for (std::size_t off = 0; off < data.size(); off += kChunk * 64) {
    Bytes piece = data.subspan(off, std::min<std::size_t>(kChunk * 64, data.size() - off));
    if (impl_->params.method == Method::Zstd) {
      ZSTD_inBuffer in{piece.data(), piece.size(), 0};
      impl_->zstd_run(in, ZSTD_e_continue);
    } else {
      impl_->zlib_run(piece, Z_NO_FLUSH);
    }
  }
}

void Compressor::finish() {
  if (impl_->params.method == Method::Zstd) {
    ZSTD_inBuffer none{nullptr, 0, 0};
    if (!impl_->stable_ended) impl_->zstd_run(impl_->input == Input::Stable ? impl_->stable : none, ZSTD_e_end);
  } else {
    impl_->zlib_run({}, Z_FINISH);
  }
}

std::uint64_t Compressor::window_size() const {
  if (impl_->params.method == Method::Zlib) return 32u << 10;
  int log = 0;
  ZSTD_CCtx_getParameter(impl_->zc, ZSTD_c_windowLog, &log);
  if (log == 0) {
    // The library's choice: the level's window for this size, and with
    // long-distance matching at least ZSTD_LDM_DEFAULT_WINDOW_LOG (27).
    log = static_cast<int>(ZSTD_getCParams(impl_->params.level, impl_->total, 0).windowLog);
    if (impl_->params.long_distance) log = std::max(log, 27);
  }
  return std::uint64_t{1} << log;
}

void decompress_stream(Method method, Bytes src, std::uint64_t size, const Sink& sink,
                       const std::function<void(std::uint64_t)>& consumed) {
  if (size > max_decompressed_size(method, src.size()))
    fail("", "declared uncompressed size 0x{:x} is more than 0x{:x} compressed bytes can hold", size, src.size());
  std::vector<std::byte> buf(4u << 20);
  std::uint64_t produced = 0;
  auto deliver = [&](std::size_t n) {
    if (n == 0) return;
    if (produced + n > size) fail("", "Destination buffer is too small");
    produced += n;
    sink(Bytes(buf.data(), n));
  };
  if (method == Method::Zstd) {
    std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> dc(ZSTD_createDCtx(), ZSTD_freeDCtx);
    if (!dc) throw std::bad_alloc();
    // The streaming decoder keeps a window buffer of min(window, frame content
    // size) bytes and refuses windows over 2^27 by default. LLVM decodes one-shot
    // (no window limit up to zstd's 2^31), so frames with a larger window (our
    // --window auto for entries over 128 MiB) are valid: accept a window up to
    // the declared size, which the header justifies (and max_decompressed_size
    // has already capped), and never more.
    ZSTD_DCtx_setParameter(dc.get(), ZSTD_d_windowLogMax, window_log_limit(size));
    ZSTD_inBuffer in{src.data(), src.size(), 0};
    std::size_t rc = 1;
    while (rc != 0) {
      ZSTD_outBuffer out{buf.data(), buf.size(), 0};
      rc = ZSTD_decompressStream(dc.get(), &out, &in);
      if (ZSTD_isError(rc)) fail("", "{}", ZSTD_getErrorName(rc));
      deliver(out.pos);
      if (consumed) consumed(in.pos);
      if (rc != 0 && in.pos == in.size && out.pos < out.size) fail("", "Src size is incorrect");  // truncated frame
    }
    if (in.pos != in.size) fail("", "Src size is incorrect");  // data after the frame
  } else {
    z_stream zs{};
    if (inflateInit(&zs) != Z_OK) fail("", "{}", zlib_error_text(Z_MEM_ERROR));
    std::unique_ptr<z_stream, decltype(&inflateEnd)> guard(&zs, inflateEnd);
    std::size_t in_off = 0;
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
      if (zs.avail_in == 0 && in_off < src.size()) {
        std::size_t n = std::min<std::size_t>(src.size() - in_off, 1u << 30);
        zs.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(src.data() + in_off));
        zs.avail_in = static_cast<uInt>(n);
        in_off += n;
      }
      zs.next_out = reinterpret_cast<Bytef*>(buf.data());
      zs.avail_out = static_cast<uInt>(buf.size());
      rc = inflate(&zs, Z_NO_FLUSH);
      if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR) fail("", "{}", zlib_error_text(Z_DATA_ERROR));
      if (rc == Z_MEM_ERROR || rc == Z_STREAM_ERROR) fail("", "{}", zlib_error_text(rc));
      std::size_t got = buf.size() - zs.avail_out;
      if (consumed) consumed(in_off - zs.avail_in);
      if (produced + got > size) fail("", "{}", zlib_error_text(Z_BUF_ERROR));
      deliver(got);
      if (rc == Z_BUF_ERROR || (rc == Z_OK && got == 0 && zs.avail_in == 0 && in_off == src.size()))
        fail("", "{}", zlib_error_text(Z_DATA_ERROR));  // the stream ends early, as uncompress() says
    }
  }
  if (produced != size)
    fail("", "declared uncompressed size 0x{:x} but the data decompresses to 0x{:x} bytes", size, produced);
}

std::vector<std::byte> decompress_head(Method method, Bytes src, std::uint64_t size, std::size_t n) {
  if (size > max_decompressed_size(method, src.size()))
    fail("", "declared uncompressed size 0x{:x} is more than 0x{:x} compressed bytes can hold", size, src.size());
  std::vector<std::byte> out(static_cast<std::size_t>(std::min<std::uint64_t>(n, size)));
  std::size_t got = 0;
  if (method == Method::Zstd) {
    // zstd's buffer-less API, block by block into `head`, which is the only
    // history the decoder keeps: ZSTD_decompressStream would allocate the
    // frame's whole window (128 MiB for LLVM's frames) to produce 64 KiB, and
    // a malloc that fills what it hands out (MALLOC_PERTURB_) makes all of it
    // resident. A block produces at most ZSTD_BLOCKSIZE_MAX bytes.
    std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> dc(ZSTD_createDCtx(), ZSTD_freeDCtx);
    if (!dc) throw std::bad_alloc();
    std::size_t rc = ZSTD_decompressBegin(dc.get());
    if (ZSTD_isError(rc)) fail("", "{}", ZSTD_getErrorName(rc));
    std::vector<std::byte> head(out.size() + ZSTD_BLOCKSIZE_MAX);
    std::size_t at = 0;
    for (;;) {
      const std::size_t want = ZSTD_nextSrcSizeToDecompress(dc.get());
      if (want == 0 || want > src.size()) break;  // the frame ends, or is cut short
      rc = ZSTD_decompressContinue(dc.get(), head.data() + at, head.size() - at, src.data(), want);
      if (ZSTD_isError(rc)) fail("", "{}", ZSTD_getErrorName(rc));
      src = src.subspan(want);
      at += rc;
      if (at >= out.size()) break;
    }
    got = std::min(at, out.size());
    std::copy_n(head.begin(), got, out.begin());
  } else {
    z_stream zs{};
    if (inflateInit(&zs) != Z_OK) fail("", "{}", zlib_error_text(Z_MEM_ERROR));
    std::unique_ptr<z_stream, decltype(&inflateEnd)> guard(&zs, inflateEnd);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(src.data()));
    zs.avail_in = static_cast<uInt>(std::min<std::uint64_t>(src.size(), 1u << 30));
    zs.next_out = reinterpret_cast<Bytef*>(out.data());
    zs.avail_out = static_cast<uInt>(out.size());
    while (zs.avail_out > 0) {
      const uInt out_before = zs.avail_out, in_before = zs.avail_in;
      const int rc = inflate(&zs, Z_NO_FLUSH);
      if (rc == Z_NEED_DICT || rc == Z_DATA_ERROR) fail("", "{}", zlib_error_text(Z_DATA_ERROR));
      if (rc == Z_MEM_ERROR || rc == Z_STREAM_ERROR) fail("", "{}", zlib_error_text(rc));
      if (rc == Z_STREAM_END || (zs.avail_out == out_before && zs.avail_in == in_before)) break;
    }
    got = out.size() - zs.avail_out;
  }
  out.resize(got);
  return out;
}

void decompress_into(Method method, Bytes src, std::span<std::byte> dst,
                     const std::function<void(std::uint64_t)>& produced,
                     const std::function<void(std::uint64_t)>& consumed) {
  const std::uint64_t size = dst.size();
  if (method == Method::Zlib) {  // inflate's window is 32 KiB: stream through its buffer
    std::uint64_t at = 0;
    decompress_stream(
        method, src, size,
        [&](Bytes b) {
          std::memcpy(dst.data() + at, b.data(), b.size());
          at += b.size();
          if (produced) produced(at);
        },
        consumed);
    return;
  }
  if (size > max_decompressed_size(method, src.size()))
    fail("", "declared uncompressed size 0x{:x} is more than 0x{:x} compressed bytes can hold", size, src.size());
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> dc(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!dc) throw std::bad_alloc();
  ZSTD_DCtx_setParameter(dc.get(), ZSTD_d_windowLogMax, window_log_limit(size));  // as decompress_stream
  ZSTD_DCtx_setParameter(dc.get(), ZSTD_d_stableOutBuffer, 1);
  ZSTD_outBuffer out{dst.data(), dst.size(), 0};
  // Input in steps of whole blocks, about kChunk of output each (zstd_step_end),
  // so that progress is reported (and memory released) as it goes: handed over
  // whole, a highly compressible frame (80 MiB of zeros in 3 KB) would be decoded
  // in one call, every page of it touched before the caller could drop any.
  const std::size_t header = ZSTD_frameHeaderSize(src.data(), src.size());
  std::size_t in_pos = 0, rc = 1, step_end = ZSTD_isError(header) ? src.size() : zstd_step_end(src, header);
  while (rc != 0) {
    ZSTD_inBuffer in{src.data(), step_end, in_pos};
    const std::size_t out_before = out.pos;
    rc = ZSTD_decompressStream(dc.get(), &out, &in);
    if (ZSTD_isError(rc)) fail("", "{}", ZSTD_getErrorName(rc));
    const bool progress = in.pos != in_pos || out.pos != out_before;
    if (in.pos == step_end && step_end < src.size()) step_end = zstd_step_end(src, step_end);
    in_pos = in.pos;
    if (produced) produced(out.pos);
    if (consumed) consumed(in_pos);
    if (rc != 0 && !progress) fail("", "Src size is incorrect");  // truncated frame
  }
  if (in_pos != src.size()) fail("", "Src size is incorrect");  // data after the frame
  if (out.pos != size)
    fail("", "declared uncompressed size 0x{:x} but the data decompresses to 0x{:x} bytes", size, out.pos);
}

void decompress_to(OutputFile& target, Method method, Bytes src, std::uint64_t size, const Sink& produced,
                   const std::function<void(std::uint64_t)>& consumed) {
  std::unique_ptr<WritableRegion> region;
  if (target.seekable() && size <= max_decompressed_size(method, src.size())) region = target.map_appended(size);
  if (!region) {
    decompress_stream(
        method, src, size,
        [&](Bytes b) {
          if (produced) produced(b);
          target.write(b);
        },
        consumed);
    return;
  }
  std::uint64_t seen = 0;
  decompress_into(
      method, src, region->bytes(),
      [&](std::uint64_t done) {
        if (produced && done > seen) produced(Bytes(region->bytes().subspan(seen, done - seen)));
        seen = done;
        region->release_behind(done);
      },
      consumed);
}

std::shared_ptr<InputFile> decompress_to_file(Method method, Bytes src, std::uint64_t size, const std::string& near,
                                              const std::string& name, const Sink& produced,
                                              const std::function<void(std::uint64_t)>& consumed) {
  OutputFile scratch = OutputFile::scratch(near);
  decompress_to(scratch, method, src, size, produced, consumed);
  return scratch.map(name);
}

std::vector<std::byte> compress_all(const Params& params, Bytes data) {
  std::vector<std::byte> out;
  if (params.method == Method::Zstd && params.threads == 0 && params.window_log == 0) {
    ZSTD_CCtx* zc = ZSTD_createCCtx();
    if (!zc) throw std::bad_alloc();
    ZSTD_CCtx_setParameter(zc, ZSTD_c_enableLongDistanceMatching, params.long_distance ? 1 : 0);
    std::size_t rc = ZSTD_CCtx_setParameter(zc, ZSTD_c_compressionLevel, params.level);
    if (ZSTD_isError(rc)) {
      ZSTD_freeCCtx(zc);
      fail("", "invalid zstd compression level {}", params.level);
    }
    out.resize(ZSTD_compressBound(data.size()));
    std::size_t n = ZSTD_compress2(zc, out.data(), out.size(), data.data(), data.size());
    ZSTD_freeCCtx(zc);
    if (ZSTD_isError(n)) fail("", "zstd compression failed: {}", ZSTD_getErrorName(n));
    out.resize(n);
    return out;
  }
  if (params.method == Method::Zlib) {
    uLongf len = compressBound(static_cast<uLong>(data.size()));
    out.resize(len);
    int rc = compress2(reinterpret_cast<Bytef*>(out.data()), &len, reinterpret_cast<const Bytef*>(data.data()),
                       static_cast<uLong>(data.size()), params.level);
    if (rc != Z_OK) fail("", "zlib compression failed: {}", zlib_error_text(rc));
    out.resize(len);
    return out;
  }
  // Reserved (not touched) at the bound, so that the output is never copied by growth.
  out.reserve(ZSTD_compressBound(data.size()));
  Compressor c(params, data.size(), [&](Bytes b) { out.insert(out.end(), b.begin(), b.end()); });
  c.write(data);
  c.finish();
  return out;
}

std::uint64_t max_decompressed_size(Method method, std::uint64_t compressed_size) {
  // zstd: a block of at most 128 KiB costs at least 4 bytes (3-byte header + 1 RLE
  // byte); zlib: deflate's maximum expansion is 1032:1.
  const std::uint64_t ratio = method == Method::Zstd ? 32768 : 1032;
  if (compressed_size > std::numeric_limits<std::uint64_t>::max() / ratio) return std::numeric_limits<std::uint64_t>::max();
  return compressed_size * ratio + 4096;
}

std::vector<std::byte> decompress(Method method, Bytes src, std::uint64_t size) {
  if (size > max_decompressed_size(method, src.size()))
    fail("", "declared uncompressed size 0x{:x} is more than 0x{:x} compressed bytes can hold", size, src.size());
  if (size > std::numeric_limits<std::size_t>::max()) throw std::bad_alloc();
  std::vector<std::byte> out(static_cast<std::size_t>(size));
  if (method == Method::Zstd) {
    std::size_t n = ZSTD_decompress(out.data(), out.size(), src.data(), src.size());
    if (ZSTD_isError(n)) fail("", "{}", ZSTD_getErrorName(n));
    if (n != size) fail("", "declared uncompressed size 0x{:x} but the data decompresses to 0x{:x} bytes", size, n);
    return out;
  }
  // LLVM calls uncompress(); uncompress2 is the same with the source length
  // reported back. uLong is 64 bits here, and zlib feeds uInt-sized pieces itself.
  uLongf out_len = static_cast<uLongf>(out.size());
  uLong in_len = static_cast<uLong>(src.size());
  int rc = uncompress2(reinterpret_cast<Bytef*>(out.data()), &out_len,
                       reinterpret_cast<const Bytef*>(src.data()), &in_len);
  if (rc != Z_OK) fail("", "{}", zlib_error_text(rc));
  if (out_len != size) fail("", "declared uncompressed size 0x{:x} but the data decompresses to 0x{:x} bytes", size, out_len);
  return out;
}

}  // namespace ot::codec
