#include "compress/ccob.h"

// ZSTD_getCParams and ZSTD_getFrameHeader: stable in practice, exported by
// libzstd.so, but declared in zstd's "static linking only" section.
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "formats/bundle_binary.h"
#include "formats/bundle_text.h"
#include "support/md5.h"

namespace ot::compress {
namespace {

// How far the compressor may run ahead of the hasher where the input is released as it goes.
constexpr std::uint64_t kAhead = 32u << 20;

constexpr int kMaxWindowLog = 31;        // ZSTD_WINDOWLOG_MAX on 64-bit hosts
constexpr std::uint64_t kPiece = 64u << 20;  // input handed over (and released) at a time
constexpr int kLdmDefaultWindowLog = 27;  // zstd's ZSTD_LDM_DEFAULT_WINDOW_LOG

int ceil_log2(std::uint64_t v) {
  int log = 0;
  while (log < 63 && (std::uint64_t{1} << log) < v) ++log;
  return log;
}

// The truncated MD5 of `data`, computed on another thread while `work` runs on
// this one (the hash of a large bundle costs about as much as compressing it).
// `work` is given the number of leading bytes hashed so far.
template <typename Work>
std::uint64_t md5_beside(Bytes data, Work&& work) {
  std::uint64_t hash = 0;
  std::atomic<std::uint64_t> hashed{0};
  std::exception_ptr hash_error;
  std::thread hasher([&] {
    try {
      Md5 md5;
      for (std::uint64_t off = 0; off < data.size(); off += kPiece) {
        std::uint64_t n = std::min<std::uint64_t>(kPiece, data.size() - off);
        md5.update(data.subspan(off, n));
        hashed.store(off + n, std::memory_order_release);
      }
      hash = md5.truncated();
    } catch (...) {
      hash_error = std::current_exception();
    }
  });
  try {
    work(hashed);
  } catch (...) {
    hasher.join();
    throw;
  }
  hasher.join();
  if (hash_error) std::rethrow_exception(hash_error);
  return hash;
}

// A truncated MD5 computed on its own thread from copies of the pieces handed
// to update(), so that hashing a decompressed bundle overlaps decompressing
// and writing it. At most kMaxQueued pieces wait; update() blocks beyond that.
class Md5Pipeline {
 public:
  Md5Pipeline() : worker_([this] { run(); }) {}
  Md5Pipeline(const Md5Pipeline&) = delete;
  Md5Pipeline& operator=(const Md5Pipeline&) = delete;
  ~Md5Pipeline() { stop(); }

  void update(Bytes data) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return queue_.size() < kMaxQueued; });
    // Buffers are recycled: a fresh large allocation would cost a page fault
    // per 4 KiB every time.
    std::vector<std::byte> piece;
    if (!free_.empty()) {
      piece = std::move(free_.back());
      free_.pop_back();
    }
    lock.unlock();
    piece.assign(data.begin(), data.end());
    lock.lock();
    queue_.push_back(std::move(piece));
    changed_.notify_all();
  }

  std::uint64_t finish() {
    stop();
    return md5_.truncated();
  }

 private:
  static constexpr std::size_t kMaxQueued = 8;

  void run() {
    for (;;) {
      std::vector<std::byte> piece;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return !queue_.empty() || closed_; });
        if (queue_.empty()) return;
        piece = std::move(queue_.front());
        queue_.pop_front();
        changed_.notify_all();
      }
      md5_.update(piece);
      std::lock_guard lock(mutex_);
      free_.push_back(std::move(piece));
    }
  }

  void stop() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
      changed_.notify_all();
    }
    if (worker_.joinable()) worker_.join();
  }

  Md5 md5_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::vector<std::byte>> queue_;
  std::vector<std::vector<std::byte>> free_;
  bool closed_ = false;
  std::thread worker_;
};

}  // namespace

int auto_window_log(Bytes bundle, const Params& params) {
  if (params.method != Method::Zstd || bundle.empty()) return 0;
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
                                  const Sink& sink, const std::function<void(std::uint64_t)>& consumed) {
  if (options.version < 1 || options.version > 3)
    fail(file, "cannot write compressed bundle version {} (1, 2 or 3)", options.version);
  if (options.version < 3 && plain.size() > 0xffffffffu)
    fail(file, "bundle of 0x{:x} bytes exceeds the 4 GiB limit of compressed bundle version {} (use version 3)",
         plain.size(), options.version);
  Params params = options.params;
  if (options.auto_window && params.window_log == 0) params.window_log = auto_window_log(plain, params);
  std::uint64_t compressed_size = 0;
  auto counted = [&](Bytes b) {
    compressed_size += b.size();
    sink(b);
  };
  std::uint64_t hash = md5_beside(plain, [&](const std::atomic<std::uint64_t>& hashed) {
    try {
      if (params.method == Method::Zlib) {
        // compress2 in one call, as LLVM; the compressed data is held here.
        counted(compress_all(params, plain));
        return;
      }
      // LLVM's bytes (one ZSTD_compress2 call over the whole bundle) come from a
      // stable input, read in place; with threads or a window of our own the
      // bytes are ours anyway and zstd buffers the input. Either way the output
      // streams, and input the compressor and the hasher are done with is
      // handed back for release.
      const bool llvm_bytes = params.threads == 0 && params.window_log == 0;
      Compressor c(params, plain.size(), counted,
                   llvm_bytes ? Compressor::Input::Stable : Compressor::Input::Buffered);
      for (std::uint64_t off = 0; off < plain.size(); off += kPiece) {
        std::uint64_t n = std::min<std::uint64_t>(kPiece, plain.size() - off);
        // Where the input is released as it goes, the compressor stays within
        // kAhead of the hasher: what lies between them stays in memory (zeros
        // compress five times faster than MD5 reads them: a pruned CCOB's
        // 1 GiB entry was 600 MB resident).
        if (consumed)
          while (off > hashed.load(std::memory_order_acquire) + kAhead)
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        c.write(plain.subspan(off, n));
        std::uint64_t behind = llvm_bytes ? (off + n > c.window_size() ? off + n - c.window_size() : 0) : off + n;
        if (consumed) consumed(std::min(behind, hashed.load(std::memory_order_acquire)));
      }
      c.finish();
      // The hasher may still be behind: what it reads is released as it goes.
      if (consumed)
        for (std::uint64_t h = hashed.load(std::memory_order_acquire); h < plain.size();
             h = hashed.load(std::memory_order_acquire)) {
          consumed(h);
          std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    } catch (const Error& e) {
      if (!e.file().empty()) throw;  // the sink's own error
      fail(file, "{}", e.message());
    }
  });
  formats::CcobHeader h;
  h.version = options.version;
  h.method = params.method;
  h.header_size = formats::ccob_header_size(h.version);
  if (h.version >= 2) h.total_size = h.header_size + compressed_size;  // v1 records none
  h.uncompressed_size = plain.size();
  h.hash = hash;
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

std::optional<StreamInfo> stream_info(Method method, Bytes compressed) {
  StreamInfo info;
  if (method == Method::Zlib) {
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
  std::optional<Md5Pipeline> md5;
  if (hash) md5.emplace();
  try {
    decode(d.header, payload, md5 ? &*md5 : nullptr, [&](std::uint64_t n) {
      if (consumed) consumed(d.header.header_size + n);
    });
  } catch (const Error& e) {
    if (!e.file().empty()) throw;  // the sink's own error (an output that cannot be written)
    fail_at({file, base + d.header.header_size}, "{} data of 0x{:x} bytes does not decompress to 0x{:x} bytes: {}",
            method_name(d.header.method), payload.size(), d.header.uncompressed_size, e.message());
  }
  if (md5) d.recomputed_hash = md5->finish();
  return d;
}

}  // namespace

DecodedCcob decode_ccob(Bytes data, const std::string& file, std::uint64_t base, const Sink& sink, bool hash,
                        const std::function<void(std::uint64_t)>& consumed) {
  return decode_with(data, file, base, hash, consumed, [&](const formats::CcobHeader& h, Bytes payload, Md5Pipeline* md5,
                                                           const std::function<void(std::uint64_t)>& used) {
    decompress_stream(
        h.method, payload, h.uncompressed_size,
        [&](Bytes b) {
          if (md5) md5->update(b);
          sink(b);
        },
        used);
  });
}

DecodedCcob decode_ccob_to(OutputFile& target, Bytes data, const std::string& file, std::uint64_t base, bool hash,
                           const std::function<void(std::uint64_t)>& consumed) {
  return decode_with(data, file, base, hash, consumed, [&](const formats::CcobHeader& h, Bytes payload, Md5Pipeline* md5,
                                                           const std::function<void(std::uint64_t)>& used) {
    decompress_to(
        target, h.method, payload, h.uncompressed_size,
        [&](Bytes b) {
          if (md5) md5->update(b);
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
  std::vector<std::byte> head = decompress_head(h.method, payload, h.uncompressed_size, kSniff);
  if (head.size() < std::min<std::uint64_t>(h.uncompressed_size, kSniff)) return true;
  return formats::has_binary_bundle_magic(head) || formats::find_text_comment(head).has_value();
}

}  // namespace ot::compress
