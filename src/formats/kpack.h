// AMD's kpack (ROCm/rocm-kpack, TheRock's multi-arch packaging): per-architecture
// archives of HIP code objects, and the marker a "kpack'd" host binary carries in
// place of its device code. docs/kpack.md says how archives are found.
//
//   archive   0   "KPAK"
//             4   u32 version (1)
//             8   u64 toc_offset (absolute)
//             16  zero padding to 64
//             64  blob area: scheme "none": code objects back to back,
//                 blobs[ordinal] = {offset (absolute), size};
//                 scheme "zstd-per-kernel": u32 num_kernels, then per ordinal
//                 u32 frame size + one zstd frame (content size in its header)
//             toc_offset  one MessagePack map to EOF:
//                 {format_version, group_name, gfx_arch_family, gfx_arches[],
//                  toc: {binary key ("lib/libx.so#3") → {arch ("gfx90a:xnack-") →
//                        {type "hsaco", ordinal, original_size[, metadata]}}},
//                  compression_scheme, blobs[] | zstd_offset + zstd_size}
//   marker    section .rocm_kpack_ref (ELF) / .kpackrf (PE): one MessagePack map
//             {kpack_search_paths: [str...], kernel_name: str}; the loader looks up
//             kernel_name + "#" + the record's index in the archives the paths name
//             (the first "@GFXARCH@" of each replaced by an architecture)
//   record    the 24-byte wrapper of .hipFatBinSegment / .hipFatB, magic "HIPK"
//             (instead of clang's "HIPF"), u32 version 1, u64 pointer to the
//             marker (ELF: 0, the value lives in the RELATIVE relocation's
//             addend), u64 index (u32 in bytes 16..19)
//
// MessagePack comes from msgpack-c++ (Debian's libmsgpack-cxx-dev); its packer
// writes the smallest form of every integer, string (str8 included), array and
// map header, as msgpack-python does, so the writer's bytes are AMD's Python
// writer's byte for byte (tests/golden/kpack).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "support/bytes.h"

namespace ot::formats {

inline constexpr std::string_view kKpackMagic = "KPAK";
inline constexpr std::uint32_t kKpackVersion = 1;
inline constexpr std::uint64_t kKpackHeaderSize = 16;
inline constexpr std::uint64_t kKpackBlobStart = 64;  // where AMD's writer starts the blob area
// The AMD loader's bound on num_kernels of a zstd-per-kernel area.
inline constexpr std::uint32_t kKpackMaxKernels = 1u << 20;
// The loader parses a marker from its record's pointer with this upper bound.
inline constexpr std::uint64_t kKpackRefMaxSize = 64 << 10;
inline constexpr int kKpackZstdLevel = 3;

// The record's magic once kpack'd (file bytes "HIPK"; clang's is formats/bundle_binary.h's
// kHipWrapperMagic, "FPIH"); the index is at +16.
inline constexpr std::uint32_t kHipkMagic = 0x4B504948;
inline constexpr std::uint64_t kHipWrapperIndex = 16;
inline constexpr std::string_view kKpackRefSection = ".rocm_kpack_ref";
inline constexpr std::string_view kKpackRefPeSection = ".kpackrf";
inline constexpr std::string_view kGfxArchPlaceholder = "@GFXARCH@";

enum class KpackScheme { None, ZstdPerKernel };
std::string_view kpack_scheme_name(KpackScheme s);  // "none", "zstd-per-kernel"

struct KpackKernel {
  std::string binary;  // the TOC binary key: "lib/librocblas.so.5#3"
  std::string arch;    // the TOC arch key, a target ID without its triple: "gfx1100", "gfx90a:xnack-"
  std::string type = "hsaco";
  std::uint32_t ordinal = 0;
  std::uint64_t original_size = 0;  // the code object's size
  // Where its stored bytes lie in the file: the code object itself (none) or its zstd frame.
  std::uint64_t offset = 0;
  std::uint64_t stored_size = 0;
  // The entry's "metadata" map, when it has one whose values are all strings
  // (the splitter's {target, source_prefix}), in order; written back as read.
  std::vector<std::pair<std::string, std::string>> metadata;
};

struct KpackArchive {
  std::uint64_t toc_offset = 0;
  std::uint64_t format_version = 1;
  std::string group_name;
  std::string gfx_arch_family;
  std::vector<std::string> gfx_arches;  // the loader's view of what the archive holds
  KpackScheme scheme = KpackScheme::None;
  std::vector<KpackKernel> kernels;  // in TOC order: binary keys first-added, arch keys within them likewise
  std::uint64_t zstd_offset = 0, zstd_size = 0;  // zstd-per-kernel only

  const KpackKernel* find(std::string_view binary, std::string_view arch) const;
  bool lists_arch(std::string_view arch) const;
};

bool has_kpack_magic(Bytes data);

// Reads and checks the whole archive: header, TOC (bounded MessagePack: no
// nesting, count or string beyond what the TOC's bytes can hold), every
// blob's or frame's range, ordinals (below the number of blobs or frames,
// none used twice), binary keys (relative, no "." or ".." component: they
// name files where code objects are extracted), each zstd frame's declared
// content size against original_size (a bomb is refused before anything is
// decoded). Errors name `file` and an offset in it.
KpackArchive read_kpack(Bytes data, const std::string& file);

// The code object of `k`, whose stored bytes (k.stored_size at k.offset of
// `file`) are `stored`: those bytes, or the frame decoded into exactly
// original_size bytes.
std::vector<std::byte> kpack_code_object(KpackScheme scheme, const KpackKernel& k, Bytes stored,
                                         const std::string& file);

// ---- Writing ----------------------------------------------------------------

// One zstd frame of `code_object` as AMD's writer makes it (python-zstandard's
// one-shot compress at level 3: content size in the header, no checksum).
std::vector<std::byte> kpack_compress(Bytes code_object);
// The same frame, handed to `sink` in pieces as it is made, `code_object`
// read in place (it may be a file mapping): `consumed(n)` says that its first
// n bytes are read no more (the compressor's window lies past them), so that
// their pages may be dropped from memory.
void kpack_compress(Bytes code_object, const std::function<void(Bytes)>& sink,
                    const std::function<void(std::uint64_t)>& consumed);

// The archive holding `a`'s kernels, whose `stored[ordinal]` are the stored
// bytes (code objects, or frames from kpack_compress): header, blob area and
// TOC exactly as AMD's writer lays them out. The kernels' ordinals must be
// 0..N-1; their order in `a.kernels` is the TOC's key order; offsets and
// stored sizes are computed here.
std::vector<std::byte> write_kpack(const KpackArchive& a, std::span<const Bytes> stored);
// The same, handed to `out` in order, in pieces: each of `stored` as it is
// (is_stored true: a view of the caller's bytes, so that a large archive is
// rewritten without a copy in memory), the others the writer's own bytes
// (header, frame sizes, TOC), valid during the call only. Every check comes
// before the first piece.
using KpackOut = std::function<void(Bytes bytes, bool is_stored)>;
void write_kpack(const KpackArchive& a, std::span<const Bytes> stored, const KpackOut& out);
// The same with blobs too large to hold (split's: code objects copied by the
// kernel, frames compressed straight into the file, whose sizes are known
// only once written): `blob(ordinal)` writes the stored bytes of that kernel
// itself, in ordinal order, where `out` writes (after the frame's size field
// for zstd-per-kernel), and returns how many. The header's TOC offset and a
// frame's size field go to `out` as zeros first, then to `patch` at their
// offsets in the file once known. The bytes are the other write_kpack's.
using KpackBlob = std::function<std::uint64_t(std::size_t ordinal)>;
using KpackPatch = std::function<void(std::uint64_t offset, Bytes bytes)>;
void write_kpack(const KpackArchive& a, const KpackBlob& blob, const KpackOut& out, const KpackPatch& patch);

// ---- The marker ---------------------------------------------------------------

struct KpackRef {
  std::vector<std::string> search_paths;  // string elements only, as the loader keeps them
  std::string kernel_name;                // without "#<index>"
};

// The marker at the start of `data` (trailing bytes ignored, as the loader
// does); `at` is its offset in `file`, for errors.
KpackRef read_kpack_ref(Bytes data, const std::string& file, std::uint64_t at);
std::vector<std::byte> write_kpack_ref(const KpackRef& r);

// `pattern` with its first "@GFXARCH@" replaced by `arch` (the loader's rule).
std::string expand_gfxarch(std::string_view pattern, std::string_view arch);

}  // namespace ot::formats
