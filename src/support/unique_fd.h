// A file descriptor closed when it goes out of scope (directory walks and
// copies that open files with openat).
#pragma once

#include <unistd.h>

namespace ot {

struct UniqueFd {
  int fd = -1;
  explicit UniqueFd(int f) : fd(f) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace ot
