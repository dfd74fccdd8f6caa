#include "support/signals.h"

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ot::signals {
namespace {

// Fixed tables read by the handler: async-signal-safe (no allocation, no locks).
constexpr int kSlots = 256;
using Slots = std::array<std::atomic<const char*>, kSlots>;
Slots g_temps{};
Slots g_temp_dirs{};

void take_slot(Slots& slots, const char* path) {
  for (auto& slot : slots) {
    const char* expected = nullptr;
    if (slot.compare_exchange_strong(expected, path)) return;
  }
}

void free_slot(Slots& slots, const char* path) {
  for (auto& slot : slots) {
    const char* expected = path;
    if (slot.compare_exchange_strong(expected, nullptr)) return;
  }
}

// `name` in the folder `at` removed, and for a folder all it holds first:
// a symbolic link is removed as a link (O_NOFOLLOW), never followed out of
// the tree. A folder given back its read-only mode is made writable again
// (fchmod). Each level holds a 4 KiB buffer on the stack: 64 levels at most.
void remove_tree(int at, const char* name, int depth) {
  if (::unlinkat(at, name, 0) == 0 || errno == ENOENT || depth > 64) return;  // a file or link gone; EISDIR else
  const int fd = ::openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  ::fchmod(fd, S_IRWXU);
  alignas(dirent64) char buf[4096];
  // Entries removed while the folder is read may shift: read it again from
  // the start until a pass finds nothing (4 passes at most: what cannot be
  // removed stays, and so does the folder).
  for (int pass = 0; pass < 4; ++pass) {
    ::lseek(fd, 0, SEEK_SET);
    bool found = false;
    for (long n; (n = ::getdents64(fd, buf, sizeof buf)) > 0;) {
      for (long off = 0; off < n;) {
        const auto* d = reinterpret_cast<const dirent64*>(buf + off);  // the kernel's record, aligned
        off += d->d_reclen;
        if (std::strcmp(d->d_name, ".") == 0 || std::strcmp(d->d_name, "..") == 0) continue;
        found = true;
        remove_tree(fd, d->d_name, depth + 1);
      }
    }
    if (!found) break;
  }
  ::close(fd);
  ::unlinkat(at, name, AT_REMOVEDIR);
}

void on_signal(int sig) {
  const int saved = errno;
  for (auto& slot : g_temps) {
    const char* p = slot.load();
    if (p) ::unlink(p);
  }
  for (auto& slot : g_temp_dirs) {
    const char* p = slot.load();
    if (p) remove_tree(AT_FDCWD, p, 0);
  }
  errno = saved;
  std::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void install() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) std::signal(sig, on_signal);
  std::signal(SIGPIPE, SIG_IGN);  // a closed stdout becomes an EPIPE write error instead
}

void register_temp(const char* path) { take_slot(g_temps, path); }
void unregister_temp(const char* path) { free_slot(g_temps, path); }
void register_temp_dir(const char* path) { take_slot(g_temp_dirs, path); }
void unregister_temp_dir(const char* path) { free_slot(g_temp_dirs, path); }

}  // namespace ot::signals
