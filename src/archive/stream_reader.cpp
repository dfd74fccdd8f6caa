#include "archive/stream_reader.h"

#include <archive.h>
#include <archive_entry.h>

#include <cerrno>
#include <cstring>

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

}  // namespace

bool has_compression_magic(Bytes p) {
  auto starts = [&](std::string_view m) { return p.size() >= m.size() && as_chars(p.first(m.size())) == m; };
  return starts("\x1f\x8b") || starts("\xfd" "7zXZ\0") || starts("\x28\xb5\x2f\xfd") || starts("BZh");
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

StreamReader::StreamReader(Bytes data, std::string file) : a_(archive_read_new()), file_(std::move(file)) {
  if (!a_) fail(file_, "cannot start libarchive: out of memory");
  support_what_we_read(a_);
  // open_memory takes a non-const pointer but only reads.
  if (archive_read_open_memory(a_, const_cast<std::byte*>(data.data()), data.size()) != ARCHIVE_OK) {
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
  const char* why = archive_error_string(a_);
  la_int64_t at = archive_filter_bytes(a_, -1);  // bytes of the (compressed) input consumed so far
  std::string msg = why && *why ? fmt::format("{}: {}", what, why) : std::string(what);
  if (at >= 0)
    fail_at({file_, static_cast<std::uint64_t>(at)}, "{}", msg);
  fail(file_, "{}", msg);
}

std::optional<StreamReader::Header> StreamReader::next() {
  archive_entry* e = nullptr;
  int r = archive_read_next_header(a_, &e);
  if (r == ARCHIVE_EOF) return std::nullopt;
  if (r < ARCHIVE_WARN) fail_here("malformed archive member header");
  Header h;
  const char* name = archive_entry_pathname(e);
  h.name = name ? name : "";
  h.regular = archive_entry_filetype(e) == AE_IFREG;
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
  la_int64_t n = archive_filter_bytes(a_, -1);
  return n > 0 ? static_cast<std::uint64_t>(n) : 0;
}

std::string StreamReader::format_name() const {
  const char* f = archive_format_name(a_);
  return f ? f : "archive";
}

}  // namespace ot::archive
