// libFuzzer: CCOB headers and bounded decompression (zstd and zlib).
#include <cstddef>
#include <cstdint>

#include "compress/codec.h"
#include "formats/compressed_bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ot::Bytes bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    auto h = ot::formats::read_ccob_header(bytes, "fuzz.ccob");
    auto payload = ot::formats::ccob_payload(bytes, h);
    // Cap what a fuzz run may allocate; the codec's own bound applies first.
    if (h.uncompressed_size <= (64u << 20)) (void)ot::compress::decompress(h.method, payload, h.uncompressed_size);
  } catch (const ot::Error&) {
  }
  return 0;
}
