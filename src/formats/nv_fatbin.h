// NVIDIA fat binaries (magic 0xBA55ED50): the container nvcc, clang's classic
// CUDA path and NVIDIA's fatbinary put in a host file's .nv_fatbin and
// __nv_relfatbin sections, or write standalone (.fatbin). Not documented by
// NVIDIA beyond its 16-byte outer header (fatbinary.h); the entry header
// below is the layout every file we looked at holds (tests/data/nvidia/).
//
//   fatbin   u32 magic 0xBA55ED50, u16 version 1, u16 header size (16),
//            u64 size of the entries that follow
//   entry    u16 kind (1 PTX, 2 ELF cubin), u16 version (0x0101),
//            u32 header size, u64 payload size (padded to 8: the next entry
//            starts at entry + header size + payload size),
//            u32 compressed size (exact; 0 when stored plainly),
//            u32 options area (0x40 when the header has one: {u32 offset,
//            u32 length} of the ptxas options, from the entry's start),
//            u16 minor, u16 major (cubin format / PTX ISA version), u32 arch (80),
//            u32 identifier offset, u32 identifier length, u64 flags,
//            u64 (zero), u64 uncompressed size (0 when stored plainly)
//   flags    0x1 64-bit, 0x2 debug, 0x10 Linux host, 0x2000 LZ4 block,
//            0x8000 zstd frame, 0x100000 arch-specific (sm_90a),
//            0x200000 family-specific (sm_100f)
//
// A section holds fatbins back to back (each bounded by its own header);
// zero bytes between them (an input section's alignment) are skipped.
// Headers are read through a ByteSource: listing a 575 MB library reads its
// few thousand headers, never its payloads.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "support/bytes.h"

namespace ot::formats {

inline constexpr std::uint32_t kFatbinMagic = 0xBA55ED50;
// __fatBinC_Wrapper_t { u32 magic, u32 version (1, or 2 for nvlink's linked
// fatbin), u64 data (the fatbin), u64 filename_or_fatbins }: the 24-byte
// records of .nvFatBinSegment that register each fatbin.
inline constexpr std::uint32_t kFatbinWrapperMagic = 0x466243B1;
inline constexpr std::uint64_t kFatbinWrapperSize = 24;
inline constexpr std::uint64_t kFatbinHeaderSize = 16;
inline constexpr std::uint64_t kFatbinEntryHeaderSize = 64;

enum class FatbinCompression { None, Lz4, Zstd };

inline constexpr std::uint16_t kFatbinKindPtx = 1, kFatbinKindElf = 2;
inline constexpr std::uint64_t kFatbinFlagLz4 = 0x2000, kFatbinFlagZstd = 0x8000;
inline constexpr std::uint64_t kFatbinFlagArchSpecific = 0x100000, kFatbinFlagFamily = 0x200000;

bool has_fatbin_magic(Bytes data);
// The sections fatbins live in: .nv_fatbin (linked device code),
// __nv_relfatbin (relocatable device code, -rdc), and COFF's 8-byte ".nv_fatb"
// (nvcc's on Windows).
bool is_fatbin_section(std::string_view name);

struct FatbinEntry {
  std::uint64_t offset = 0;  // of the entry header, from the start of the data given to the reader
  std::uint16_t kind = 0;
  std::uint16_t version = 0;
  std::uint32_t header_size = 0;
  std::uint64_t payload_size = 0;  // as stored, padding included
  std::uint32_t compressed_size = 0;
  std::uint16_t major = 0, minor = 0;
  std::uint32_t arch = 0;
  std::uint64_t flags = 0;
  std::uint64_t uncompressed_size_field = 0;
  std::string identifier;  // the producer's name for the image, "" when none
  std::string options;     // ptxas options of a PTX entry, "" when none

  FatbinCompression compression() const;
  std::uint64_t payload_offset() const { return offset + header_size; }
  // The bytes the payload takes as stored: the compressed size (exact) or the
  // padded payload.
  std::uint64_t stored_size() const;
  // What the payload decompresses to (the declared size), or the stored size.
  std::uint64_t uncompressed_size() const;
  std::uint64_t end() const { return offset + header_size + payload_size; }
  // "cubin", "ptx", or "kind 0x10" for a kind this reader does not know.
  std::string kind_name() const;
  // "sm_80", "sm_90a", "sm_100f" (cubins), "compute_80" ... (PTX); for an
  // unknown kind "fatbin-kind-0x10-sm_80", which names no target.
  std::string target() const;
};

struct Fatbin {
  std::uint64_t offset = 0;  // of the 16-byte header, from the start of the data given to the reader
  std::uint16_t header_size = 0;
  std::uint64_t size = 0;    // header and entries
  std::vector<FatbinEntry> entries;
};

// Every fatbin of `src` (a section, a .fatbin file), zero padding between
// them skipped; `src` must start with a fatbin. Every size is checked against
// its fatbin and the data. Errors name `file` and the absolute offset
// `base + ...`.
std::vector<Fatbin> read_fatbins(const ByteSource& src, const std::string& file, std::uint64_t base = 0);

// The fatbin at `offset` of `src`.
Fatbin read_fatbin(const ByteSource& src, std::uint64_t offset, const std::string& file, std::uint64_t base = 0);

// The entry's payload as the image it holds: decompressed (LZ4 block or zstd
// frame) to exactly the declared size, at most `limit` bytes (more is a
// refusal: a decompression bomb?); a plain payload as stored. `stored` is the
// entry's stored_size() bytes. Errors name `file` and `at` (the payload's
// absolute offset).
std::vector<std::byte> fatbin_image(const FatbinEntry& e, Bytes stored, std::uint64_t limit, const std::string& file,
                                    std::uint64_t at);
// fatbin_image's refusals, before anything is allocated: a declared size over
// `limit`, or more than the stored bytes can decode to.
void check_fatbin_image(const FatbinEntry& e, Bytes stored, std::uint64_t limit, const std::string& file,
                        std::uint64_t at);
// The image decoded into `dst` (exactly uncompressed_size() bytes: a mapped
// output file, say); `produced(n)`: the first n bytes are final (zstd, which
// decodes in order; the caller may drop them from memory). Call
// check_fatbin_image first.
void fatbin_image_into(const FatbinEntry& e, Bytes stored, std::span<std::byte> dst, const std::string& file,
                       std::uint64_t at, const std::function<void(std::uint64_t)>& produced = {});

// One fatbin rewritten with only `keep`'s entries (indices into f.entries, in
// order): the new 16-byte header, then each kept entry's header and payload
// as stored. The pieces point into `fatbin` (the fatbin's bytes) except the
// header, which goes to `header_out`.
std::vector<Bytes> prune_fatbin(Bytes fatbin, const Fatbin& f, const std::vector<std::size_t>& keep,
                                std::array<std::byte, kFatbinHeaderSize>& header_out);

}  // namespace ot::formats
