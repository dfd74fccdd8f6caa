// libFuzzer: the binary bundle reader and the StringMap order over its IDs.
#include <cstddef>
#include <cstdint>

#include "formats/bundle_binary.h"
#include "support/llvm_stringmap.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ot::Bytes bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    auto entries = ot::formats::read_binary_bundle(bytes, "fuzz.bc");
    std::vector<std::string> ids;
    for (const auto& e : entries) {
      if (e.offset + e.size > size) __builtin_trap();  // the reader promised bounds
      ids.push_back(e.id);
    }
    (void)ot::stringmap_order(ids);
  } catch (const ot::Error&) {
  }
  return 0;
}
