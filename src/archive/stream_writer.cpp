#include "archive/stream_writer.h"

#include <archive.h>
#include <archive_entry.h>

#include <cctype>

#include "support/error.h"

namespace ot::archive {

int copy_format(int read) {
  switch (read) {
    case ARCHIVE_FORMAT_TAR_USTAR: return ARCHIVE_FORMAT_TAR_PAX_INTERCHANGE;
    case ARCHIVE_FORMAT_TAR_PAX_INTERCHANGE:
    case ARCHIVE_FORMAT_TAR_PAX_RESTRICTED:
    case ARCHIVE_FORMAT_TAR_GNUTAR:
      return read;
    default:
      return (read & ARCHIVE_FORMAT_BASE_MASK) == ARCHIVE_FORMAT_ZIP ? ARCHIVE_FORMAT_ZIP : 0;
  }
}

bool is_zip_format(int code) { return (code & ARCHIVE_FORMAT_BASE_MASK) == ARCHIVE_FORMAT_ZIP; }

struct StreamWriter::Callbacks {
  static la_ssize_t write(::archive*, void* self, const void* buf, std::size_t n) {
    StreamWriter& w = *static_cast<StreamWriter*>(self);
    try {
      w.sink_(Bytes(static_cast<const std::byte*>(buf), n));
    } catch (...) {
      // Never through libarchive's C frames: kept, and rethrown once it has returned.
      w.sink_error_ = std::current_exception();
      return -1;
    }
    w.written_ += n;
    return static_cast<la_ssize_t>(n);
  }
};

StreamWriter::StreamWriter(const WriteSpec& spec, std::function<void(Bytes)> sink, std::string file)
    : a_(archive_write_new()), sink_(std::move(sink)), file_(std::move(file)) {
  if (!a_) fail(file_, "cannot start libarchive's writer: out of memory");
  try {
    int r = ARCHIVE_FATAL;
    switch (spec.format) {
      case ARCHIVE_FORMAT_TAR:
      case ARCHIVE_FORMAT_TAR_USTAR: r = archive_write_set_format_ustar(a_); break;
      case ARCHIVE_FORMAT_TAR_PAX_INTERCHANGE: r = archive_write_set_format_pax(a_); break;
      case ARCHIVE_FORMAT_TAR_PAX_RESTRICTED: r = archive_write_set_format_pax_restricted(a_); break;
      case ARCHIVE_FORMAT_TAR_GNUTAR: r = archive_write_set_format_gnutar(a_); break;
      case ARCHIVE_FORMAT_ZIP: r = archive_write_set_format_zip(a_); zip_ = true; break;
      default: fail(file_, "cannot write archives of libarchive's format 0x{:x}", spec.format);
    }
    if (r != ARCHIVE_OK) fail_here("cannot set the archive format");
    const char* filter = nullptr;
    switch (spec.compression) {
      case Compression::None: r = ARCHIVE_OK; break;
      case Compression::Gzip: r = archive_write_add_filter_gzip(a_); filter = "gzip"; break;
      case Compression::Bzip2: r = archive_write_add_filter_bzip2(a_); filter = "bzip2"; break;
      case Compression::Xz: r = archive_write_add_filter_xz(a_); filter = "xz"; break;
      case Compression::Zstd: r = archive_write_add_filter_zstd(a_); filter = "zstd"; break;
    }
    if (r != ARCHIVE_OK) fail_here("cannot add the compression filter");
    // No clock in the output: the gzip header's mtime is 0, as `gzip -n` writes it.
    if (spec.compression == Compression::Gzip &&
        archive_write_set_filter_option(a_, "gzip", "timestamp", nullptr) != ARCHIVE_OK)
      fail_here("cannot leave the gzip timestamp out");
    const std::string level = std::to_string(spec.level), threads = std::to_string(std::max(2u, spec.xz_threads));
    if (filter && spec.level > 0 &&
        archive_write_set_filter_option(a_, filter, "compression-level", level.c_str()) != ARCHIVE_OK)
      fail_here("cannot set the compression level");
    if (spec.compression == Compression::Xz &&
        archive_write_set_filter_option(a_, "xz", "threads", threads.c_str()) != ARCHIVE_OK)
      fail_here("cannot start the threaded xz encoder");
    // A compressed stream or a zip ends where its data ends (libarchive would
    // pad the last block with zeros, which gzip -t reports as trailing garbage);
    // a plain tar is padded to whole 10 KiB records, as GNU tar writes it.
    if (spec.compression != Compression::None || zip_) archive_write_set_bytes_in_last_block(a_, 1);
    if (archive_write_open(a_, this, nullptr, &Callbacks::write, nullptr) != ARCHIVE_OK)
      fail_here("cannot start writing the archive");
  } catch (...) {
    archive_write_free(a_);  // the destructor does not run for a constructor that throws
    throw;
  }
}

StreamWriter::~StreamWriter() {
  // An archive given up on (an error elsewhere): nothing more to the sink.
  // Marked failed first, so that closing it does not finish the member being
  // written (padding it to its declared size through the compressor: a bomb
  // refused at 1 GiB of a declared 8 GiB deflated 7 GiB more for nothing);
  // then closed, which in that state only ends the archive and the filters
  // (their compressors' memory: free() alone does not release it).
  if (a_) {
    sink_ = [](Bytes) {};
    archive_write_fail(a_);
    archive_write_close(a_);
    archive_write_free(a_);
  }
}

void StreamWriter::fail_here(const char* what) {
  if (sink_error_) std::rethrow_exception(std::exchange(sink_error_, nullptr));
  std::string_view why = archive_error_string(a_) ? archive_error_string(a_) : "";
  while (!why.empty() && std::isspace(static_cast<unsigned char>(why.back()))) why.remove_suffix(1);
  if (why.empty()) fail(file_, "{}", what);
  fail(file_, "{}: {}", what, why);
}

void StreamWriter::header(const ::archive_entry* entry, std::uint64_t size, bool stored) {
  ::archive_entry* e = archive_entry_clone(const_cast<::archive_entry*>(entry));
  if (!e) fail(file_, "out of memory");
  if (archive_entry_filetype(e) == AE_IFREG) archive_entry_set_size(e, static_cast<la_int64_t>(size));
  if (zip_) {
    if (stored)
      archive_write_zip_set_compression_store(a_);
    else
      archive_write_zip_set_compression_deflate(a_);
  }
  int r = archive_write_header(a_, e);
  archive_entry_free(e);
  if (r < ARCHIVE_WARN) fail_here("cannot write a member header");
  if (r == ARCHIVE_WARN) {
    // libarchive writes what it can and warns where the format loses
    // something (a name or owner the format cannot hold): not an honest copy.
    const char* n = archive_entry_pathname(const_cast<::archive_entry*>(entry));
    fail_here(fmt::format("member '{}' cannot be written as it was read", n ? n : "").c_str());
  }
}

::archive_entry* clone_entry(const ::archive_entry* entry) {
  ::archive_entry* e = archive_entry_clone(const_cast<::archive_entry*>(entry));
  if (!e) throw std::bad_alloc();
  return e;
}

void free_entry(::archive_entry* entry) { archive_entry_free(entry); }

void StreamWriter::new_header(const ::archive_entry* like, const std::string& name, bool directory, unsigned perm,
                              std::uint64_t size, bool stored) {
  ::archive_entry* e = archive_entry_new();
  if (!e) fail(file_, "out of memory");
  auto* l = const_cast<::archive_entry*>(like);
  archive_entry_copy_pathname(e, name.c_str());
  archive_entry_set_filetype(e, directory ? AE_IFDIR : AE_IFREG);
  archive_entry_set_perm(e, static_cast<mode_t>(perm));
  archive_entry_set_size(e, directory ? 0 : static_cast<la_int64_t>(size));
  archive_entry_set_uid(e, archive_entry_uid(l));
  archive_entry_set_gid(e, archive_entry_gid(l));
  if (const char* u = archive_entry_uname(l)) archive_entry_copy_uname(e, u);
  if (const char* g = archive_entry_gname(l)) archive_entry_copy_gname(e, g);
  if (archive_entry_mtime_is_set(l)) archive_entry_set_mtime(e, archive_entry_mtime(l), archive_entry_mtime_nsec(l));
  if (archive_entry_atime_is_set(l)) archive_entry_set_atime(e, archive_entry_atime(l), archive_entry_atime_nsec(l));
  if (archive_entry_ctime_is_set(l)) archive_entry_set_ctime(e, archive_entry_ctime(l), archive_entry_ctime_nsec(l));
  try {
    header(e, size, stored);
  } catch (...) {
    archive_entry_free(e);
    throw;
  }
  archive_entry_free(e);
}

void StreamWriter::data(Bytes b) {
  while (!b.empty()) {
    la_ssize_t n = archive_write_data(a_, b.data(), b.size());
    if (n <= 0) fail_here("cannot write a member's data");
    b = b.subspan(static_cast<std::size_t>(n));
  }
}

void StreamWriter::finish() {
  if (archive_write_close(a_) != ARCHIVE_OK) fail_here("cannot finish the archive");
  archive_write_free(a_);
  a_ = nullptr;
}

}  // namespace ot::archive
