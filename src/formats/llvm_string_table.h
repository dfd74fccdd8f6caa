// The string table LLVM's StringTableBuilder lays out in ELF mode (section 1.4):
// a leading NUL, distinct strings sorted from their last character backwards in
// descending order, and a string stored as the tail of the one placed just
// before it when it is a suffix of it. OffloadBinary string tables use it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace ot::formats {

class ElfStringTable {
 public:
  void add(std::string_view s) { offsets_.try_emplace(std::string(s), 0); }
  // Assign the offsets and build the bytes; add() must not be called afterwards.
  void finalize();

  // Offset of an added string (the empty string is always 0).
  std::uint64_t offset(std::string_view s) const;
  const std::string& data() const { return data_; }
  std::uint64_t size() const { return data_.size(); }

 private:
  std::map<std::string, std::uint64_t, std::less<>> offsets_;
  std::string data_;
  bool finalized_ = false;
};

}  // namespace ot::formats
