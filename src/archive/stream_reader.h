// Reading tar (plain or gzip, bzip2, xz, zstd compressed), zip, cpio and rpm
// archives through libarchive, in one streaming pass over bytes in memory (a
// mapped file, or a range of one: a .deb's data.tar.xz member). Only the
// formats and filters the lean static libarchive has are enabled (docs/install.md).
// ar archives are archive/ar_reader's, not this.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "support/bytes.h"

struct archive;
struct archive_entry;

namespace ot::archive {

// The magic of an archive this reader opens (tar needs 263 bytes to be seen).
bool has_stream_archive_magic(Bytes prefix);

// True when `prefix` starts a gzip, xz, bzip2 or zstd stream.
bool has_compression_magic(Bytes prefix);

// True when `data` is a gzip, xz, bzip2 or zstd stream whose contents are no
// archive this reader opens: a compressed single file, as a .deb's
// changelog.Debian.gz. (libarchive's "raw" format would read it; the lean
// static libarchive has none, and nothing the walk looks for ships that way.)
bool is_compressed_file_only(Bytes data);

// The compression around an archive, as the reader found it (and as
// archive/stream_writer writes it again).
enum class Compression { None, Gzip, Bzip2, Xz, Zstd };

class StreamReader {
 public:
  // Errors name `file` and, where libarchive tells, the offset in `data`.
  // `threads` > 1: an xz stream is decoded by liblzma's threaded decoder
  // (libarchive 3.6 has none) and handed to libarchive decoded. It gains where
  // the stream has several blocks, as dpkg-deb and `xz -T` write them; each
  // thread holds a whole block (dpkg-deb's 24 MiB blocks: ~35 MB a thread).
  StreamReader(Bytes data, std::string file, unsigned threads = 1);
  ~StreamReader();
  StreamReader(const StreamReader&) = delete;
  StreamReader& operator=(const StreamReader&) = delete;

  struct Header {
    std::string name;                   // the path as stored
    bool regular = false;               // a regular file (not a directory, link, device)
    std::optional<std::uint64_t> size;  // when the archive records it
    std::string hardlink;               // a hard link's target, as stored; empty for others
  };
  // The next member, or nullopt at the end of the archive.
  std::optional<Header> next();
  // Up to `buf.size()` bytes of the current member's data; 0 at its end.
  std::size_t read(std::span<std::byte> buf);
  // How far into `data` the reader has got (the compressed bytes consumed).
  std::uint64_t consumed() const;
  // "tar (gzip)", "ZIP 2.0 (deflation)" -- libarchive's names, for messages.
  std::string format_name() const;

  // For a writer copying members (archive/stream_writer): the current
  // member's libarchive entry (owner, mode, times, link target, pax
  // attributes), valid until the next next(); libarchive's ARCHIVE_FORMAT_*
  // code of the archive as read so far (a tar's gnutar/pax/ustar variant; a
  // zip entry's code says nothing of its method); the compression around it,
  // or nullopt for one this enum does not name or several (an rpm's payload
  // inside the rpm filter).
  ::archive_entry* entry() const { return entry_; }
  int format_code() const;
  std::optional<Compression> compression() const;

 private:
  [[noreturn]] void fail_here(const char* what) const;
  struct XzFeed;
  ::archive* a_ = nullptr;
  ::archive_entry* entry_ = nullptr;
  std::string file_;
  std::unique_ptr<XzFeed> xz_;  // when the threaded decoder feeds libarchive
};

}  // namespace ot::archive
