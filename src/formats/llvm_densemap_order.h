// The order in which LLVM 19 iterates a DenseMap<StringRef, ...>: the packager
// stores an image's key=value arguments in one and writes the string entries of
// an OffloadBinary in that order (llvm-behaviour.md section 1.3), so byte
// identity needs the same hash, the same probing and the same growth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace ot::formats {

// llvm::hash_value(StringRef) of LLVM 19 and 22 release builds (LLVM 22's cl
// hashes option names with it too): hash_combine_range over the bytes with
// the fixed execution seed 0xff51afd7ed558ccd.
std::uint64_t llvm_hash_value(std::string_view s);

// Iteration order of a DenseMap into which the distinct `keys` were inserted in
// the given order (no erasures): the result lists indices into `keys`.
std::vector<std::size_t> densemap_iteration_order(std::span<const std::string_view> keys);

}  // namespace ot::formats
