// The iteration order of llvm::StringMap, which LLVM's bundler exposes in
// `-list` output and in the order it matches binary-bundle entries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ot {

enum class StringMapHash {
  Xxh3,  // LLVM 17+: low 32 bits of XXH3_64bits(key)
  Djb0,  // LLVM 14: djbHash with seed 0
};

std::uint32_t stringmap_hash(std::string_view key, StringMapHash kind);

// Insert `keys` in order into a model of llvm::StringMap (16 initial buckets,
// triangular probing, grow x2 past 3/4 full) and return the indices of the
// distinct keys (first occurrence) in bucket (= iteration) order.
std::vector<std::size_t> stringmap_order(std::span<const std::string> keys, StringMapHash kind = StringMapHash::Xxh3);

}  // namespace ot
