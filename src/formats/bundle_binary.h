// The binary offload-bundle layout (reference section 2.8):
//   "__CLANG_OFFLOAD_BUNDLE__", u64 N, N x {u64 offset, u64 size, u64 id length, id},
//   then the payloads at their (aligned, zero-padded) offsets. All little-endian.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "support/bytes.h"

namespace ot::formats {

// The record a HIP program registers a blob of bundles with (clang's
// __hip_fatbin_wrapper in .hipFatBinSegment; ".hipFatB" in a PE image):
// { uint32 magic ("FPIH"), version; void* binary; void* unused; }
inline constexpr std::uint32_t kHipWrapperMagic = 0x48495046;
inline constexpr std::uint64_t kHipWrapperSize = 24, kHipWrapperBinary = 8;

inline constexpr std::string_view kBundleMagic = "__CLANG_OFFLOAD_BUNDLE__";

struct BundleEntry {
  std::string id;
  std::uint64_t offset = 0;  // of the payload, in the (uncompressed) bundle
  std::uint64_t size = 0;
};

bool has_binary_bundle_magic(Bytes data);

// Every entry in file order. Unlike LLVM (which silently stops at the first bad
// entry), a malformed header is an error naming the file and offset: a
// truncated table, a payload outside the file or overlapping the header,
// overflowing sums and duplicate IDs.
std::vector<BundleEntry> read_binary_bundle(Bytes data, const std::string& file);
// The same through a source that may read the header with pread (the payloads
// are not read): listing a large blob maps none of its pages in.
std::vector<BundleEntry> read_binary_bundle(const ByteSource& src, const std::string& file);
// The same, with `buf` holding src's first bytes as far as they were read
// already (ByteSource::prefix's buffer): they are not read again.
std::vector<BundleEntry> read_binary_bundle(const ByteSource& src, const std::string& file, std::vector<std::byte>& buf);

// LLVM 23's reading of a header it found by searching for the magic
// (observed): nullopt when the header is cut short (its count, or an entry's
// fields or ID, past the end of `data`): the bundle is not taken at all;
// otherwise the entries up to the first with offset 0 or whose payload runs
// past the end (LLVM stops there silently); a later entry of an ID replaces
// the earlier.
std::optional<std::vector<BundleEntry>> read_binary_bundle_leniently(Bytes data);

// Header bytes and payload offsets for payloads of the given sizes, in order.
struct BinaryBundleLayout {
  std::vector<std::byte> header;
  std::vector<std::uint64_t> offsets;
  std::uint64_t total_size = 0;
};
BinaryBundleLayout layout_binary_bundle(std::span<const std::string> ids, std::span<const std::uint64_t> sizes,
                                        std::uint64_t align);

}  // namespace ot::formats
