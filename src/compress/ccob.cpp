#include "compress/ccob.h"

// ZSTD_getCParams and ZSTD_getFrameHeader: stable in practice, exported by
// libzstd.so, but declared in zstd's "static linking only" section.
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <thread>

#include "formats/bundle_binary.h"
#include "formats/bundle_text.h"
#include "support/md5.h"

namespace ot::compress {
namespace {


constexpr int kMaxWindowLog = 31;        // ZSTD_WINDOWLOG_MAX on 64-bit hosts
// Input handed to the compressor (and released behind it) at a time: what
// stays in memory is zstd's window and this much.
constexpr std::uint64_t kPiece = 8u << 20;
constexpr int kLdmDefaultWindowLog = 27;  // zstd's ZSTD_LDM_DEFAULT_WINDOW_LOG

int ceil_log2(std::uint64_t v) {
  int log = 0;
  while (log < 63 && (std::uint64_t{1} << log) < v) ++log;
  return log;
}

// A truncated MD5 computed on a thread of its own from the pieces handed to
// it, in order, while the caller goes on with the same bytes (compressing or
// decompressing them). add(): the piece itself, which stays readable until
// finish(); add_copy(): a copy (a decoder's buffer, about to be reused), at
// most kMaxCopies waiting (add_copy blocks beyond that). With `beside` false
// each piece is hashed at once on the caller's thread. Destroyed unfinished
// (an error on the way), the hash stops where it is.
class Md5Beside {
 public:
  explicit Md5Beside(bool beside) {
    if (beside) worker_ = std::thread([this] { run(); });
  }
  Md5Beside(const Md5Beside&) = delete;
  Md5Beside& operator=(const Md5Beside&) = delete;
  ~Md5Beside() { stop(true); }

  void add(Bytes piece) {
    if (!worker_.joinable()) {
      md5_.update(piece);
      hashed_.store(hashed_.load(std::memory_order_relaxed) + piece.size(), std::memory_order_release);
      return;
    }
    std::lock_guard lock(mutex_);
    queue_.push_back({piece, {}, false});
    changed_.notify_all();
  }

  void add_copy(Bytes piece) {
    if (!worker_.joinable()) return add(piece);
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return copies_ < kMaxCopies; });
    ++copies_;
    // Buffers are recycled: a fresh large allocation would cost a page fault
    // per 4 KiB every time.
    std::vector<std::byte> copy;
    if (!free_.empty()) {
      copy = std::move(free_.back());
      free_.pop_back();
    }
    lock.unlock();
    copy.assign(piece.begin(), piece.end());
    lock.lock();
    Bytes view(copy.data(), copy.size());  // moving the vector keeps its storage
    queue_.push_back({view, std::move(copy), true});
    changed_.notify_all();
  }

  // The number of leading bytes hashed so far.
  std::uint64_t hashed() const { return hashed_.load(std::memory_order_acquire); }

  // Wait until the first n bytes handed over are hashed.
  void wait_hashed(std::uint64_t n) {
    if (!worker_.joinable()) return;
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return hashed() >= n || abandoned_; });
  }

  std::uint64_t finish() {
    stop(false);
    return md5_.truncated();
  }

 private:
  static constexpr std::size_t kMaxCopies = 8;
  static constexpr std::size_t kStep = 1u << 20;  // hashed() moves on in steps of this

  struct Piece {
    Bytes bytes;
    std::vector<std::byte> owned;
    bool copied = false;
  };

  void run() {
    for (;;) {
      Piece p;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return !queue_.empty() || closed_; });
        if (queue_.empty() || abandoned_) return;
        p = std::move(queue_.front());
        queue_.pop_front();
      }
      for (std::size_t off = 0; off < p.bytes.size(); off += kStep) {
        if (abandoned_.load(std::memory_order_relaxed)) return;
        const std::size_t n = std::min(kStep, p.bytes.size() - off);
        md5_.update(p.bytes.subspan(off, n));
        {
          std::lock_guard lock(mutex_);  // wait_hashed() checks and sleeps under it
          hashed_.fetch_add(n, std::memory_order_release);
        }
        changed_.notify_all();
      }
      if (p.copied) {
        std::lock_guard lock(mutex_);
        --copies_;
        free_.push_back(std::move(p.owned));
        changed_.notify_all();
      }
    }
  }

  void stop(bool abandon) {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
      if (abandon) abandoned_ = true;
      changed_.notify_all();
    }
    if (worker_.joinable()) worker_.join();
  }

  Md5 md5_;
  std::atomic<std::uint64_t> hashed_{0};
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Piece> queue_;
  std::vector<std::vector<std::byte>> free_;
  std::size_t copies_ = 0;
  bool closed_ = false;
  std::atomic<bool> abandoned_{false};
  std::thread worker_;  // last: started once everything it uses is there
};

}  // namespace

int auto_window_log(Bytes bundle, const codec::Params& params) {
  if (params.method != codec::Method::Zstd || bundle.empty()) return 0;
  // The farthest distance a match to the previous entry needs: from each
  // entry's start back to the previous entry's start, with an eighth more for
  // code that moved within the entry.
  std::uint64_t reach = bundle.size();
  if (formats::has_binary_bundle_magic(bundle)) {
    std::vector<formats::BundleEntry> entries = formats::read_binary_bundle(bundle, "");
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.offset < b.offset; });
    reach = 0;
    for (std::size_t i = 1; i < entries.size(); ++i)
      reach = std::max(reach, entries[i].offset - entries[i - 1].offset + entries[i].size / 8);
    reach = std::min<std::uint64_t>(reach, bundle.size());
  }
  // The library's own window for these parameters and this size (what LLVM gets).
  ZSTD_compressionParameters cp = ZSTD_getCParams(params.level, bundle.size(), 0);
  int library = static_cast<int>(cp.windowLog);
  if (params.long_distance) library = std::min(kLdmDefaultWindowLog, std::max(ceil_log2(bundle.size()), 10));
  int wanted = std::min(ceil_log2(reach), kMaxWindowLog);
  return wanted > library ? wanted : 0;
}

formats::CcobHeader compress_ccob(Bytes plain, const CcobOptions& options, const std::string& file,
                                  const codec::Sink& sink, const std::function<void(std::uint64_t)>& consumed) {
  if (options.version < 1 || options.version > 3)
    fail(file, "cannot write compressed bundle version {} (1, 2 or 3)", options.version);
  if (options.version < 3 && plain.size() > 0xffffffffu)
    fail(file, "bundle of 0x{:x} bytes exceeds the 4 GiB limit of compressed bundle version {} (use version 3)",
         plain.size(), options.version);
  codec::Params params = options.params;
  if (options.auto_window && params.window_log == 0) params.window_log = auto_window_log(plain, params);
  std::uint64_t compressed_size = 0;
  auto counted = [&](Bytes b) {
    compressed_size += b.size();
    sink(b);
  };
  // LLVM's bytes (one ZSTD_compress2 call over the whole bundle) come from a
  // stable input, read in place up to a window back; with threads or a window
  // of our own the bytes are ours anyway and zstd buffers the input, as
  // deflate does. Either way the output streams, and input the compressor and
  // the hash are done with is handed back for release.
  // The hash gets each piece as the compressor does: running ahead of it (MD5
  // is faster than zstd on most data) it would bring the whole input into
  // memory. Where it is the slower one, the compressor waits for it once it
  // is more than a window and a piece behind, so that what it has yet to read
  // stays bounded too.
  const bool in_place = params.method == codec::Method::Zstd && params.threads == 0 && params.window_log == 0;
  Md5Beside md5(options.hash_beside);
  try {
    codec::Compressor c(params, plain.size(), counted, in_place ? codec::Compressor::Input::Stable : codec::Compressor::Input::Buffered);
    const std::uint64_t keep = in_place ? c.window_size() : 0;  // read again by zstd
    for (std::uint64_t off = 0; off < plain.size(); off += kPiece) {
      md5.wait_hashed(off > keep + kPiece ? off - keep - kPiece : 0);
      const Bytes piece = plain.subspan(off, std::min<std::uint64_t>(kPiece, plain.size() - off));
      md5.add(piece);
      c.write(piece);
      const std::uint64_t end = off + piece.size();
      if (consumed) consumed(std::min(end > keep ? end - keep : 0, md5.hashed()));
    }
    c.finish();
  } catch (const Error& e) {
    if (!e.file().empty()) throw;  // the sink's own error
    fail(file, "{}", e.message());
  }
  formats::CcobHeader h;
  h.version = options.version;
  h.method = params.method;
  h.header_size = formats::ccob_header_size(h.version);
  if (h.version >= 2) h.total_size = h.header_size + compressed_size;  // v1 records none
  h.uncompressed_size = plain.size();
  h.hash = md5.finish();
  if (h.version == 2 && *h.total_size > 0xffffffffu)
    fail(file, "compressed bundle of 0x{:x} bytes exceeds the 4 GiB limit of version 2 (use version 3)",
         *h.total_size);
  return h;
}

std::vector<std::byte> make_ccob(Bytes plain, const CcobOptions& options, const std::string& file) {
  std::vector<std::byte> out(formats::ccob_header_size(options.version));
  formats::CcobHeader h =
      compress_ccob(plain, options, file, [&](Bytes b) { out.insert(out.end(), b.begin(), b.end()); });
  std::vector<std::byte> header = formats::write_ccob_header(h);
  std::copy(header.begin(), header.end(), out.begin());
  return out;
}

std::optional<StreamInfo> stream_info(codec::Method method, Bytes compressed) {
  StreamInfo info;
  if (method == codec::Method::Zlib) {
    // RFC 1950: CMF = CM (8 = deflate) | CINFO << 4, window = 2^(CINFO + 8).
    if (compressed.size() < 2) return std::nullopt;
    auto cmf = static_cast<unsigned>(compressed[0]), flg = static_cast<unsigned>(compressed[1]);
    if ((cmf & 0xf) != 8 || (cmf >> 4) > 7 || (cmf * 256 + flg) % 31 != 0) return std::nullopt;
    info.window_log = static_cast<int>(cmf >> 4) + 8;
    return info;
  }
  ZSTD_frameHeader fh;
  if (ZSTD_getFrameHeader(&fh, compressed.data(), compressed.size()) != 0 || fh.frameType != ZSTD_frame)
    return std::nullopt;
  info.window_log = ceil_log2(fh.windowSize);
  if (fh.frameContentSize != ZSTD_CONTENTSIZE_UNKNOWN) info.content_size = fh.frameContentSize;
  return info;
}

namespace {

// The header of the CCOB at the start of `data`, its data decoded by
// `decode(payload, md5, consumed)` (md5: null when not hashing), decoding
// errors named by file and offset.
template <typename Decode>
DecodedCcob decode_with(Bytes data, const std::string& file, std::uint64_t base, bool hash,
                        const std::function<void(std::uint64_t)>& consumed, Decode&& decode) {
  DecodedCcob d;
  d.header = rebase_errors(base, [&] { return formats::read_ccob_header(data, file); });
  Bytes payload = formats::ccob_payload(data, d.header);
  d.compressed_size = payload.size();
  std::optional<Md5Beside> md5;
  if (hash) md5.emplace(true);
  try {
    decode(d.header, payload, md5 ? &*md5 : nullptr, [&](std::uint64_t n) {
      if (consumed) consumed(d.header.header_size + n);
    });
  } catch (const Error& e) {
    if (!e.file().empty()) throw;  // the sink's own error (an output that cannot be written)
    fail_at({file, base + d.header.header_size}, "{} data of 0x{:x} bytes does not decompress to 0x{:x} bytes: {}",
            codec::method_name(d.header.method), payload.size(), d.header.uncompressed_size, e.message());
  }
  if (md5) d.recomputed_hash = md5->finish();
  return d;
}

}  // namespace

DecodedCcob decode_ccob(Bytes data, const std::string& file, std::uint64_t base, const codec::Sink& sink, bool hash,
                        const std::function<void(std::uint64_t)>& consumed) {
  return decode_with(data, file, base, hash, consumed, [&](const formats::CcobHeader& h, Bytes payload, Md5Beside* md5,
                                                           const std::function<void(std::uint64_t)>& used) {
    codec::decompress_stream(
        h.method, payload, h.uncompressed_size,
        [&](Bytes b) {
          if (md5) md5->add_copy(b);
          sink(b);
        },
        used);
  });
}

DecodedCcob decode_ccob_to(OutputFile& target, Bytes data, const std::string& file, std::uint64_t base, bool hash,
                           const std::function<void(std::uint64_t)>& consumed) {
  return decode_with(data, file, base, hash, consumed, [&](const formats::CcobHeader& h, Bytes payload, Md5Beside* md5,
                                                           const std::function<void(std::uint64_t)>& used) {
    codec::decompress_to(
        target, h.method, payload, h.uncompressed_size,
        [&](Bytes b) {
          if (md5) md5->add_copy(b);
        },
        used);
  });
}

Error hash_mismatch_error(const DecodedCcob& d, const std::string& file, std::uint64_t base) {
  std::uint64_t hash_field = d.header.header_size - 8;
  return Error({file, base + hash_field},
               fmt::format("stored hash 0x{:016x} does not match the decompressed bundle's 0x{:016x}", d.header.hash,
                           d.recomputed_hash.value_or(0)));
}

bool may_hold_bundle(const formats::CcobHeader& h, Bytes payload) {
  constexpr std::size_t kSniff = 64 << 10;
  std::vector<std::byte> head = codec::decompress_head(h.method, payload, h.uncompressed_size, kSniff);
  if (head.size() < std::min<std::uint64_t>(h.uncompressed_size, kSniff)) return true;
  return formats::has_binary_bundle_magic(head) || formats::find_text_comment(head).has_value();
}

}  // namespace ot::compress

namespace ot::compress {

CcobPrefix::CcobPrefix(const formats::CcobHeader& h, Bytes payload, bool complete, std::string file, std::uint64_t at,
                       std::uint64_t max_prefix)
    : h_(h), payload_(payload), complete_(complete), file_(std::move(file)), at_(at), max_prefix_(max_prefix) {
  // The codec's bound on the declared size, from the whole compressed size
  // where it is known (the header's), not from the part at hand.
  const std::uint64_t compressed = h.total_size ? *h.total_size - h.header_size : payload.size();
  if ((complete || h.total_size) && h.uncompressed_size > codec::max_decompressed_size(h.method, compressed))
    fail_at({file_, at_}, "cannot decompress the compressed bundle: declared uncompressed size 0x{:x} is more than "
            "0x{:x} compressed bytes can hold", h.uncompressed_size, compressed);
}

Bytes CcobPrefix::head(std::uint64_t n) {
  n = std::min(n, h_.uncompressed_size);
  if (n <= prefix_.size()) return Bytes(prefix_).first(n);
  if (n > max_prefix_)
    fail_at({file_, at_}, "reading the compressed bundle's table takes more than 0x{:x} decompressed bytes (the limit)",
            max_prefix_);
  const std::uint64_t want =
      std::min({h_.uncompressed_size, max_prefix_, std::max<std::uint64_t>({n, 2 * prefix_.size(), 64 << 10})});
  // What part of the compressed data can decode to at most.
  const std::uint64_t size =
      complete_ ? h_.uncompressed_size : std::min(h_.uncompressed_size, codec::max_decompressed_size(h_.method, payload_.size()));
  try {
    prefix_ = codec::decompress_head(h_.method, payload_, size, static_cast<std::size_t>(want));
  } catch (const Error& e) {
    fail_at({file_, at_}, "cannot decompress the compressed bundle: {}", e.message());
  }
  if (prefix_.size() < n) {
    if (!complete_) throw ShortPrefix{};
    fail_at({file_, at_}, "cannot decompress the compressed bundle: the data ends after 0x{:x} of 0x{:x} bytes",
            prefix_.size(), h_.uncompressed_size);
  }
  return Bytes(prefix_).first(n);
}

ByteSource CcobPrefix::source() {
  return ByteSource::unmapped(h_.uncompressed_size, [this](std::uint64_t off, std::byte* to, std::uint64_t len) {
    std::memcpy(to, head(off + len).data() + off, len);
  });
}

std::optional<std::vector<formats::BundleEntry>> ccob_bundle_entries(Bytes data, const std::string& file) {
  // The header itself may not be all there yet (an unknown version: the largest).
  if (data.size() < 6 || data.size() < formats::ccob_header_size(load_le<std::uint16_t>(data.data() + 4))) {
    if (data.size() >= formats::kCcobMagic.size() && !formats::has_ccob_magic(data))
      formats::read_ccob_header(data, file);  // throws: no magic
    return std::nullopt;
  }
  const formats::CcobHeader h = formats::read_ccob_header(data, std::numeric_limits<std::uint64_t>::max(), file);
  const bool complete = h.total_size && data.size() >= *h.total_size;
  const std::uint64_t end = h.total_size ? std::min<std::uint64_t>(*h.total_size, data.size()) : data.size();
  CcobPrefix prefix(h, data.subspan(h.header_size, end - h.header_size), complete, file, h.header_size);
  try {
    if (!formats::has_binary_bundle_magic(prefix.head(formats::kBundleMagic.size())))
      fail_at({file, h.header_size}, "the compressed bundle holds no binary bundle");
    return formats::read_binary_bundle(prefix.source(), file + " (decompressed)");
  } catch (const CcobPrefix::ShortPrefix&) {
    return std::nullopt;
  }
}

}  // namespace ot::compress
