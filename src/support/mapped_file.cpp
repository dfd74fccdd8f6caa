#include "support/mapped_file.h"

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ot {

std::string open_error_text(const std::string& path, int errno_value) {
  return fmt::format("'{}': {}", path, errno_text(errno_value));
}

std::string open_error_reason(const Error& e, const std::string& path) {
  const std::string prefix = fmt::format("'{}': ", path);
  return e.file().empty() && e.message().starts_with(prefix) ? e.message().substr(prefix.size()) : std::string();
}

namespace {

[[noreturn]] void throw_open(const std::string& path, int e) { throw Error({}, open_error_text(path, e)); }

std::vector<std::byte> read_all(int fd, const std::string& path) {
  std::vector<std::byte> out;
  std::size_t used = 0;
  for (;;) {
    if (out.size() - used < 65536) out.resize(out.size() + std::max<std::size_t>(65536, out.size()));
    ssize_t n = ::read(fd, out.data() + used, out.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_open(path, errno);
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  out.resize(used);
  return out;
}

}  // namespace

std::shared_ptr<InputFile> InputFile::open(const std::string& path) {
  std::shared_ptr<InputFile> f(new InputFile());
  f->path_ = path;
  if (path == "-") {
    f->buffer_ = read_all(STDIN_FILENO, path);
    f->data_ = f->buffer_.data();
    f->size_ = f->buffer_.size();
    return f;
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_open(path, errno);
  struct stat st{};
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw_open(path, e);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw_open(path, EISDIR);
  }
  if (!S_ISREG(st.st_mode)) {  // pipes, character devices such as /dev/null
    f->buffer_ = read_all(fd, path);
    ::close(fd);
    f->data_ = f->buffer_.data();
    f->size_ = f->buffer_.size();
    return f;
  }
  f->fd_ = fd;
  f->size_ = static_cast<std::uint64_t>(st.st_size);
  if (f->size_ > 0) {
    void* p = mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) throw_open(path, errno);
    f->data_ = static_cast<const std::byte*>(p);
    f->mapped_ = true;
  }
  return f;
}

std::shared_ptr<InputFile> InputFile::from_fd(std::string name, int fd) {
  std::shared_ptr<InputFile> f = unmapped_from_fd(std::move(name), fd);
  f->unmapped_ = false;
  if (f->size_ > 0) {
    void* p = mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) throw_open(f->path_, errno);
    f->data_ = static_cast<const std::byte*>(p);
    f->mapped_ = true;
  }
  return f;
}

std::shared_ptr<InputFile> InputFile::unmapped_from_fd(std::string name, int fd) {
  std::shared_ptr<InputFile> f(new InputFile());
  f->path_ = std::move(name);
  f->fd_ = fd;
  struct stat st{};
  if (fstat(fd, &st) != 0) throw_open(f->path_, errno);
  f->size_ = static_cast<std::uint64_t>(st.st_size);
  f->unmapped_ = true;
  return f;
}

std::shared_ptr<InputFile> InputFile::from_memory(std::string name, std::vector<std::byte> data) {
  std::shared_ptr<InputFile> f(new InputFile());
  f->path_ = std::move(name);
  f->buffer_ = std::move(data);
  f->data_ = f->buffer_.data();
  f->size_ = f->buffer_.size();
  return f;
}

InputFile::~InputFile() {
  if (mapped_) munmap(const_cast<std::byte*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
}

Bytes InputFile::head(std::span<std::byte> to) const {
  const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(size_, to.size()));
  read_at(0, to.data(), n);
  return Bytes(to.data(), n);
}

void InputFile::read_at(std::uint64_t off, std::byte* to, std::uint64_t len) const {
  if (range_exceeds(off, len, size_))
    fail_at({path_, off}, "0x{:x} bytes to read extend past the end of the file", len);
  if (fd_ < 0) {
    std::copy_n(data_ + off, len, to);
    return;
  }
  while (len > 0) {
    const ssize_t n = ::pread(fd_, to, std::min<std::uint64_t>(len, 1u << 30), static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail_at({path_, off}, "cannot read: {}", errno_text(errno));
    if (n == 0) fail_at({path_, off}, "the file ended early (it changed while being read)");
    to += n;
    off += static_cast<std::uint64_t>(n);
    len -= static_cast<std::uint64_t>(n);
  }
}

void release_pages(const std::byte* base, std::uint64_t size, std::uint64_t off, std::uint64_t len) {
  const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  const std::uint64_t begin = align_to(off, page), end = std::min(off + len, size) / page * page;
  if (len > 0 && end > begin) madvise(const_cast<std::byte*>(base) + begin, end - begin, MADV_DONTNEED);
}

void InputFile::release(std::uint64_t off, std::uint64_t len) const {
  if (mapped_) release_pages(data_, size_, off, len);
}

InputFile::Range::~Range() {
  if (owned_) munmap(const_cast<std::byte*>(data_ - lead_), size_ + lead_);
}

void InputFile::Range::release(std::uint64_t off, std::uint64_t len) const {
  if (!mapped_ || len == 0 || off >= size_) return;
  len = std::min(len, size_ - off);
  // In the mapping that starts `lead_` bytes before data_ at a page boundary
  // (a view of a whole file's mapping: lead_ is data_'s offset in the file).
  release_pages(data_ - lead_, size_ + lead_, lead_ + off, len);
}

std::unique_ptr<InputFile::Range> InputFile::map_range(std::uint64_t off, std::uint64_t len) const {
  if (range_exceeds(off, len, size_))
    fail_at({path_, off}, "0x{:x} bytes to map extend past the end of the file", len);
  if (mapped_ || fd_ < 0 || len == 0) return std::make_unique<Range>(data_ + off, len, mapped_ ? off : 0, mapped_, false);
  const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  const std::uint64_t lead = off % page;
  void* p = mmap(nullptr, lead + len, PROT_READ, MAP_PRIVATE, fd_, static_cast<off_t>(off - lead));
  if (p == MAP_FAILED) fail_at({path_, off}, "cannot map 0x{:x} bytes: {}", len, errno_text(errno));
  return std::make_unique<Range>(static_cast<const std::byte*>(p) + lead, len, lead, true, true);
}

void InputFile::map_over(std::uint64_t off, const InputFile& part) {
  const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  if (!mappable() || !part.mappable() || off % page != 0 || range_exceeds(off, part.size_, size_))
    throw std::logic_error("InputFile::map_over: not a mapped file over a page of this mapping");
  void* p = mmap(const_cast<std::byte*>(data_) + off, part.size_, PROT_READ, MAP_PRIVATE | MAP_FIXED, part.fd_, 0);
  if (p == MAP_FAILED) fail(part.path_, "cannot map: {}", errno_text(errno));
}

}  // namespace ot
