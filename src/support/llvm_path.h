// LLVM's sys::path::filename / stem / extension for POSIX paths (the names
// LLVM's tools derive output and member names from): the last component ("."
// when the path ends in '/', "/" for a path of slashes), that component
// without its last extension ("." and ".." keep theirs), and that extension
// with its dot. Views into `path`.
#pragma once

#include <string_view>

namespace ot::llvm_path {

inline std::string_view filename(std::string_view path) {
  if (path.empty()) return path;
  if (path.find_first_not_of('/') == std::string_view::npos) return "/";
  if (path.back() == '/') return ".";
  const auto slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

inline std::string_view stem(std::string_view path) {
  const std::string_view name = filename(path);
  if (name == "." || name == "..") return name;
  const auto dot = name.find_last_of('.');
  return dot == std::string_view::npos ? name : name.substr(0, dot);
}

inline std::string_view extension(std::string_view path) {
  const std::string_view name = filename(path);
  if (name == "." || name == "..") return {};
  const auto dot = name.find_last_of('.');
  return dot == std::string_view::npos ? std::string_view{} : name.substr(dot);
}

}  // namespace ot::llvm_path
