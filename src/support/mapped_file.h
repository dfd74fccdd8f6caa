// Read-only input files: mapped when they are regular files, read into memory
// otherwise (stdin, pipes, /dev/null). Large payloads are never copied through
// user space when the output is a regular file (see OutputFile::copy_from).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "support/bytes.h"
#include "support/error.h"

namespace ot {

class InputFile {
 public:
  // `path` "-" reads standard input. `display` is the name used in errors
  // (defaults to the path). Throws ot::Error("'path': <strerror>") style errors
  // through `open_error` so personalities can keep LLVM's wording.
  static std::shared_ptr<InputFile> open(const std::string& path);
  // An open regular file (taking ownership of `fd`), shown as `name`, that
  // is not mapped: read with read_at, copied by the kernel
  // (OutputFile::copy_from), mapped a range at a time (map_range); bytes()
  // is empty. For a scratch file that should not take its size in address
  // space (split's decoded bundles).
  static std::shared_ptr<InputFile> unmapped_from_fd(std::string name, int fd);
  // An in-memory input (decompressed data, unit tests).
  static std::shared_ptr<InputFile> from_memory(std::string name, std::vector<std::byte> data);
  // Map an open regular file (taking ownership of `fd`), shown as `name`.
  static std::shared_ptr<InputFile> from_fd(std::string name, int fd);

  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  const std::string& path() const { return path_; }
  Bytes bytes() const { return unmapped_ ? Bytes() : Bytes(data_, size_); }
  std::uint64_t size() const { return size_; }
  // Opened with unmapped_from_fd: bytes() is empty.
  bool unmapped() const { return unmapped_; }
  // The descriptor of a regular file, or -1 when the data lives in memory.
  int fd() const { return fd_; }

  // Copy [off, off+len) to `to` with pread (a file's descriptor; from memory
  // otherwise), not through the mapping: it maps no page in.
  void read_at(std::uint64_t off, std::byte* to, std::uint64_t len) const;
  // The file's first min(size(), to.size()) bytes, copied into `to` as
  // read_at copies them (a sniff of its kind maps no page in).
  Bytes head(std::span<std::byte> to) const;

  // Tell the kernel the mapped pages in [off, off+len) are no longer needed,
  // so streaming a large input keeps the resident set flat.
  void release(std::uint64_t off, std::uint64_t len) const;

  // [off, off+len) of the file in memory: a view of its mapping, or for a
  // file not mapped whole (unmapped_from_fd) a mapping of that range alone,
  // gone with the returned object.
  class Range {
   public:
    // `lead` bytes before `data` the mapping starts at a page boundary;
    // `owned`: unmapped with this object; neither mapped nor owned: memory
    // (release() does nothing).
    Range(const std::byte* data, std::uint64_t size, std::uint64_t lead, bool mapped, bool owned)
        : data_(data), size_(size), lead_(lead), mapped_(mapped), owned_(owned) {}
    Range(const Range&) = delete;
    Range& operator=(const Range&) = delete;
    ~Range();
    Bytes bytes() const { return {data_, size_}; }
    // Drop the whole pages inside [off, off+len) of bytes() from memory.
    void release(std::uint64_t off, std::uint64_t len) const;

   private:
    const std::byte* data_;
    std::uint64_t size_, lead_;
    bool mapped_, owned_;
  };
  std::unique_ptr<Range> map_range(std::uint64_t off, std::uint64_t len) const;

  // Whether map_over() takes this file: a mapped regular file.
  bool mappable() const { return mapped_ && fd_ >= 0; }
  // Map the file `part` (mappable) over [off, off + part.size()) of this
  // mapping (`off` a multiple of the page size, the range inside it): read
  // there, it is `part`'s bytes, then zeros to the end of that page, none of
  // them copied, and release() drops its pages like this file's own. For a
  // file laid out with holes where other files go (a bundle in a scratch file).
  void map_over(std::uint64_t off, const InputFile& part);

 private:
  InputFile() = default;
  std::string path_;
  const std::byte* data_ = nullptr;
  std::uint64_t size_ = 0;
  int fd_ = -1;
  bool mapped_ = false;
  bool unmapped_ = false;
  std::vector<std::byte> buffer_;
};

// Drop the whole pages inside [off, off+len) of the mapping [base, base+size)
// from memory (a file's pages come back from it when touched again).
void release_pages(const std::byte* base, std::uint64_t size, std::uint64_t off, std::uint64_t len);

// Thrown by InputFile::open: the message is "'<path>': <strerror>", which is
// also exactly LLVM's text.
std::string open_error_text(const std::string& path, int errno_value);
// The <strerror> of such an error about `path` (InputFile's, OutputFile's),
// which LLVM's packager and llvm-offload-wrapper print alone; empty for any
// other error.
std::string open_error_reason(const Error& e, const std::string& path);

}  // namespace ot
