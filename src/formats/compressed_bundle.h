// CCOB: LLVM's compressed offload bundle (reference section 2.13).
//   v1: "CCOB" u16 version u16 method u32 uncompressed_size u64 hash            (20 bytes)
//   v2: "CCOB" u16 version u16 method u32 total_size u32 uncompressed_size u64 hash (24)
//   v3: "CCOB" u16 version u16 method u64 total_size u64 uncompressed_size u64 hash (32)
// hash = truncated MD5 of the uncompressed payload; total = header + compressed bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codec/codec.h"
#include "support/bytes.h"

namespace ot::formats {

inline constexpr std::string_view kCcobMagic = "CCOB";

struct CcobHeader {
  std::uint16_t version = 2;
  codec::Method method = codec::Method::Zstd;
  std::uint64_t header_size = 24;
  std::optional<std::uint64_t> total_size;  // v2, v3
  std::uint64_t uncompressed_size = 0;
  std::uint64_t hash = 0;
};

bool has_ccob_magic(Bytes data);

// Parse and validate a header at the start of `data`: known version (1-3) and
// method, sizes inside the file. Errors name `file` and the field's offset.
CcobHeader read_ccob_header(Bytes data, const std::string& file);
// The same from the first bytes of a compressed bundle of `size` bytes: `head`
// holds at least kMaxCcobHeaderSize bytes, or all of them.
inline constexpr std::size_t kMaxCcobHeaderSize = 32;
CcobHeader read_ccob_header(Bytes head, std::uint64_t size, const std::string& file);

// The compressed bytes the header describes: up to total_size for v2/v3, the
// rest of the data for v1.
Bytes ccob_payload(Bytes data, const CcobHeader& h);

std::vector<std::byte> write_ccob_header(const CcobHeader& h);
std::uint64_t ccob_header_size(std::uint16_t version);

}  // namespace ot::formats
