// libFuzzer: NVIDIA fatbins. formats::read_fatbins over the bytes in memory
// and over the same bytes read through a read_at callback (as the walker reads
// a file's headers with pread), which must find the same fatbins or fail with
// the same error; whatever it finds lies inside the input, and every error
// names the file and an offset. Then every entry's image through
// formats::fatbin_image (LZ4 block, zstd frame) with a small limit: exactly
// the declared size, or an error with an offset; and each fatbin through
// formats::prune_fatbin (every other entry kept), which reads back as those
// entries.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "formats/nv_fatbin.h"
#include "support/error.h"

namespace {

using ot::formats::Fatbin;
using ot::formats::FatbinEntry;

constexpr std::uint64_t kBase = 0x1000;  // where the data lies in the "file": errors count from there
constexpr std::uint64_t kLimit = 4u << 20;

struct Outcome {
  std::optional<std::vector<Fatbin>> found;
  std::string error;
};

// The error names the file and an offset no further than just past the data.
void check_error(const ot::Error& e, std::uint64_t size) {
  if (e.file() != "fuzz.fatbin" || !e.offset() || *e.offset() < kBase || *e.offset() > kBase + size) __builtin_trap();
  if (e.message().empty() || e.message().find('\n') != std::string::npos) __builtin_trap();
}

Outcome read(const ot::ByteSource& src, std::uint64_t size) {
  Outcome o;
  try {
    o.found = ot::formats::read_fatbins(src, "fuzz.fatbin", kBase);
  } catch (const ot::Error& e) {
    check_error(e, size);
    o.error = e.what();
  }
  return o;
}

bool same_entry(const FatbinEntry& a, const FatbinEntry& b) {
  return a.offset == b.offset && a.kind == b.kind && a.version == b.version && a.header_size == b.header_size &&
         a.payload_size == b.payload_size && a.compressed_size == b.compressed_size && a.major == b.major &&
         a.minor == b.minor && a.arch == b.arch && a.flags == b.flags &&
         a.uncompressed_size_field == b.uncompressed_size_field && a.identifier == b.identifier &&
         a.options == b.options;
}

bool same(const std::vector<Fatbin>& a, const std::vector<Fatbin>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].offset != b[i].offset || a[i].header_size != b[i].header_size || a[i].size != b[i].size ||
        a[i].entries.size() != b[i].entries.size())
      return false;
    for (std::size_t k = 0; k < a[i].entries.size(); ++k)
      if (!same_entry(a[i].entries[k], b[i].entries[k])) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ot::Bytes bytes(reinterpret_cast<const std::byte*>(data), size);
  const Outcome direct = read(ot::ByteSource(bytes), size);

  // The walker's way: headers copied by a callback from a file holding the
  // bytes after others (a section in an object: the source's tail), at the
  // file's offsets; every read lies inside the bytes.
  constexpr std::size_t kBefore = 7;
  std::vector<std::byte> file(kBefore, std::byte{0xaa});
  file.insert(file.end(), bytes.begin(), bytes.end());
  ot::ByteSource whole(ot::Bytes(file), [&](std::uint64_t off, std::byte* to, std::uint64_t len) {
    if (off < kBefore || off > file.size() || len > file.size() - off) __builtin_trap();
    std::memcpy(to, file.data() + off, len);
  });
  const Outcome pread = read(whole.tail(kBefore), size);
  if (direct.found.has_value() != pread.found.has_value() || direct.error != pread.error) __builtin_trap();
  if (!direct.found) return 0;
  if (!same(*direct.found, *pread.found)) __builtin_trap();

  std::uint64_t prev_end = 0;
  for (const Fatbin& f : *direct.found) {
    if (f.offset < prev_end || f.size > size || f.offset > size - f.size) __builtin_trap();
    prev_end = f.offset + f.size;
    std::uint64_t next = f.offset + f.header_size;
    for (const FatbinEntry& e : f.entries) {
      // Back to back, each inside its fatbin; the stored bytes inside the payload.
      if (e.offset != next || e.header_size < ot::formats::kFatbinEntryHeaderSize || e.end() > prev_end ||
          e.end() < e.payload_offset() || e.stored_size() > e.payload_size)
        __builtin_trap();
      next = e.end();
      ot::Bytes stored = bytes.subspan(e.payload_offset(), e.stored_size());
      try {
        std::vector<std::byte> image =
            ot::formats::fatbin_image(e, stored, kLimit, "fuzz.fatbin", kBase + e.payload_offset());
        if (image.size() != e.uncompressed_size()) __builtin_trap();
        if (e.compression() == ot::formats::FatbinCompression::None &&
            (image.empty() ? !stored.empty() : std::memcmp(image.data(), stored.data(), image.size()) != 0))
          __builtin_trap();
      } catch (const ot::Error& err) {
        if (e.compression() == ot::formats::FatbinCompression::None) __builtin_trap();
        check_error(err, size);
      }
    }
    if (next != prev_end) __builtin_trap();

    // prune_fatbin keeping every other entry: read back, the same entries.
    std::vector<std::size_t> keep;
    for (std::size_t k = 0; k < f.entries.size(); k += 2) keep.push_back(k);
    std::array<std::byte, ot::formats::kFatbinHeaderSize> header{};
    std::vector<std::byte> pruned;
    for (ot::Bytes piece : ot::formats::prune_fatbin(bytes.subspan(f.offset, f.size), f, keep, header))
      pruned.insert(pruned.end(), piece.begin(), piece.end());
    std::vector<Fatbin> again;
    try {
      again = ot::formats::read_fatbins(ot::ByteSource(ot::Bytes(pruned)), "pruned", 0);
    } catch (const ot::Error&) {
      __builtin_trap();
    }
    if (again.size() != 1 || again[0].entries.size() != keep.size()) __builtin_trap();
    for (std::size_t k = 0; k < keep.size(); ++k) {
      FatbinEntry e = again[0].entries[k];
      e.offset = f.entries[keep[k]].offset;
      if (!same_entry(e, f.entries[keep[k]]) || e.target() != f.entries[keep[k]].target() ||
          e.kind_name() != f.entries[keep[k]].kind_name())
        __builtin_trap();
    }
  }
  return 0;
}
