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
  // An in-memory input (decompressed data, unit tests).
  static std::shared_ptr<InputFile> from_memory(std::string name, std::vector<std::byte> data);
  // Map an open regular file (taking ownership of `fd`), shown as `name`.
  static std::shared_ptr<InputFile> from_fd(std::string name, int fd);

  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  const std::string& path() const { return path_; }
  Bytes bytes() const { return {data_, size_}; }
  std::uint64_t size() const { return size_; }
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
