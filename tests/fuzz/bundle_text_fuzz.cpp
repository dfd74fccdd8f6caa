// libFuzzer: the text bundle reader for every comment style.
#include <cstddef>
#include <cstdint>

#include "formats/bundle_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ot::Bytes bytes(reinterpret_cast<const std::byte*>(data), size);
  for (const char* comment : {"//", "#", ";"}) {
    try {
      for (const auto& e : ot::formats::read_text_bundle(bytes, comment, "fuzz.i"))
        if (e.offset + e.size > size) __builtin_trap();
    } catch (const ot::Error&) {
    }
  }
  return 0;
}
