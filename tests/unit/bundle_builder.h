// Building binary offload bundles in unit tests (from formats' layout, whose
// bytes are checked against LLVM 19's golden bundles in bundle_formats_test).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "formats/bundle_binary.h"

namespace ot::test {

inline std::vector<std::byte> assemble_binary(const std::vector<std::string>& ids,
                                              const std::vector<std::vector<std::byte>>& payloads, std::uint64_t align) {
  std::vector<std::uint64_t> sizes;
  for (const auto& p : payloads) sizes.push_back(p.size());
  auto layout = formats::layout_binary_bundle(ids, sizes, align);
  std::vector<std::byte> out(layout.total_size);
  std::copy(layout.header.begin(), layout.header.end(), out.begin());
  for (std::size_t i = 0; i < payloads.size(); ++i)
    std::copy(payloads[i].begin(), payloads[i].end(), out.begin() + static_cast<std::ptrdiff_t>(layout.offsets[i]));
  return out;
}

}  // namespace ot::test
