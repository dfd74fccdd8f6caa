#include "formats/nv_fatbin.h"

#include <fmt/format.h>
#include <lz4.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "codec/codec.h"
#include "support/error.h"

namespace ot::formats {
namespace {

// Larger entry headers are refused: the largest seen is 144 bytes (a PTX
// entry with long ptxas options); an identifier or options string of more
// than 64 KiB is no producer's.
constexpr std::uint64_t kMaxEntryHeader = 64 << 10;

std::string header_string(Bytes header, std::uint64_t off, std::uint64_t len, std::string_view what,
                          const std::string& file, std::uint64_t at) {
  if (len == 0) return {};
  if (off > header.size() || len > header.size() - off)
    fail_at({file, at}, "the entry's {} (0x{:x} bytes at 0x{:x}) lies outside its 0x{:x}-byte header", what, len, off,
            header.size());
  std::string s(reinterpret_cast<const char*>(header.data() + off), len);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

FatbinEntry read_entry(const ByteSource& src, std::uint64_t off, std::uint64_t end, const std::string& file,
                       std::uint64_t base) {
  const std::uint64_t at = base + off;
  if (end - off < kFatbinEntryHeaderSize)
    fail_at({file, at}, "0x{:x} bytes left in the fatbin after its last entry, too few for an entry header (0x{:x})",
            end - off, kFatbinEntryHeaderSize);
  std::array<std::byte, kFatbinEntryHeaderSize> h{};
  src.read(off, h.data(), h.size());
  FatbinEntry e;
  e.offset = off;
  e.kind = load_le<std::uint16_t>(h.data());
  e.version = load_le<std::uint16_t>(h.data() + 2);
  e.header_size = load_le<std::uint32_t>(h.data() + 4);
  e.payload_size = load_le<std::uint64_t>(h.data() + 8);
  e.compressed_size = load_le<std::uint32_t>(h.data() + 16);
  const std::uint32_t options_area = load_le<std::uint32_t>(h.data() + 20);
  e.minor = load_le<std::uint16_t>(h.data() + 24);
  e.major = load_le<std::uint16_t>(h.data() + 26);
  e.arch = load_le<std::uint32_t>(h.data() + 28);
  const std::uint32_t id_off = load_le<std::uint32_t>(h.data() + 32), id_len = load_le<std::uint32_t>(h.data() + 36);
  e.flags = load_le<std::uint64_t>(h.data() + 40);
  e.uncompressed_size_field = load_le<std::uint64_t>(h.data() + 56);

  if (e.header_size < kFatbinEntryHeaderSize || e.header_size > kMaxEntryHeader)
    fail_at({file, at + 4}, "entry header size 0x{:x} is not between 0x{:x} and 0x{:x}", e.header_size,
            kFatbinEntryHeaderSize, kMaxEntryHeader);
  if (e.header_size > end - off)
    fail_at({file, at + 4}, "the entry header (0x{:x} bytes) extends past the end of its fatbin (0x{:x} bytes left)",
            e.header_size, end - off);
  if (e.payload_size > end - off - e.header_size)
    fail_at({file, at + 8}, "the entry's payload (0x{:x} bytes) extends past the end of its fatbin (0x{:x} bytes left)",
            e.payload_size, end - off - e.header_size);
  const bool lz4 = e.flags & kFatbinFlagLz4, zstd = e.flags & kFatbinFlagZstd;
  if (lz4 && zstd) fail_at({file, at + 40}, "the entry is flagged both LZ4 (0x2000) and zstd (0x8000) compressed");
  if (lz4 || zstd) {
    if (e.compressed_size == 0 || e.compressed_size > e.payload_size)
      fail_at({file, at + 16}, "compressed size 0x{:x} of a compressed entry is 0 or larger than its payload (0x{:x} "
              "bytes)", e.compressed_size, e.payload_size);
  }

  // Identifier and options: only where the header has more than its 64 bytes.
  if (e.header_size > kFatbinEntryHeaderSize && (id_len || options_area)) {
    std::vector<std::byte> full(e.header_size);
    src.read(off, full.data(), full.size());
    Bytes header(full);
    e.identifier = header_string(header, id_off, id_len, "identifier", file, at + 32);
    if (options_area) {
      if (options_area > e.header_size || e.header_size - options_area < 8)
        fail_at({file, at + 20}, "the entry's options area at 0x{:x} lies outside its 0x{:x}-byte header", options_area,
                e.header_size);
      const std::uint32_t o_off = load_le<std::uint32_t>(full.data() + options_area);
      const std::uint32_t o_len = load_le<std::uint32_t>(full.data() + options_area + 4);
      e.options = header_string(header, o_off, o_len, "options string", file, at + options_area);
    }
  } else if (id_len) {
    fail_at({file, at + 32}, "the entry's identifier (0x{:x} bytes) lies outside its 0x{:x}-byte header", id_len,
            e.header_size);
  }
  return e;
}

}  // namespace

bool is_fatbin_section(std::string_view name) {
  return name == ".nv_fatbin" || name == "__nv_relfatbin" || name == ".nv_fatb";
}

bool has_fatbin_magic(Bytes data) { return data.size() >= 4 && load_le<std::uint32_t>(data.data()) == kFatbinMagic; }

FatbinCompression FatbinEntry::compression() const {
  if (flags & kFatbinFlagLz4) return FatbinCompression::Lz4;
  if (flags & kFatbinFlagZstd) return FatbinCompression::Zstd;
  return FatbinCompression::None;
}

std::uint64_t FatbinEntry::stored_size() const {
  return compression() == FatbinCompression::None ? payload_size : compressed_size;
}

std::uint64_t FatbinEntry::uncompressed_size() const {
  return compression() == FatbinCompression::None ? payload_size : uncompressed_size_field;
}

std::string FatbinEntry::kind_name() const {
  if (kind == kFatbinKindElf) return "cubin";
  if (kind == kFatbinKindPtx) return "ptx";
  return fmt::format("kind 0x{:x}", kind);
}

std::string FatbinEntry::target() const {
  const char* suffix = (flags & kFatbinFlagArchSpecific) ? "a" : (flags & kFatbinFlagFamily) ? "f" : "";
  if (kind == kFatbinKindElf) return fmt::format("sm_{}{}", arch, suffix);
  if (kind == kFatbinKindPtx) return fmt::format("compute_{}{}", arch, suffix);
  return fmt::format("fatbin-kind-0x{:x}-sm_{}{}", kind, arch, suffix);
}

Fatbin read_fatbin(const ByteSource& src, std::uint64_t offset, const std::string& file, std::uint64_t base) {
  const std::uint64_t at = base + offset;
  if (src.size() - offset < kFatbinHeaderSize)
    fail_at({file, at}, "a fatbin header needs 0x{:x} bytes, 0x{:x} are left", kFatbinHeaderSize, src.size() - offset);
  std::array<std::byte, kFatbinHeaderSize> h{};
  src.read(offset, h.data(), h.size());
  if (load_le<std::uint32_t>(h.data()) != kFatbinMagic)
    fail_at({file, at}, "no fatbin here (magic 0x{:08x}, expected 0x{:08x})", load_le<std::uint32_t>(h.data()),
            kFatbinMagic);
  Fatbin f;
  f.offset = offset;
  const std::uint16_t version = load_le<std::uint16_t>(h.data() + 4);
  f.header_size = load_le<std::uint16_t>(h.data() + 6);
  const std::uint64_t fat_size = load_le<std::uint64_t>(h.data() + 8);
  if (version != 1) fail_at({file, at + 4}, "fatbin version {} is not known (1 is)", version);
  if (f.header_size < kFatbinHeaderSize || f.header_size % 8 != 0)
    fail_at({file, at + 6}, "fatbin header size 0x{:x} is not a multiple of 8 of at least 0x10", f.header_size);
  const std::uint64_t left = src.size() - offset;
  if (f.header_size > left || fat_size > left - f.header_size)
    fail_at({file, at + 8}, "the fatbin's 0x{:x} bytes of entries extend past the end of its data (0x{:x} bytes left)",
            fat_size, left - std::min<std::uint64_t>(left, f.header_size));
  f.size = f.header_size + fat_size;
  const std::uint64_t end = offset + f.size;
  for (std::uint64_t off = offset + f.header_size; off < end;) {
    FatbinEntry e = read_entry(src, off, end, file, base);
    off = e.end();
    f.entries.push_back(std::move(e));
  }
  return f;
}

std::vector<Fatbin> read_fatbins(const ByteSource& src, const std::string& file, std::uint64_t base) {
  std::vector<Fatbin> out;
  std::uint64_t off = 0;
  std::array<std::byte, 4096> chunk{};
  while (off < src.size()) {
    if (!out.empty()) {
      // Zero padding to the next fatbin: whole 8-byte words of zeros (and
      // zeros to the end), read a page at a time (8 bytes a read took 18 s
      // over 256 MiB of padding read with pread).
      const std::uint64_t n = src.read(off, chunk.data(), chunk.size());
      const auto zeros = static_cast<std::uint64_t>(
          std::find_if(chunk.begin(), chunk.begin() + n, [](std::byte b) { return b != std::byte{0}; }) - chunk.begin());
      const std::uint64_t skip = zeros == n ? n : zeros - zeros % 8;
      if (skip) {
        off += skip;
        continue;
      }
      if (n < 4 || load_le<std::uint32_t>(chunk.data()) != kFatbinMagic) {
        std::string start;
        for (std::uint64_t i = 0; i < std::min<std::uint64_t>(n, 8); ++i)
          start += fmt::format("{}{:02x}", i ? " " : "", static_cast<unsigned>(chunk[i]));
        fail_at({file, base + off}, "0x{:x} bytes after a fatbin are neither zero padding nor another fatbin (they "
                "start {}{})", src.size() - off, start, n > 8 ? " ..." : "");
      }
    }
    Fatbin f = read_fatbin(src, off, file, base);
    off += f.size;
    out.push_back(std::move(f));
  }
  return out;
}

void check_fatbin_image(const FatbinEntry& e, Bytes stored, std::uint64_t limit, const std::string& file,
                        std::uint64_t at) {
  const std::uint64_t size = e.uncompressed_size();
  switch (e.compression()) {
    case FatbinCompression::None:
      return;
    case FatbinCompression::Lz4:
      // An LZ4 block expands at most 255-fold: a larger declared size is a lie.
      if (size > limit || size / 255 > stored.size() || size > static_cast<std::uint64_t>(LZ4_MAX_INPUT_SIZE))
        fail_at({file, at}, "the LZ4 entry declares 0x{:x} bytes from 0x{:x} (more than LZ4 expands to, or the "
                "limit of 0x{:x}): a decompression bomb?", size, stored.size(), limit);
      // (liblz4 takes an int: more would be a negative size.)
      if (stored.size() > static_cast<std::uint64_t>(LZ4_MAX_INPUT_SIZE))
        fail_at({file, at}, "the LZ4 entry's 0x{:x} compressed bytes are more than an LZ4 block holds (0x{:x})",
                stored.size(), LZ4_MAX_INPUT_SIZE);
      return;
    case FatbinCompression::Zstd:
      // (decompress() refuses the same, as a damaged size: said here as LZ4's.)
      if (size > limit || size > codec::max_decompressed_size(codec::Method::Zstd, stored.size()))
        fail_at({file, at}, "the zstd entry declares 0x{:x} bytes from 0x{:x} (more than zstd expands to, or the "
                "limit of 0x{:x}): a decompression bomb?", size, stored.size(), limit);
      return;
  }
}

void fatbin_image_into(const FatbinEntry& e, Bytes stored, std::span<std::byte> dst, const std::string& file,
                       std::uint64_t at, const std::function<void(std::uint64_t)>& produced) {
  const std::uint64_t size = e.uncompressed_size();
  if (dst.size() != size)
    fail_at({file, at}, "0x{:x} bytes to decode the entry into, its image takes 0x{:x}", dst.size(), size);
  switch (e.compression()) {
    case FatbinCompression::None:
      if (size) std::memcpy(dst.data(), stored.data(), size);
      return;
    case FatbinCompression::Lz4: {
      // One block: liblz4 needs the whole output as its window.
      const int n = LZ4_decompress_safe(reinterpret_cast<const char*>(stored.data()), reinterpret_cast<char*>(dst.data()),
                                        static_cast<int>(stored.size()), static_cast<int>(size));
      if (n < 0 || static_cast<std::uint64_t>(n) != size)
        fail_at({file, at}, "the LZ4 entry is damaged: {}", n < 0 ? "the block does not decode"
                : fmt::format("it decodes to 0x{:x} bytes, its header says 0x{:x}", n, size));
      return;
    }
    case FatbinCompression::Zstd:
      try {
        codec::decompress_into(codec::Method::Zstd, stored, dst, produced ? produced : [](std::uint64_t) {});
      } catch (const Error& err) {
        fail_at({file, at}, "the zstd entry is damaged: {}", err.message());
      }
      return;
  }
}

std::vector<std::byte> fatbin_image(const FatbinEntry& e, Bytes stored, std::uint64_t limit, const std::string& file,
                                    std::uint64_t at) {
  check_fatbin_image(e, stored, limit, file, at);
  std::vector<std::byte> out(e.uncompressed_size());
  fatbin_image_into(e, stored, out, file, at);
  return out;
}

std::vector<Bytes> prune_fatbin(Bytes fatbin, const Fatbin& f, const std::vector<std::size_t>& keep,
                                std::array<std::byte, kFatbinHeaderSize>& header_out) {
  std::vector<Bytes> pieces;
  std::uint64_t entries = 0;
  for (std::size_t i : keep) entries += f.entries[i].end() - f.entries[i].offset;
  // From the fields (the reader takes version 1 only): reading the fatbin's
  // own header would map its page in.
  store_le<std::uint32_t>(header_out.data(), kFatbinMagic);
  store_le<std::uint16_t>(header_out.data() + 4, 1);
  store_le<std::uint16_t>(header_out.data() + 6, kFatbinHeaderSize);
  store_le<std::uint64_t>(header_out.data() + 8, entries);
  pieces.push_back(Bytes(header_out));
  // Entries kept one after another are one piece.
  for (std::size_t k = 0; k < keep.size();) {
    std::size_t last = k;
    while (last + 1 < keep.size() && keep[last + 1] == keep[last] + 1) ++last;
    const FatbinEntry& first = f.entries[keep[k]];
    pieces.push_back(fatbin.subspan(first.offset - f.offset, f.entries[keep[last]].end() - first.offset));
    k = last + 1;
  }
  return pieces;
}

}  // namespace ot::formats
