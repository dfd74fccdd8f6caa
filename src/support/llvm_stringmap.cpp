#include "support/llvm_stringmap.h"

#include <xxhash.h>

namespace ot {

std::uint32_t stringmap_hash(std::string_view key, StringMapHash kind) {
  if (kind == StringMapHash::Xxh3) return static_cast<std::uint32_t>(XXH3_64bits(key.data(), key.size()));
  std::uint32_t h = 0;
  for (unsigned char c : key) h = h * 33 + c;
  return h;
}

std::vector<std::size_t> stringmap_order(std::span<const std::string> keys, StringMapHash kind) {
  struct Slot {
    bool used = false;
    std::uint32_t hash = 0;
    std::size_t index = 0;
  };
  std::vector<Slot> table(16);
  std::size_t items = 0;
  auto place = [](std::vector<Slot>& t, std::uint32_t hash) {
    std::size_t mask = t.size() - 1, b = hash & mask, probe = 1;
    while (t[b].used) b = (b + probe++) & mask;
    return b;
  };
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::uint32_t h = stringmap_hash(keys[i], kind);
    std::size_t mask = table.size() - 1, b = h & mask, probe = 1;
    bool found = false;
    while (table[b].used) {
      if (table[b].hash == h && keys[table[b].index] == keys[i]) {
        found = true;
        break;
      }
      b = (b + probe++) & mask;
    }
    if (found) continue;
    table[b] = {true, h, i};
    ++items;
    if (items * 4 > table.size() * 3) {
      std::vector<Slot> bigger(table.size() * 2);
      for (const Slot& s : table)
        if (s.used) bigger[place(bigger, s.hash)] = s;
      table = std::move(bigger);
    }
  }
  std::vector<std::size_t> order;
  for (const Slot& s : table)
    if (s.used) order.push_back(s.index);
  return order;
}

}  // namespace ot
