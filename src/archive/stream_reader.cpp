#include "archive/stream_reader.h"

#include <archive.h>
#include <archive_entry.h>
#include <lzma.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <vector>

namespace ot::archive {

namespace {

// What the lean static libarchive has, and nothing more.
void support_what_we_read(::archive* a) {
  archive_read_support_filter_gzip(a);
  archive_read_support_filter_bzip2(a);
  archive_read_support_filter_xz(a);
  archive_read_support_filter_zstd(a);
  archive_read_support_filter_rpm(a);
  archive_read_support_format_tar(a);
  archive_read_support_format_zip(a);
  archive_read_support_format_cpio(a);
}

bool has_xz_magic(Bytes p) {
  static constexpr std::string_view kXz{"\xfd" "7zXZ\0", 6};
  return p.size() >= kXz.size() && as_chars(p.first(kXz.size())) == kXz;
}

}  // namespace

bool has_compression_magic(Bytes p) {
  auto starts = [&](std::string_view m) { return p.size() >= m.size() && as_chars(p.first(m.size())) == m; };
  return starts("\x1f\x8b") || has_xz_magic(p) || starts("\x28\xb5\x2f\xfd") || starts("BZh");
}

bool is_compressed_file_only(Bytes data) {
  if (!has_compression_magic(data)) return false;
  ::archive* a = archive_read_new();
  if (!a) return false;  // the reader then says it cannot start
  support_what_we_read(a);
  // libarchive 3.6.2's words when no format bids for the decompressed bytes
  // (archive_read.c, choose_format).
  bool only = archive_read_open_memory(a, const_cast<std::byte*>(data.data()), data.size()) != ARCHIVE_OK &&
              archive_errno(a) == EILSEQ /* its ARCHIVE_ERRNO_FILE_FORMAT */ && archive_error_string(a) &&
              std::strcmp(archive_error_string(a), "Unrecognized archive format") == 0;
  archive_read_free(a);
  return only;
}

bool has_stream_archive_magic(Bytes p) {
  auto starts = [&](std::string_view m) { return p.size() >= m.size() && as_chars(p.first(m.size())) == m; };
  if (has_compression_magic(p)) return true;
  if (starts("PK\x03\x04") || starts("\xed\xab\xee\xdb")) return true;      // zip, rpm lead
  if (starts("070701") || starts("070702") || starts("070707")) return true;  // cpio newc, crc, odc
  if (starts("\xc7\x71") || starts("\x71\xc7")) return true;                // cpio binary
  return p.size() >= 262 && as_chars(p.subspan(257, 5)) == "ustar";
}

// An xz stream decoded by liblzma's threaded decoder, handed to libarchive
// as the bytes of an archive that is not compressed.
struct StreamReader::XzFeed {
  lzma_stream s = LZMA_STREAM_INIT;
  std::vector<std::byte> out = std::vector<std::byte>(1 << 20);
  bool done = false;

  ~XzFeed() { lzma_end(&s); }

  static const char* what(lzma_ret r) {
    switch (r) {
      case LZMA_MEM_ERROR: return "out of memory";
      case LZMA_FORMAT_ERROR: return "not an xz stream";
      case LZMA_OPTIONS_ERROR: return "unsupported xz options";
      case LZMA_DATA_ERROR: return "corrupt xz data";
      case LZMA_BUF_ERROR: return "the xz data ends early";
      case LZMA_UNSUPPORTED_CHECK: return "unsupported xz integrity check";
      default: return "xz decoder error";
    }
  }

  static la_ssize_t read(::archive* a, void* self, const void** buf) {
    XzFeed& f = *static_cast<XzFeed*>(self);
    if (f.done) return 0;
    f.s.next_out = reinterpret_cast<std::uint8_t*>(f.out.data());
    f.s.avail_out = f.out.size();
    while (f.s.avail_out == f.out.size()) {  // until some bytes come out (the threads may need more input first)
      lzma_ret r = lzma_code(&f.s, LZMA_FINISH);  // all of the input is given from the start
      if (r == LZMA_STREAM_END) {
        f.done = true;
        break;
      }
      if (r != LZMA_OK) {
        archive_set_error(a, EILSEQ, "xz: %s", what(r));
        return ARCHIVE_FATAL;
      }
    }
    *buf = f.out.data();
    return static_cast<la_ssize_t>(f.out.size() - f.s.avail_out);
  }
};

StreamReader::StreamReader(Bytes data, std::string file, unsigned threads)
    : a_(archive_read_new()), file_(std::move(file)) {
  if (!a_) fail(file_, "cannot start libarchive: out of memory");
  support_what_we_read(a_);
  int opened;
  if (threads > 1 && has_xz_magic(data)) {
    xz_ = std::make_unique<XzFeed>();
    lzma_mt mt{};
    mt.flags = LZMA_CONCATENATED;  // as libarchive's own xz filter reads: streams one after another
    mt.threads = threads;
    // Memory stays bounded: a block that would take a thread more than 64 MiB
    // (a hostile header may declare any size) is decoded by the calling
    // thread as it streams, as the single-threaded decoder does.
    mt.memlimit_threading = std::uint64_t{threads} << 26;
    mt.memlimit_stop = UINT64_MAX;
    lzma_ret r = lzma_stream_decoder_mt(&xz_->s, &mt);
    if (r != LZMA_OK) {
      archive_read_free(a_);
      fail(file_, "cannot start the threaded xz decoder: {}", XzFeed::what(r));
    }
    xz_->s.next_in = reinterpret_cast<const std::uint8_t*>(data.data());
    xz_->s.avail_in = data.size();
    opened = archive_read_open(a_, xz_.get(), nullptr, &XzFeed::read, nullptr);
  } else {
    // open_memory takes a non-const pointer but only reads.
    opened = archive_read_open_memory(a_, const_cast<std::byte*>(data.data()), data.size());
  }
  if (opened != ARCHIVE_OK) {
    try {
      fail_here("cannot open the archive");
    } catch (...) {
      archive_read_free(a_);  // the destructor does not run for a constructor that throws
      throw;
    }
  }
}

StreamReader::~StreamReader() { archive_read_free(a_); }

void StreamReader::fail_here(const char* what) const {
  // libarchive ends some messages with a newline ("ZIP uncompressed data is
  // wrong size (read 100000, expected 100)\n"): an error is one line.
  std::string_view why = archive_error_string(a_) ? archive_error_string(a_) : "";
  while (!why.empty() && std::isspace(static_cast<unsigned char>(why.back()))) why.remove_suffix(1);
  // bytes of the (compressed) input consumed so far
  la_int64_t at = xz_ ? static_cast<la_int64_t>(xz_->s.total_in) : archive_filter_bytes(a_, -1);
  std::string msg = !why.empty() ? fmt::format("{}: {}", what, why) : std::string(what);
  if (at >= 0)
    fail_at({file_, static_cast<std::uint64_t>(at)}, "{}", msg);
  fail(file_, "{}", msg);
}

std::optional<StreamReader::Header> StreamReader::next() {
  archive_entry* e = nullptr;
  int r = archive_read_next_header(a_, &e);
  if (r == ARCHIVE_EOF) return std::nullopt;
  if (r < ARCHIVE_WARN) fail_here("malformed archive member header");
  entry_ = e;
  Header h;
  const char* name = archive_entry_pathname(e);
  h.name = name ? name : "";
  h.regular = archive_entry_filetype(e) == AE_IFREG;
  if (const char* link = archive_entry_hardlink(e)) h.hardlink = link;
  if (archive_entry_size_is_set(e) && archive_entry_size(e) >= 0)
    h.size = static_cast<std::uint64_t>(archive_entry_size(e));
  return h;
}

std::size_t StreamReader::read(std::span<std::byte> buf) {
  la_ssize_t n = archive_read_data(a_, buf.data(), buf.size());
  if (n < 0) fail_here("cannot read the archive member");
  return static_cast<std::size_t>(n);
}

std::uint64_t StreamReader::consumed() const {
  if (xz_) return xz_->s.total_in;
  la_int64_t n = archive_filter_bytes(a_, -1);
  return n > 0 ? static_cast<std::uint64_t>(n) : 0;
}

int StreamReader::format_code() const { return archive_format(a_); }

std::optional<Compression> StreamReader::compression() const {
  if (xz_) return Compression::Xz;
  std::optional<Compression> found = Compression::None;
  for (int i = 0, n = archive_filter_count(a_); i < n; ++i) {
    Compression c;
    switch (archive_filter_code(a_, i)) {
      case ARCHIVE_FILTER_NONE: continue;
      case ARCHIVE_FILTER_GZIP: c = Compression::Gzip; break;
      case ARCHIVE_FILTER_BZIP2: c = Compression::Bzip2; break;
      case ARCHIVE_FILTER_XZ: c = Compression::Xz; break;
      case ARCHIVE_FILTER_ZSTD: c = Compression::Zstd; break;
      default: return std::nullopt;
    }
    if (found != Compression::None) return std::nullopt;
    found = c;
  }
  return found;
}

std::string StreamReader::format_name() const {
  const char* f = archive_format_name(a_);
  return f ? f : "archive";
}

}  // namespace ot::archive
