#include "formats/compressed_bundle.h"

namespace ot::formats {

bool has_ccob_magic(Bytes data) { return data.size() >= 4 && as_chars(data.first(4)) == kCcobMagic; }

std::uint64_t ccob_header_size(std::uint16_t version) { return version == 1 ? 20 : version == 2 ? 24 : 32; }

CcobHeader read_ccob_header(Bytes data, const std::string& file) { return read_ccob_header(data, data.size(), file); }

CcobHeader read_ccob_header(Bytes data, std::uint64_t size, const std::string& file) {
  ByteReader r(data, file);
  if (!has_ccob_magic(data)) fail_at({file, 0}, "not a compressed offload bundle (no CCOB magic)");
  CcobHeader h;
  h.version = load_le<std::uint16_t>(r.slice(4, 2, "compressed bundle version").data());
  if (h.version < 1 || h.version > 3) fail_at({file, 4}, "unknown compressed bundle version {}", h.version);
  std::uint16_t method = load_le<std::uint16_t>(r.slice(6, 2, "compressed bundle method").data());
  if (method > 1) fail_at({file, 6}, "unknown compression method {}", method);
  h.method = static_cast<codec::Method>(method);
  h.header_size = ccob_header_size(h.version);
  r.slice(0, h.header_size, "compressed bundle header");
  if (h.version == 1) {
    h.uncompressed_size = load_le<std::uint32_t>(data.data() + 8);
    h.hash = load_le<std::uint64_t>(data.data() + 12);
  } else if (h.version == 2) {
    h.total_size = load_le<std::uint32_t>(data.data() + 8);
    h.uncompressed_size = load_le<std::uint32_t>(data.data() + 12);
    h.hash = load_le<std::uint64_t>(data.data() + 16);
  } else {
    h.total_size = load_le<std::uint64_t>(data.data() + 8);
    h.uncompressed_size = load_le<std::uint64_t>(data.data() + 16);
    h.hash = load_le<std::uint64_t>(data.data() + 24);
  }
  if (h.total_size) {
    if (*h.total_size < h.header_size)
      fail_at({file, 8}, "compressed bundle total size 0x{:x} is smaller than its header (0x{:x} bytes)", *h.total_size,
              h.header_size);
    if (*h.total_size > size)
      fail_at({file, 8}, "compressed bundle total size 0x{:x} exceeds the file size 0x{:x}", *h.total_size, size);
  }
  return h;
}

Bytes ccob_payload(Bytes data, const CcobHeader& h) {
  std::uint64_t end = h.total_size ? *h.total_size : data.size();
  return data.subspan(h.header_size, end - h.header_size);
}

std::vector<std::byte> write_ccob_header(const CcobHeader& h) {
  std::vector<std::byte> out(ccob_header_size(h.version));
  std::byte* p = out.data();
  std::memcpy(p, kCcobMagic.data(), 4);
  store_le<std::uint16_t>(p + 4, h.version);
  store_le<std::uint16_t>(p + 6, static_cast<std::uint16_t>(h.method));
  if (h.version == 1) {
    store_le<std::uint32_t>(p + 8, static_cast<std::uint32_t>(h.uncompressed_size));
    store_le<std::uint64_t>(p + 12, h.hash);
  } else if (h.version == 2) {
    store_le<std::uint32_t>(p + 8, static_cast<std::uint32_t>(h.total_size.value_or(0)));
    store_le<std::uint32_t>(p + 12, static_cast<std::uint32_t>(h.uncompressed_size));
    store_le<std::uint64_t>(p + 16, h.hash);
  } else {
    store_le<std::uint64_t>(p + 8, h.total_size.value_or(0));
    store_le<std::uint64_t>(p + 16, h.uncompressed_size);
    store_le<std::uint64_t>(p + 24, h.hash);
  }
  return out;
}

}  // namespace ot::formats
