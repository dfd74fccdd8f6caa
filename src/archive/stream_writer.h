// Writing tar (GNU, pax, ustar) and zip archives through libarchive, plain or
// compressed with gzip, bzip2, xz or zstd, in one streaming pass to a sink:
// the writing half of archive/stream_reader, for rewriting packages member by
// member (prune/package). Only the writers the lean static libarchive has are
// used (docs/install.md).
//
// Deterministic: every header field comes from the entries given (a reader's,
// as read), none from the clock or the process -- the gzip header's mtime is
// 0 (libarchive's "!timestamp"), pax extended headers are named
// "<dir>/PaxHeader/<name>" (libarchive 3.6.2 leaves the pid out), zip extra
// fields carry the entry's own times and owner; xz is written by liblzma's
// multi-threaded encoder, whose output does not depend on the thread count.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>

#include "archive/stream_reader.h"
#include "support/bytes.h"

struct archive;
struct archive_entry;

namespace ot::archive {

struct WriteSpec {
  // libarchive's ARCHIVE_FORMAT_* (StreamReader::format_code): the tar
  // variants ARCHIVE_FORMAT_TAR_GNUTAR, _PAX_INTERCHANGE, _PAX_RESTRICTED,
  // _USTAR (plain ARCHIVE_FORMAT_TAR is written as ustar), or ARCHIVE_FORMAT_ZIP.
  int format = 0;
  Compression compression = Compression::None;
  int level = 0;            // the filter's compression level; 0: libarchive's default
  unsigned xz_threads = 2;  // at least 2 (the single-threaded encoder writes other bytes)
};

// The format a copy of an archive that StreamReader::format_code() calls
// `read` is written in; 0 when StreamWriter writes none for it. A tar read as
// ustar is written as pax: libarchive's reader calls a pax archive ustar until
// its first extended header, and its pax writer writes the same ustar header
// where an entry needs no extension.
int copy_format(int read);
bool is_zip_format(int code);

// A copy of a reader's entry, kept past the reader's next member; freed by free_entry.
::archive_entry* clone_entry(const ::archive_entry* entry);
void free_entry(::archive_entry* entry);

class StreamWriter {
 public:
  // Errors name `file`.
  StreamWriter(const WriteSpec& spec, std::function<void(Bytes)> sink, std::string file);
  ~StreamWriter();
  StreamWriter(const StreamWriter&) = delete;
  StreamWriter& operator=(const StreamWriter&) = delete;

  // Starts a member with `entry`'s metadata (name, type, owner, mode, times,
  // link target) holding `size` bytes (a regular file's; ignored for others).
  // `stored`: a zip member is written uncompressed (else deflated).
  void header(const ::archive_entry* entry, std::uint64_t size, bool stored = false);
  // Starts a member of its own (one the input lacks: split's archives):
  // `name`, a regular file of `size` bytes (a directory when `directory`),
  // permission bits `perm`, with the owner and times of `like` (a reader's
  // entry); no link target, extended attributes, ACLs or sparse map.
  void new_header(const ::archive_entry* like, const std::string& name, bool directory, unsigned perm,
                  std::uint64_t size, bool stored = false);
  // The current member's bytes, in order; they must add up to its size.
  void data(Bytes b);
  // Ends the archive (and the compressed stream).
  void finish();
  // Whether the archive is a zip.
  bool zip() const { return zip_; }
  // Bytes handed to the sink so far.
  std::uint64_t written() const { return written_; }

 private:
  [[noreturn]] void fail_here(const char* what);
  struct Callbacks;  // libarchive's write callback

  ::archive* a_ = nullptr;
  std::function<void(Bytes)> sink_;
  std::string file_;
  bool zip_ = false;
  std::uint64_t written_ = 0;
  std::exception_ptr sink_error_;  // what the sink threw, rethrown once libarchive has returned
};

}  // namespace ot::archive
