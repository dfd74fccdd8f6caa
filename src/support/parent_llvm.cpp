#include "support/parent_llvm.h"

#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

namespace ot {
namespace {

// The decimal number at the start of `s` (1-3 digits), if any.
std::optional<int> leading_number(std::string_view s) {
  std::size_t n = 0;
  int value = 0;
  while (n < s.size() && n < 4 && s[n] >= '0' && s[n] <= '9') value = value * 10 + (s[n++] - '0');
  if (n == 0 || n > 3) return std::nullopt;
  return value;
}

// "/usr/lib/llvm-19/bin/clang" -> 19: a path component "llvm-N".
std::optional<int> llvm_folder_major(std::string_view path) {
  for (std::size_t at = path.find("/llvm-"); at != std::string_view::npos; at = path.find("/llvm-", at + 1)) {
    std::string_view rest = path.substr(at + 6);
    auto n = leading_number(rest);
    std::size_t digits = rest.find_first_not_of("0123456789");
    if (n && (digits == std::string_view::npos || rest[digits] == '/')) return n;
  }
  return std::nullopt;
}

// "clang++-19" -> 19: a name ending in "-N".
std::optional<int> name_suffix_major(std::string_view name) {
  auto dash = name.rfind('-');
  if (dash == std::string_view::npos) return std::nullopt;
  std::string_view tail = name.substr(dash + 1);
  if (tail.empty() || tail.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  return leading_number(tail);
}

// A mapped file's name: libLLVM.so.19.1, libLLVM-19.so, libLLVM.so.22.1, libclang-cpp.so.19.1.
std::optional<int> library_major(std::string_view name) {
  for (std::string_view prefix : {"libLLVM.so.", "libclang-cpp.so.", "libLLVM-"}) {
    if (!name.starts_with(prefix)) continue;
    auto n = leading_number(name.substr(prefix.size()));
    if (n) return n;
  }
  return std::nullopt;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::optional<ParentLlvm> llvm_release_of(const std::string& executable, const std::string& maps) {
  std::string_view exe = executable;
  if (exe.ends_with(" (deleted)")) exe.remove_suffix(10);
  std::string_view name = exe.substr(exe.find_last_of('/') + 1);
  auto folder = llvm_folder_major(exe);
  if (!name.starts_with("clang") && !name.starts_with("llvm") && !folder) return std::nullopt;

  ParentLlvm p{std::string(exe), std::nullopt, {}};
  std::set<int> majors;
  std::string signs;
  auto note = [&](std::optional<int> n, std::string_view what) {
    if (!n) return;
    majors.insert(*n);
    signs += fmt::format("{}{} {}", signs.empty() ? "" : ", ", what, *n);
  };
  note(folder, "folder llvm-");
  note(name_suffix_major(name), "name suffix -");
  std::set<std::string> libraries;
  std::istringstream lines(maps);
  for (std::string line; std::getline(lines, line);) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string_view path = std::string_view(line).substr(slash);
    std::string_view lib = path.substr(path.find_last_of('/') + 1);
    if (auto n = library_major(lib); n && libraries.insert(std::string(lib)).second)
      note(n, fmt::format("maps {}:", lib));
  }
  if (majors.size() == 1) {
    p.major = *majors.begin();
    p.evidence = signs;
  } else if (majors.empty()) {
    p.evidence = "no sign of its release";
  } else {
    p.evidence = fmt::format("signs disagree ({})", signs);
  }
  return p;
}

std::optional<ParentLlvm> parent_llvm() {
  std::string proc = fmt::format("/proc/{}", getppid());
  char buf[4096];
  ssize_t n = readlink((proc + "/exe").c_str(), buf, sizeof buf - 1);
  if (n <= 0) return std::nullopt;
  std::string exe(buf, static_cast<std::size_t>(n));
  std::string_view name = std::string_view(exe).substr(exe.find_last_of('/') + 1);
  // Read the maps only of a parent that may be an LLVM tool (they are a few
  // hundred lines; a shell's or make's are never needed).
  if (!name.starts_with("clang") && !name.starts_with("llvm") && !llvm_folder_major(exe)) return std::nullopt;
  return llvm_release_of(exe, read_all(proc + "/maps"));
}

}  // namespace ot
