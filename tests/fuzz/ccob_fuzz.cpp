// libFuzzer: CCOB headers and bounded decompression (zstd and zlib), one-shot
// and into a destination in steps of whole blocks (decompress_into): where both
// succeed they give the same bytes. (They may differ in what they accept: the
// one-shot call reads concatenated frames and any window, as LLVM's does.)
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <vector>

#include "codec/codec.h"
#include "formats/compressed_bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ot::Bytes bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    auto h = ot::formats::read_ccob_header(bytes, "fuzz.ccob");
    auto payload = ot::formats::ccob_payload(bytes, h);
    // Cap what a fuzz run may allocate; the codec's own bound applies first.
    if (h.uncompressed_size > (64u << 20)) return 0;
    std::optional<std::vector<std::byte>> whole;
    try {
      whole = ot::codec::decompress(h.method, payload, h.uncompressed_size);
    } catch (const ot::Error&) {
    }
    if (h.uncompressed_size > (1u << 20)) return 0;
    std::vector<std::byte> into(h.uncompressed_size);
    bool ok = true;
    try {
      ot::codec::decompress_into(h.method, payload, into, {});
    } catch (const ot::Error&) {
      ok = false;
    }
    if (ok && whole && into != *whole) std::abort();
  } catch (const ot::Error&) {
  }
  return 0;
}
