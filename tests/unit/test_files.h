// Reading the reference files under tests/data in unit tests.
#pragma once

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <cstddef>

namespace ot::test {

inline std::string data_path(const std::string& rel) { return std::string(OT_TEST_DATA) + "/" + rel; }

inline std::vector<std::byte> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!f.good() && !f.eof()) throw std::runtime_error("cannot read " + path);
  std::vector<std::byte> out(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) out[i] = static_cast<std::byte>(s[i]);
  return out;
}

inline std::vector<std::byte> golden(const std::string& name) {
  auto b = read_bytes(data_path("reference/golden/" + name));
  if (b.empty()) throw std::runtime_error("missing golden file " + name);
  return b;
}

inline std::vector<std::byte> bytes_of(std::string_view s) {
  std::vector<std::byte> out(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) out[i] = static_cast<std::byte>(s[i]);
  return out;
}

}  // namespace ot::test
