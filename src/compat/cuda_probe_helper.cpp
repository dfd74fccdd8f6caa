// The static build's run_cuda_probe (compat/cuda_probe_run.h).
//
// Why not dlopen: a statically linked glibc program's dlopen loads the
// system's libc.so.6 as a second C library beside the one linked in, and that
// second one is not set up to run threads or thread-local storage. Measured on
// Debian 12 with the same glibc (2.36) at build and at run time: a stand-in
// libcuda whose cuInit calls pthread_create dies with SIGSEGV inside the
// static program (in the inner libc's allocate_stack), and so does one that
// reads a __thread variable (on __tls_get_addr's pointer); malloc and stdio
// alone work; the same library loaded by a dynamically linked program works.
// The real driver starts threads (libcuda.so 535's imports: pthread_create,
// dlopen), and with another glibc at run time than at build time even the
// rest is unsupported (glibc's link-time warning: "Using 'dlopen' in
// statically linked applications requires at runtime the shared libraries
// from the glibc version used for linking"). tests/real/cuda_detect_test.py's
// stand-in starts a thread and reads a __thread variable in cuInit, so the
// static build's suite shows that the way taken here survives both.
//
// What is done instead: the static binary carries a small dynamically linked
// program (compat/cuda_probe_main.c around the same compat/cuda_probe.c; built
// with offloadtool and embedded by compat/meson.build, ~15 KiB) and runs it:
// written to an anonymous memory file (memfd_create) and executed from there
// (fexecve), so that the system's dynamic loader (the helper's PT_INTERP:
// /lib64/ld-linux-x86-64.so.2, /lib/ld-linux-aarch64.so.1) and C library load
// libcuda as for any CUDA program. It prints its lines on a pipe. Nothing is
// written to disk, no shell runs, and LD_LIBRARY_PATH and the rest of the
// environment pass to it as to any child. What it needs of the system: that
// dynamic loader, and a C library with the symbol versions the helper was
// linked against (glibc 2.34 or later when built on Debian 12); without them
// it cannot start, and the error says what the loader said.
// docs/gpu-detection.md weighs the other ways (nvidia-smi, /proc/driver/nvidia).
#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "compat/cuda_probe_run.h"

// compat/embed_probe.py's assembly: the helper's bytes.
extern "C" const unsigned char ot_cuda_probe_image[];
extern "C" const unsigned char ot_cuda_probe_image_end[];

namespace ot::compat {
namespace {

constexpr std::size_t kMaxProbeOutput = 1 << 20;  // a line per device: a few KiB at most

// Reads `fd` to its end (keeping at most kMaxProbeOutput bytes).
std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out.size() < kMaxProbeOutput) out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

struct Fd {
  int fd = -1;
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { close(); }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

std::string errno_text(const char* call) { return fmt::format("cannot run the CUDA probe: {}: {}", call, std::strerror(errno)); }

}  // namespace

std::string run_cuda_probe(const std::string& library, std::string& how, std::string& error) {
  how = "helper";
  const auto size = static_cast<std::size_t>(ot_cuda_probe_image_end - ot_cuda_probe_image);
  Fd image, out_r, out_w, err;
  image.fd = ::memfd_create("offloadtool-cuda-probe", MFD_CLOEXEC);
  // The helper's standard error (the dynamic loader's complaints) goes to a
  // second memory file, read after it exits: it cannot fill a pipe and stall it.
  err.fd = ::memfd_create("offloadtool-cuda-probe-stderr", MFD_CLOEXEC);
  if (image.fd < 0 || err.fd < 0) return error = errno_text("memfd_create"), std::string();
  for (std::size_t done = 0; done < size;) {
    ssize_t n = ::write(image.fd, ot_cuda_probe_image + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return error = errno_text("write"), std::string();
    done += static_cast<std::size_t>(n);
  }
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return error = errno_text("pipe2"), std::string();
  out_r.fd = p[0];
  out_w.fd = p[1];
  const char* argv[] = {"offloadtool-cuda-probe", library.c_str(), nullptr};
  pid_t pid = ::fork();
  if (pid < 0) return error = errno_text("fork"), std::string();
  if (pid == 0) {  // the child: async-signal-safe calls only
    if (::dup2(out_w.fd, 1) < 0 || ::dup2(err.fd, 2) < 0) ::_exit(126);
    ::fexecve(image.fd, const_cast<char* const*>(argv), environ);
    // "exec-error <errno>" on the pipe: the parent words it.
    int e = errno;
    char line[32] = "exec-error ";
    std::size_t n = 11;
    char digits[12];
    std::size_t d = 0;
    do digits[d++] = static_cast<char>('0' + e % 10);
    while ((e /= 10) != 0 && d < sizeof digits);
    while (d) line[n++] = digits[--d];
    line[n++] = '\n';
    (void)!::write(1, line, n);
    ::_exit(127);
  }
  out_w.close();
  std::string text = read_all(out_r.fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (text.starts_with("exec-error ")) {
    int e = 0;
    for (char c : std::string_view(text).substr(11)) {
      if (c < '0' || c > '9' || e > 100000) break;
      e = e * 10 + (c - '0');
    }
    error = fmt::format("cannot run the CUDA probe: fexecve: {}{}", std::strerror(e),
                        e == ENOENT ? " (the system has no dynamic loader where the probe expects one)" : "");
    return {};
  }
  std::string stderr_text;
  if (::lseek(err.fd, 0, SEEK_SET) == 0) stderr_text = read_all(err.fd);
  while (!stderr_text.empty() && (stderr_text.back() == '\n' || stderr_text.back() == '\r')) stderr_text.pop_back();
  if (auto nl = stderr_text.rfind('\n'); nl != std::string::npos) stderr_text.erase(0, nl + 1);  // its last line
  const std::string said = stderr_text.empty() ? "" : ": " + stderr_text;
  if (WIFSIGNALED(status))
    error = fmt::format("the CUDA probe of {} was killed by signal {} ({}){}", library, WTERMSIG(status),
                        strsignal(WTERMSIG(status)), said);
  else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)  // the loader could not start it ("GLIBC_2.34 not found"...)
    error = fmt::format("the CUDA probe could not run (exit {}){}", WIFEXITED(status) ? WEXITSTATUS(status) : -1, said);
  return text;
}

}  // namespace ot::compat
