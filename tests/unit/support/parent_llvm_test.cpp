#include <doctest/doctest.h>

#include "support/parent_llvm.h"

using ot::llvm_release_of;

namespace {
// A few lines of /proc/<pid>/maps as Linux writes them.
std::string maps(std::initializer_list<const char*> paths) {
  std::string out;
  for (const char* p : paths) out += std::string("7f0000000000-7f0000001000 r--p 00000000 08:01 1234  ") + p + "\n";
  out += "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n";
  return out;
}
}  // namespace

TEST_CASE("the parent's LLVM release: every sign agrees, else none") {
  // Debian's clang-19, through its /usr/bin/clang++-19 link: folder and libraries say 19.
  auto p = llvm_release_of("/usr/lib/llvm-19/bin/clang",
                           maps({"/usr/lib/x86_64-linux-gnu/libLLVM.so.19.1", "/usr/lib/x86_64-linux-gnu/libclang-cpp.so.19.1",
                                 "/usr/lib/x86_64-linux-gnu/libc.so.6"}));
  REQUIRE(p);
  CHECK(p->major == 19);
  CHECK(p->evidence == "folder llvm- 19, maps libLLVM.so.19.1: 19, maps libclang-cpp.so.19.1: 19");
  p = llvm_release_of("/usr/lib/llvm-22/bin/clang-linker-wrapper", maps({"/usr/lib/llvm-22/lib/libLLVM.so.22.1"}));
  REQUIRE(p);
  CHECK(p->major == 22);
  // A statically linked clang-22 elsewhere: its name alone.
  p = llvm_release_of("/opt/bin/clang-22", maps({"/usr/lib/x86_64-linux-gnu/libc.so.6"}));
  REQUIRE(p);
  CHECK(p->major == 22);
  // Signs that disagree, or none: no release (the caller's default).
  p = llvm_release_of("/usr/lib/llvm-19/bin/clang", maps({"/usr/lib/llvm-22/lib/libLLVM.so.22.1"}));
  REQUIRE(p);
  CHECK_FALSE(p->major);
  CHECK(p->evidence.starts_with("signs disagree"));
  p = llvm_release_of("/usr/local/bin/clang", maps({"/usr/lib/x86_64-linux-gnu/libc.so.6"}));
  REQUIRE(p);
  CHECK_FALSE(p->major);
  CHECK(p->evidence == "no sign of its release");
  // Not an LLVM tool at all: a shell, make, python (even one in a folder named like a version).
  CHECK_FALSE(llvm_release_of("/usr/bin/bash", maps({"/usr/lib/x86_64-linux-gnu/libLLVM.so.19.1"})));
  CHECK_FALSE(llvm_release_of("/usr/bin/python3.11", maps({})));
  CHECK_FALSE(llvm_release_of("/home/u/llvm-project-19/build/bin/ninja", maps({})));
  // A deleted executable (upgraded while running) still counts.
  p = llvm_release_of("/usr/lib/llvm-22/bin/clang (deleted)", maps({}));
  REQUIRE(p);
  CHECK(p->major == 22);
}
