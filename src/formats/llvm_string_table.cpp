#include "formats/llvm_string_table.h"

#include <algorithm>
#include <cassert>
#include <vector>

namespace ot::formats {
namespace {

// true when `a` sorts before `b`: compare the strings from their ends, bytes
// unsigned, descending; a string that runs out first (a proper suffix of the
// other) sorts after it.
bool tail_descending(std::string_view a, std::string_view b) {
  auto ia = a.rbegin(), ib = b.rbegin();
  for (; ia != a.rend() && ib != b.rend(); ++ia, ++ib) {
    auto ca = static_cast<unsigned char>(*ia), cb = static_cast<unsigned char>(*ib);
    if (ca != cb) return ca > cb;
  }
  return ia != a.rend() && ib == b.rend();
}

}  // namespace

void ElfStringTable::finalize() {
  assert(!finalized_);
  finalized_ = true;
  std::vector<std::pair<const std::string, std::uint64_t>*> order;
  order.reserve(offsets_.size());
  for (auto& entry : offsets_) order.push_back(&entry);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return tail_descending(a->first, b->first); });

  data_.assign(1, '\0');
  std::string_view previous;
  for (auto* entry : order) {
    const std::string& s = entry->first;
    if (previous.ends_with(s)) {
      entry->second = data_.size() - s.size() - 1;
      continue;
    }
    entry->second = data_.size();
    data_.append(s).push_back('\0');
    previous = s;
  }
  // The empty string names the leading NUL, whatever the tail sharing chose.
  if (auto it = offsets_.find(std::string_view()); it != offsets_.end()) it->second = 0;
}

std::uint64_t ElfStringTable::offset(std::string_view s) const {
  assert(finalized_);
  auto it = offsets_.find(s);
  assert(it != offsets_.end());
  return it->second;
}

}  // namespace ot::formats
