#include "support/output_file.h"

#include <cerrno>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "support/mapped_file.h"
#include "support/signals.h"

namespace ot {
namespace {

constexpr std::size_t kBufferSize = 1 << 16;
constexpr std::uint64_t kCopyBlock = 8u << 20;

std::string temp_pattern(const std::string& path) {
  auto slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + base + ".XXXXXX";
}

}  // namespace

void OutputFile::fail_io(int e) const {
  throw Error({}, open_error_text(path_, e));
}

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  if (path_ == "-") {
    fd_ = STDOUT_FILENO;
    owns_fd_ = false;
    return;
  }
  if (path_.ends_with('/')) fail_io(EISDIR);  // a folder's name (output_file.h: folder_path)
  struct stat st{};
  if (::stat(path_.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) fail_io(EISDIR);
    if (!S_ISREG(st.st_mode)) {  // /dev/null, a FIFO: write in place
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd_ < 0) fail_io(errno);
      return;
    }
  }
  temp_ = temp_pattern(path_);
  fd_ = ::mkostemp(temp_.data(), O_CLOEXEC);
  if (fd_ < 0) {
    temp_.clear();
    fail_io(errno);
  }
  seekable_ = true;
  signals::register_temp(temp_.c_str());
  // mkstemp creates 0600; give the file the mode a plain creat() would.
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd_, 0666 & ~mask);
  buf_.reserve(kBufferSize);
}

namespace {

std::string temp_folder() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

std::string folder_of(const std::string& near) {
  auto slash = near.find_last_of('/');
  return slash == std::string::npos ? "." : near.substr(0, slash + 1);
}

}  // namespace

OutputFile OutputFile::scratch_beside(const std::string& name) {
  std::string folder = folder_of(name);
  struct stat st {};
  // A folder the user cannot write (an input in /opt/rocm/lib, pruned by a
  // user to a file of their own) takes no scratch file: $TMPDIR does.
  const bool beside = ::stat(folder.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && ::access(folder.c_str(), W_OK) == 0;
  return scratch(beside ? name : "");
}

OutputFile OutputFile::scratch(const std::string& near) {
  const std::string dir = !near.empty() && near != "-" ? folder_of(near) : temp_folder();
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {  // file systems without O_TMPFILE: create and unlink at once
    std::string pattern = dir + "/.offloadtool-scratch.XXXXXX";
    fd = ::mkostemp(pattern.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(pattern.c_str());
  }
  if (fd < 0) throw Error({}, fmt::format("'{}': cannot create a scratch file: {}", dir, errno_text(errno)));
  OutputFile out;
  out.path_ = dir;
  out.fd_ = fd;
  out.seekable_ = true;
  out.committed_ = true;  // nothing to rename, nothing to remove
  out.buf_.reserve(kBufferSize);
  return out;
}

OutputFile::OutputFile(OutputFile&& o) noexcept
    : path_(std::move(o.path_)), fd_(o.fd_), seekable_(o.seekable_), owns_fd_(o.owns_fd_), finished_(o.finished_),
      committed_(o.committed_), written_(o.written_), buf_(std::move(o.buf_)) {
  // The signal table holds the temp name's address: re-register it for the new owner.
  if (!o.temp_.empty()) signals::unregister_temp(o.temp_.c_str());
  temp_ = std::move(o.temp_);
  if (!temp_.empty()) signals::register_temp(temp_.c_str());
  o.fd_ = -1;
  o.temp_.clear();
  o.committed_ = true;
}

OutputFile::~OutputFile() {
  if (fd_ >= 0 && owns_fd_) ::close(fd_);
  if (!temp_.empty()) {
    signals::unregister_temp(temp_.c_str());
    if (!committed_) ::unlink(temp_.c_str());
  }
}

void OutputFile::raw_write(const std::byte* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd_, p, std::min<std::size_t>(n, 1u << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      fail_io(errno);
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void OutputFile::raw_writev(std::span<::iovec> iov) {
  std::size_t i = 0;
  while (i < iov.size()) {
    ssize_t w = ::writev(fd_, iov.data() + i, static_cast<int>(iov.size() - i));
    if (w < 0) {
      if (errno == EINTR) continue;
      fail_io(errno);
    }
    auto left = static_cast<std::size_t>(w);
    while (i < iov.size() && left >= iov[i].iov_len) left -= iov[i++].iov_len;
    if (left > 0) {  // a short write ended inside this piece
      iov[i].iov_base = static_cast<std::byte*>(iov[i].iov_base) + left;
      iov[i].iov_len -= left;
    }
  }
}

void OutputFile::write_gather(std::span<const Bytes> pieces) {
  flush();
  std::vector<struct iovec> iov;
  iov.reserve(std::min<std::size_t>(pieces.size(), IOV_MAX));
  for (std::size_t i = 0; i < pieces.size();) {
    iov.clear();
    for (; i < pieces.size() && iov.size() < IOV_MAX; ++i) {
      if (pieces[i].empty()) continue;
      iov.push_back({const_cast<std::byte*>(pieces[i].data()), pieces[i].size()});
      written_ += pieces[i].size();
    }
    raw_writev(iov);
  }
}

void OutputFile::write_at(std::uint64_t off, Bytes data) {
  if (!seekable_) throw std::logic_error("OutputFile::write_at on a stream");
  flush();
  for (std::size_t done = 0; done < data.size();) {
    ssize_t w = ::pwrite(fd_, data.data() + done, std::min<std::size_t>(data.size() - done, 1u << 30),
                         static_cast<off_t>(off + done));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) fail_io(errno);
    done += static_cast<std::size_t>(w);
  }
}

void OutputFile::resize(std::uint64_t size) {
  if (!seekable_) throw std::logic_error("OutputFile::resize on a stream");
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) fail_io(errno);
}

void OutputFile::skip(std::uint64_t n) {
  if (!seekable_) throw std::logic_error("OutputFile::skip on a stream");
  flush();
  if (::lseek(fd_, static_cast<off_t>(written_ + n), SEEK_SET) < 0) fail_io(errno);
  written_ += n;
}

std::shared_ptr<InputFile> OutputFile::map(std::string name) {
  if (!seekable_) throw std::logic_error("OutputFile::map on a stream");
  flush();
  int fd = ::dup(fd_);
  if (fd < 0) fail_io(errno);
  return InputFile::from_fd(std::move(name), fd);
}

std::shared_ptr<InputFile> OutputFile::read_back(std::string name) {
  if (!seekable_) throw std::logic_error("OutputFile::read_back on a stream");
  flush();
  int fd = ::dup(fd_);
  if (fd < 0) fail_io(errno);
  return InputFile::unmapped_from_fd(std::move(name), fd);
}

WritableRegion::~WritableRegion() { munmap(data_ - lead_, size_ + lead_); }

void WritableRegion::release_behind(std::uint64_t done, std::uint64_t keep) {
  constexpr std::uint64_t kStep = 64u << 10, kSweep = 4u << 20;
  const std::uint64_t at = lead_ + std::min(done, size_);  // in the mapping, whose start is page-aligned
  const std::uint64_t upto = at > keep ? (at - keep) / kStep * kStep : 0;
  if (upto <= released_) return;
  // Pages the writer reads again (a decoder's matches reach up to its window
  // back) return to memory behind the mark: every 4 MiB everything behind is
  // let go of again (cheap: page tables already empty are skipped whole).
  const std::uint64_t from = upto / kSweep != released_ / kSweep ? 0 : released_;
  release_pages(data_ - lead_, size_ + lead_, from, upto - from);
  released_ = upto;
}

std::unique_ptr<WritableRegion> OutputFile::map_appended(std::uint64_t size) {
  if (!seekable_) throw std::logic_error("OutputFile::map_appended on a stream");
  flush();
  if (size == 0) return nullptr;
  int rc = ::posix_fallocate(fd_, static_cast<off_t>(written_), static_cast<off_t>(size));
  if (rc == EOPNOTSUPP || rc == EINVAL) return nullptr;
  if (rc != 0) fail_io(rc);
  const std::uint64_t page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  const std::uint64_t lead = written_ % page;
  void* p = mmap(nullptr, lead + size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, static_cast<off_t>(written_ - lead));
  if (p == MAP_FAILED) fail_io(errno);
  auto region = std::make_unique<WritableRegion>(static_cast<std::byte*>(p) + lead, size, lead);
  if (::lseek(fd_, static_cast<off_t>(written_ + size), SEEK_SET) < 0) fail_io(errno);
  written_ += size;
  return region;
}

void OutputFile::copy_mode_from(const std::string& path) {
  if (temp_.empty()) return;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(path, "{}", errno_text(errno));
  if (::fchmod(fd_, st.st_mode & 07777) != 0) fail_io(errno);
}

void OutputFile::flush() {
  if (!buf_.empty()) {
    raw_write(buf_.data(), buf_.size());
    buf_.clear();
  }
}

void OutputFile::write(Bytes data) {
  written_ += data.size();
  if (data.size() >= kBufferSize) {
    flush();
    raw_write(data.data(), data.size());
    return;
  }
  if (buf_.size() + data.size() > kBufferSize) flush();
  buf_.insert(buf_.end(), data.begin(), data.end());
}

void OutputFile::zeros(std::uint64_t n) {
  static const std::byte kZero[4096] = {};
  while (n > 0) {
    std::uint64_t k = std::min<std::uint64_t>(n, sizeof kZero);
    write(Bytes(kZero, k));
    n -= k;
  }
}

void OutputFile::copy_from(const InputFile& in, std::uint64_t off, std::uint64_t len) {
  if (len == 0) return;
  if (range_exceeds(off, len, in.size()))
    fail_at({in.path(), off}, "0x{:x} bytes to copy extend past the end of the file", len);
  if (in.fd() >= 0 && seekable_) {
    flush();
    loff_t src = static_cast<loff_t>(off);
    std::uint64_t left = len;
    while (left > 0) {
      ssize_t n = ::copy_file_range(in.fd(), &src, fd_, nullptr, std::min<std::uint64_t>(left, 1u << 30), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // unsupported here (EXDEV on old kernels, EINVAL...) or short file: fall back
      left -= static_cast<std::uint64_t>(n);
    }
    written_ += len - left;
    off = static_cast<std::uint64_t>(src);
    len = left;
  }
  if (len > 0 && in.unmapped()) {
    std::vector<std::byte> block(std::min(len, kCopyBlock));
    for (; len > 0;) {
      const std::uint64_t k = std::min<std::uint64_t>(len, block.size());
      in.read_at(off, block.data(), k);
      write(Bytes(block).first(k));
      off += k;
      len -= k;
    }
  }
  while (len > 0) {
    std::uint64_t k = std::min(len, kCopyBlock);
    write(in.bytes().subspan(off, k));
    in.release(off, k);
    off += k;
    len -= k;
  }
}

void OutputFile::clone_from(const InputFile& in) {
  if (written_ == 0 && in.fd() >= 0 && seekable_ && in.size() > 0) {
    flush();
    if (::ioctl(fd_, FICLONE, in.fd()) == 0) {
      // The clone leaves the file offset where it was: what is written next follows the contents.
      if (::lseek(fd_, static_cast<off_t>(in.size()), SEEK_SET) < 0) fail_io(errno);
      written_ = in.size();
      return;
    }
  }
  copy_from(in, 0, in.size());
}

void OutputFile::finish() {
  if (finished_) return;
  flush();
  finished_ = true;
  if (owns_fd_ && fd_ >= 0) {
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail_io(errno);
  }
}

void OutputFile::rename_into_place() {
  if (temp_.empty()) {
    committed_ = true;
    return;
  }
  // Replacing a regular file, exchange the two names and then remove the old
  // file (which now has the temporary name). rename() over an existing file
  // makes ext4 (auto_da_alloc) push the whole new file to disk before it
  // returns: 0.9 s of a 1.5 s bundle of 800 MB, measured. The exchange keeps
  // the replacement atomic -- the path names the old or the new file at every
  // moment -- and leaves the new file as durable as an output LLVM's tools
  // write in place. File systems without RENAME_EXCHANGE get rename().
  struct stat st{};
  if (::lstat(path_.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
      ::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, path_.c_str(), RENAME_EXCHANGE) == 0) {
    ::unlink(temp_.c_str());
  } else if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    fail_io(errno);
  }
  committed_ = true;
  signals::unregister_temp(temp_.c_str());
  temp_.clear();
}

void OutputFile::commit() {
  finish();
  rename_into_place();
}

void OutputFile::commit_all(std::vector<OutputFile>& outs) {
  for (auto& o : outs) o.finish();
  for (auto& o : outs) o.rename_into_place();
}

std::string folder_path(std::string path) {
  while (path.size() > 1 && path.ends_with('/')) path.pop_back();
  return path;
}

void write_file_atomic(const std::string& path, Bytes data) {
  OutputFile out(path);
  out.write(data);
  out.commit();
}

}  // namespace ot
