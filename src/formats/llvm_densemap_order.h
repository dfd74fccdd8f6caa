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
// LLVM 23's (PR #194567): xxh3_64bits(s) ^ 0xff51afd7ed558ccd (the same seed).
std::uint64_t llvm23_hash_value(std::string_view s);

// Iteration order of a DenseMap into which the distinct `keys` were inserted in
// the given order (no erasures): the result lists indices into `keys`. `hash`:
// the release's hash_value (llvm_hash_value up to 22, llvm23_hash_value).
// Probing: quadratic (b += p++) up to 22; linear (b += 1) in 23 (observed:
// llvm-offload-binary 23 with 40 to 300 keys, where the two part).
std::vector<std::size_t> densemap_iteration_order(std::span<const std::string_view> keys,
                                                  std::uint64_t (*hash)(std::string_view) = llvm_hash_value,
                                                  bool linear_probing = false);

}  // namespace ot::formats
