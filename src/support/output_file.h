// Atomic outputs: bytes go to a temporary file beside the destination and are
// renamed over it only by commit(). An uncommitted temp is removed by the
// destructor, and by the signal handler on Ctrl-C (see support/signals.h).
// "-" writes to standard output; character devices (/dev/null) are written in place.
// A scratch file (OutputFile::scratch) is an unlinked file that is never committed:
// room for intermediate data too large for memory, mapped back with map().
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "support/bytes.h"

struct iovec;  // <sys/uio.h>

namespace ot {

class InputFile;

// A writable shared mapping of part of a file (see OutputFile::map_appended):
// `size` bytes at `data`, in a mapping that starts `lead` bytes before them
// (mappings start at a page boundary of the file).
class WritableRegion {
 public:
  WritableRegion(std::byte* data, std::uint64_t size, std::uint64_t lead) : data_(data), size_(size), lead_(lead) {}
  WritableRegion(const WritableRegion&) = delete;
  WritableRegion& operator=(const WritableRegion&) = delete;
  ~WritableRegion();
  std::span<std::byte> bytes() const { return {data_, size_}; }
  // For a writer moving forward: drop from memory the pages more than `keep`
  // bytes behind `done` (what was written stays in the file, and reading it
  // again brings it back), in steps of 64 KiB (a multiple of every page size,
  // so that no page is left between two steps); every 4 MiB also the pages
  // behind that the writer has read again since.
  void release_behind(std::uint64_t done, std::uint64_t keep = 4u << 20);

 private:
  std::byte* data_;
  std::uint64_t size_;
  std::uint64_t lead_;
  std::uint64_t released_ = 0;  // in the mapping, from its start
};

class OutputFile {
 public:
  explicit OutputFile(std::string path);
  // An unlinked file in the folder of `near` (so that copy_file_range works
  // within one file system), or in $TMPDIR (else /tmp) when `near` is "-" or
  // empty; a folder that cannot take one is an error naming it.
  static OutputFile scratch(const std::string& near);
  // The same beside the file `name` names where its folder exists and the
  // user may write there, else in $TMPDIR: `name` may be a display name that
  // is no path (a package member's chain, "pkg.deb(data.tar.xz)(./usr/lib/x.co)").
  static OutputFile scratch_beside(const std::string& name);
  OutputFile(OutputFile&&) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();

  const std::string& path() const { return path_; }
  std::uint64_t written() const { return written_; }

  void write(Bytes data);
  void write(std::string_view s) { write(as_bytes(s)); }
  void zeros(std::uint64_t n);
  // Write `pieces` in order, as write() of each would, but hand the kernel the
  // caller's memory (writev) instead of copying it into the buffer first: for
  // many pieces that are already in memory (a mapped input's payloads).
  void write_gather(std::span<const Bytes> pieces);
  // Copy [off, off+len) of `in` without passing it through user space where the
  // kernel allows it (copy_file_range), else from the mapping in large blocks
  // (read_at for a file that is not mapped).
  void copy_from(const InputFile& in, std::uint64_t off, std::uint64_t len);
  // The whole of `in` as this (still empty) file's contents: a reflink where
  // the file system shares extents (btrfs, XFS: FICLONE), else copy_from.
  void clone_from(const InputFile& in);

  // Give the file the permission bits of the regular file `path` (an in-place
  // rewrite keeps the input's mode, an executable's x bits included); nothing
  // for outputs written in place (stdout, devices).
  void copy_mode_from(const std::string& path);

  // Hand buffered bytes to the kernel (map() and the copies do it themselves).
  void flush();
  // A regular file (temporary or scratch), not a stream: write_at and map work.
  bool seekable() const { return seekable_; }
  // Overwrite bytes already written (a header completed at the end).
  void write_at(std::uint64_t off, Bytes data);
  // Size the file to `size` bytes (a hole: zeros) without moving the write position.
  void resize(std::uint64_t size);
  // Move the write position `n` bytes on without writing them: what the file
  // holds there stays (a hole reads as zeros).
  void skip(std::uint64_t n);
  // The file as written so far (flushed), mapped read-only and shown as `name`
  // in errors; the mapping sees later writes to the pages it covers.
  std::shared_ptr<InputFile> map(std::string name);
  // The same, not mapped (InputFile::unmapped_from_fd): read with read_at,
  // copied by the kernel, mapped a range at a time.
  std::shared_ptr<InputFile> read_back(std::string name);
  // The next `size` bytes of the file, written through memory instead of
  // write(): their blocks allocated (so that writing through the mapping cannot
  // fail for want of space) and mapped shared and writable; the write position
  // moves past them (they read as zeros until written). Empty (and nothing
  // changed) when `size` is 0 or the file system cannot allocate ahead.
  std::unique_ptr<WritableRegion> map_appended(std::uint64_t size);

  // Flush, fsync-free close, rename over the destination. Throws on failure.
  void commit();
  // Several outputs: commit_all renames only after every output was flushed.
  static void commit_all(std::vector<OutputFile>& outs);

 private:
  OutputFile() = default;
  void finish();   // flush + close; throws
  void rename_into_place();
  void raw_write(const std::byte* p, std::size_t n);
  void raw_writev(std::span<::iovec> iov);
  [[noreturn]] void fail_io(int e) const;

  std::string path_;
  std::string temp_;     // empty when writing in place (stdout, devices) and for scratch files
  int fd_ = -1;
  bool seekable_ = false;
  bool owns_fd_ = true;
  bool finished_ = false;
  bool committed_ = false;
  std::uint64_t written_ = 0;
  std::vector<std::byte> buf_;
};

// Write a small whole file atomically.
void write_file_atomic(const std::string& path, Bytes data);

// Output paths as people type them (tab completion ends a folder's name with
// '/'). A folder's path is taken without its trailing slashes ("out/" is the
// folder "out"; "/" stays). A file's path ending with '/' can only name a
// folder: OutputFile refuses it as open(2) and LLVM 19's tools do
// ("'out/': Is a directory"), whether or not that folder exists.
std::string folder_path(std::string path);

}  // namespace ot
