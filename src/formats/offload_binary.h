// OffloadBinary (magic 10 FF 10 AD): the container clang's offloading driver
// embeds in a host object's .llvm.offloading section (llvm-behaviour.md
// section 3). Version 1 is read and written byte-identically to LLVM 19;
// version 2 (several entries per header, length-delimited values) is read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "support/bytes.h"
#include "target/llvm_release.h"

namespace ot::formats {

// Spirv (6) is LLVM 23's (target::ReleaseTraits::spirv_image_kind).
enum class ImageKind : std::uint16_t {
  None = 0, Object = 1, Bitcode = 2, Cubin = 3, Fatbinary = 4, Ptx = 5, Spirv = 6
};
// The OffloadKind numbers every supported release gives the same meaning.
// HIP's and SYCL's depend on the release (target::ReleaseTraits: hip 3 in 19,
// 4 in 22; sycl 0 in 19, 8 in 22), so they are not constants here.
enum class OffloadKind : std::uint16_t { None = 0, OpenMP = 1, Cuda = 2 };

inline constexpr std::uint64_t kOffloadHeaderSize = 32;
inline constexpr std::uint64_t kOffloadEntrySize = 40;
inline constexpr std::uint64_t kOffloadStringEntrySizeV1 = 16;
inline constexpr std::uint64_t kOffloadStringEntrySizeV2 = 24;
inline constexpr std::uint64_t kOffloadAlignment = 8;

bool has_offload_binary_magic(Bytes data);
// LLVM bitcode, raw (BC C0 DE) or in the bitcode wrapper (DE C0 17 0B).
bool is_llvm_bitcode(Bytes data);

// getImageKind of `release`: "o" "bc" "cubin" "fatbin" "s" -> 1..5, "spv" -> 6
// where the release knows SPIR-V (23), anything else 0.
ImageKind image_kind_from_extension(std::string_view ext, target::LlvmRelease release = target::LlvmRelease::Llvm19);
// getImageKindName of `release`: the extension for a kind, "" for 0 and
// values the release does not know.
std::string_view image_kind_extension(std::uint16_t kind, target::LlvmRelease release = target::LlvmRelease::Llvm19);
// llvm-objdump --offloading's text: "elf" "llvm ir" "cubin" "fatbinary" "ptx", else "<none>".
std::string_view image_kind_description(std::uint16_t kind);
// getOffloadKind of `release`: exact "openmp" 1, "cuda" 2, "hip" and "sycl"
// that release's numbers, anything else 0 (so "sycl" is 0 under 19).
std::uint16_t offload_kind_number(std::string_view name, target::LlvmRelease release);
// getOffloadKindName for a reader of any release: "openmp" "cuda", "hip" for
// each supported release's number (3 and 4), "sycl" likewise (8), "none" for 0
// and unknown values. A file does not say which release wrote it, and no
// number means one kind in one release and another kind in another.
std::string_view offload_kind_name(std::uint16_t kind);

struct OffloadString {
  std::string key;
  std::string value;
  bool operator==(const OffloadString&) const = default;
};

// ---- Reading -----------------------------------------------------------------

struct OffloadEntry {
  std::uint16_t image_kind = 0;
  std::uint16_t offload_kind = 0;
  std::uint32_t flags = 0;
  std::vector<OffloadString> strings;  // in file order
  std::uint64_t image_offset = 0;      // from the start of the data given to the reader
  std::uint64_t image_size = 0;

  // What LLVM's getString(key) answers: the last string with that key, "" if none.
  std::string_view get(std::string_view key) const;
  std::string_view triple() const { return get("triple"); }
  std::string_view arch() const { return get("arch"); }
  // How list names the entry: "<kind>-<triple>-<arch>" ("openmp-amdgcn-amd-amdhsa-gfx90a").
  std::string id() const;
};

struct OffloadBinary {
  std::uint32_t version = 0;
  std::uint64_t offset = 0;  // of the header, from the start of the data given to the reader
  std::uint64_t size = 0;    // the header's size field
  std::vector<OffloadEntry> entries;  // version 1: exactly one
};

// The binary starting at `offset` of `data`. Every offset, size and string is
// bounds-checked against the binary's own size. Errors name `file` and the
// absolute offset `base + ...` (base = where `data` starts inside `file`).
OffloadBinary read_offload_binary(Bytes data, std::uint64_t offset, const std::string& file,
                                  std::uint64_t base = 0);

// Every binary of a run of concatenated ones filling `data`. As in LLVM 19 the
// next binary starts right after the previous one's `size` bytes.
std::vector<OffloadBinary> read_offload_binaries(Bytes data, const std::string& file, std::uint64_t base = 0);

// The error LLVM 19's OffloadBinary::create reports for the binary at the
// start of `rest` (the bytes from there to the end of its container), or
// None when LLVM accepts it. LLVM checks far less than read_offload_binary;
// the personalities use this to print LLVM's words where LLVM fails.
// 22's reader checks the same.
enum class Llvm19Verdict { Accepted, ParseFailed, UnexpectedEof };
Llvm19Verdict llvm19_verdict(Bytes rest);
// LLVM 23's (docs/llvm23.md): versions 1 and 2; under 72 bytes, a bad magic
// or another version is ParseFailed; a size past `rest` or under 40 bytes,
// entries past the size, or an entry whose image offset, string records
// (24 bytes each, version 1 too) or their offset lie past it is
// UnexpectedEof. A version 1's field at 0x18 is not read.
Llvm19Verdict llvm23_verdict(Bytes rest);
// The verdict of `release`'s reader (ReleaseTraits::offload_binary_version:
// 1 reads as 19, 2 as 23).
Llvm19Verdict llvm_verdict(Bytes rest, target::LlvmRelease release);
// object_error texts: "Invalid data was encountered while parsing the file" /
// "The end of the file was unexpectedly encountered".
std::string_view llvm19_verdict_text(Llvm19Verdict v);

// ---- Writing (version 1) -----------------------------------------------------

struct OffloadImageDesc {
  std::uint16_t image_kind = 0;
  std::uint16_t offload_kind = 0;
  std::uint32_t flags = 0;
  std::vector<OffloadString> strings;  // string entries in this order
  std::uint64_t image_size = 0;
};

// Everything around the image bytes, computed from the sizes alone so that
// the image itself can be streamed: head (header, entry, string entries,
// string table, zero padding; exactly the image offset bytes), then the image,
// then tail_padding zero bytes.
struct OffloadBinaryFrame {
  std::vector<std::byte> head;
  std::uint64_t image_size = 0;
  std::uint64_t tail_padding = 0;
  std::uint64_t total_size() const { return head.size() + image_size + tail_padding; }
};

OffloadBinaryFrame frame_offload_binary_v1(const OffloadImageDesc& desc);

// Version 2 (LLVM 23's llvm-offload-binary, reference 2.1): one binary for all
// images. Header (entry count at 0x18), N 40-byte entries, every entry's
// 24-byte string records {key, value, value length} in entry order, one
// string table for all (LLVM's StringTableBuilder), zero padding to 8, the
// images back to back with no padding between them, zero padding to 8. No
// image: a 40-byte binary. `head` is everything before the first image;
// `image_size` the images' total, `tail_padding` what follows them.
OffloadBinaryFrame frame_offload_binary_v2(const std::vector<OffloadImageDesc>& descs);
// The whole binary in memory (small images, tests).
std::vector<std::byte> write_offload_binary_v1(OffloadImageDesc desc, Bytes image);

}  // namespace ot::formats
