#include "formats/kpack.h"

// msgpack-c++ is header-only; without Boost (meson.build says why).
#ifndef MSGPACK_NO_BOOST
#define MSGPACK_NO_BOOST
#endif
#include <msgpack.hpp>

#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <new>
#include <set>

#include "codec/codec.h"
#include "support/error.h"

namespace ot::formats {
namespace {

constexpr std::string_view kSchemeNone = "none", kSchemeZstd = "zstd-per-kernel";

// One MessagePack object at `at` of `file`, every count, string and the
// nesting bounded by the bytes that hold it (a 20-byte TOC cannot declare a
// map of 2^32 entries and have msgpack reserve them); trailing bytes ignored.
msgpack::object_handle unpack(Bytes data, const std::string& file, std::uint64_t at, std::string_view what) {
  const std::size_t n = data.size();
  const msgpack::unpack_limit limit(n, n, n, n, n, 16);
  std::size_t off = 0;
  try {
    return msgpack::unpack(reinterpret_cast<const char*>(data.data()), n, off, nullptr, nullptr, limit);
  } catch (const msgpack::insufficient_bytes&) {
    fail_at({file, at}, "the {} (MessagePack, 0x{:x} bytes) is truncated", what, n);
  } catch (const msgpack::depth_size_overflow&) {
    fail_at({file, at}, "the {} (MessagePack) nests more than 16 deep", what);
  } catch (const msgpack::size_overflow&) {
    fail_at({file, at}, "the {} (MessagePack) declares more elements or bytes than its 0x{:x} bytes hold", what, n);
  } catch (const std::bad_alloc&) {
    fail_at({file, at}, "the {} (MessagePack) takes more memory than there is", what);
  } catch (const std::exception& e) {
    fail_at({file, at}, "the {} is not valid MessagePack ({})", what, e.what());
  }
}

std::string_view type_name(const msgpack::object& o) {
  switch (o.type) {
    case msgpack::type::NIL: return "nil";
    case msgpack::type::BOOLEAN: return "a boolean";
    case msgpack::type::POSITIVE_INTEGER: return "an unsigned integer";
    case msgpack::type::NEGATIVE_INTEGER: return "a negative integer";
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: return "a float";
    case msgpack::type::STR: return "a string";
    case msgpack::type::BIN: return "binary data";
    case msgpack::type::ARRAY: return "an array";
    case msgpack::type::MAP: return "a map";
    case msgpack::type::EXT: return "an extension";
  }
  return "an unknown object";
}

// Checked reads of a parsed object; errors say what (`what`) was expected and
// point at `at` (the start of the MessagePack: objects carry no offsets).
struct Reader {
  const std::string& file;
  std::uint64_t at;

  std::string_view str(const msgpack::object& o, std::string_view what) const {
    if (o.type != msgpack::type::STR) fail_at({file, at}, "{} is {}, not a string", what, type_name(o));
    return {o.via.str.ptr, o.via.str.size};
  }
  std::uint64_t uint(const msgpack::object& o, std::string_view what) const {
    if (o.type != msgpack::type::POSITIVE_INTEGER)
      fail_at({file, at}, "{} is {}, not an unsigned integer", what, type_name(o));
    return o.via.u64;
  }
  std::span<const msgpack::object> array(const msgpack::object& o, std::string_view what) const {
    if (o.type != msgpack::type::ARRAY) fail_at({file, at}, "{} is {}, not an array", what, type_name(o));
    return {o.via.array.ptr, o.via.array.size};
  }
  // A map whose keys are strings, none twice (a second would shadow the first).
  std::vector<std::pair<std::string_view, const msgpack::object*>> map(const msgpack::object& o,
                                                                       std::string_view what) const {
    if (o.type != msgpack::type::MAP) fail_at({file, at}, "{} is {}, not a map", what, type_name(o));
    std::vector<std::pair<std::string_view, const msgpack::object*>> out;
    std::set<std::string_view> seen;
    for (std::uint32_t i = 0; i < o.via.map.size; ++i) {
      const msgpack::object_kv& kv = o.via.map.ptr[i];
      std::string_view k = str(kv.key, fmt::format("a key of {}", what));
      if (!seen.insert(k).second) fail_at({file, at}, "{} has the key '{}' twice", what, k);
      out.emplace_back(k, &kv.val);
    }
    return out;
  }
};

const msgpack::object* lookup(const std::vector<std::pair<std::string_view, const msgpack::object*>>& m,
                              std::string_view key) {
  for (const auto& [k, v] : m)
    if (k == key) return v;
  return nullptr;
}

// Binary keys name the files code objects are extracted to (unbundle
// --extract-dir): a relative path whose components are not empty, "." or "..".
void check_binary_key(std::string_view key, const std::string& file, std::uint64_t at) {
  if (key.empty()) fail_at({file, at}, "the TOC has an empty binary key");
  if (key.front() == '/' || key.front() == '\\')
    fail_at({file, at}, "the binary key '{}' is an absolute path", key);
  if (key.find('\0') != std::string_view::npos) fail_at({file, at}, "a binary key holds a NUL byte");
  std::string_view rest = key;
  while (true) {
    const std::size_t slash = rest.find_first_of("/\\");
    const std::string_view part = rest.substr(0, slash);
    if (part == ".." || part == "." || part.empty())
      fail_at({file, at}, "the binary key '{}' has a '{}' path component", key, part);
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
}

// Arch keys are target IDs ("gfx90a:xnack-"): no path separators, nothing empty.
void check_arch_key(std::string_view arch, std::string_view binary, const std::string& file, std::uint64_t at) {
  if (arch.empty() || arch.find_first_of("/\\") != std::string_view::npos || arch.find('\0') != std::string_view::npos ||
      arch == "." || arch == "..")
    fail_at({file, at}, "the binary key '{}' has the architecture key '{}', which is not a target ID", binary, arch);
}

struct Span {
  std::uint64_t offset = 0, size = 0;
};

// The zstd-per-kernel area: its frames, in ordinal order.
std::vector<Span> zstd_frames(Bytes data, std::uint64_t area, std::uint64_t size, const std::string& file) {
  if (range_exceeds(area, size, data.size()))
    fail_at({file, area}, "the zstd area (0x{:x} bytes) extends past the end of the file (0x{:x} bytes)", size,
            data.size());
  if (size < 4) fail_at({file, area}, "the zstd area of 0x{:x} bytes has no room for its kernel count", size);
  const std::uint32_t n = load_le<std::uint32_t>(data.data() + area);
  if (n > kKpackMaxKernels)
    fail_at({file, area}, "the zstd area declares {} kernels (more than the loader's {})", n, kKpackMaxKernels);
  std::vector<Span> frames;
  std::uint64_t pos = area + 4;
  const std::uint64_t end = area + size;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (end - pos < 4) fail_at({file, pos}, "the size of zstd frame {} extends past the zstd area", i);
    const std::uint32_t fs = load_le<std::uint32_t>(data.data() + pos);
    pos += 4;
    if (fs > end - pos)
      fail_at({file, pos}, "zstd frame {} (0x{:x} bytes) extends past the zstd area (ends at 0x{:x})", i, fs, end);
    frames.push_back({pos, fs});
    pos += fs;
  }
  return frames;
}

// What a frame may decode to, checked before anything is allocated: its
// header's content size, exactly, or (a streamed frame, which has none) no
// more than its blocks can hold.
void check_frame(Bytes frame, const KpackKernel& k, const std::string& file, std::uint64_t at) {
  const unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (declared == ZSTD_CONTENTSIZE_ERROR)
    fail_at({file, at}, "the frame of '{}' for {} is not a zstd frame", k.binary, k.arch);
  if (declared == ZSTD_CONTENTSIZE_UNKNOWN) {
    const unsigned long long bound = ZSTD_decompressBound(frame.data(), frame.size());
    if (bound == ZSTD_CONTENTSIZE_ERROR || k.original_size > bound)
      fail_at({file, at}, "'{}' for {} declares an original size of 0x{:x} bytes, more than its zstd frame of 0x{:x} "
              "bytes decodes to (a decompression bomb?)", k.binary, k.arch, k.original_size, frame.size());
    return;
  }
  if (declared != k.original_size)
    fail_at({file, at}, "'{}' for {} declares an original size of 0x{:x} bytes, its zstd frame 0x{:x}{}", k.binary,
            k.arch, k.original_size, declared, declared < k.original_size ? " (a decompression bomb?)" : "");
}

}  // namespace

std::string_view kpack_scheme_name(KpackScheme s) { return s == KpackScheme::None ? kSchemeNone : kSchemeZstd; }

bool has_kpack_magic(Bytes data) {
  return data.size() >= kKpackMagic.size() && as_chars(data.first(kKpackMagic.size())) == kKpackMagic;
}

const KpackKernel* KpackArchive::find(std::string_view binary, std::string_view arch) const {
  for (const KpackKernel& k : kernels)
    if (k.binary == binary && k.arch == arch) return &k;
  return nullptr;
}

bool KpackArchive::lists_arch(std::string_view arch) const {
  return std::find(gfx_arches.begin(), gfx_arches.end(), arch) != gfx_arches.end();
}

KpackArchive read_kpack(Bytes data, const std::string& file) {
  if (data.size() < kKpackHeaderSize)
    fail_at({file, 0}, "the kpack header (16 bytes) extends past the end of the file (0x{:x} bytes)", data.size());
  if (!has_kpack_magic(data)) fail_at({file, 0}, "not a kpack archive (no KPAK magic)");
  const std::uint32_t version = load_le<std::uint32_t>(data.data() + 4);
  if (version != kKpackVersion) fail_at({file, 4}, "unsupported kpack version {} (1 is known)", version);
  KpackArchive a;
  a.toc_offset = load_le<std::uint64_t>(data.data() + 8);
  if (a.toc_offset < kKpackHeaderSize || a.toc_offset >= data.size())
    fail_at({file, 8}, "the TOC offset 0x{:x} lies outside the file (0x{:x} bytes past the 16-byte header)",
            a.toc_offset, data.size());
  const Bytes toc_bytes = data.subspan(a.toc_offset);
  const msgpack::object_handle oh = unpack(toc_bytes, file, a.toc_offset, "TOC");
  const Reader r{file, a.toc_offset};
  const auto top = r.map(oh.get(), "the TOC");

  if (const msgpack::object* o = lookup(top, "format_version")) a.format_version = r.uint(*o, "format_version");
  if (const msgpack::object* o = lookup(top, "group_name")) a.group_name = r.str(*o, "group_name");
  if (const msgpack::object* o = lookup(top, "gfx_arch_family")) a.gfx_arch_family = r.str(*o, "gfx_arch_family");
  if (const msgpack::object* o = lookup(top, "gfx_arches"))
    for (const msgpack::object& e : r.array(*o, "gfx_arches"))
      if (e.type == msgpack::type::STR) a.gfx_arches.emplace_back(e.via.str.ptr, e.via.str.size);  // the loader skips others
  if (const msgpack::object* o = lookup(top, "compression_scheme")) {
    const std::string_view s = r.str(*o, "compression_scheme");
    if (s == kSchemeZstd)
      a.scheme = KpackScheme::ZstdPerKernel;
    else if (s != kSchemeNone)
      // AMD's C++ loader would read it as "none" and fail every lookup; its Python reader refuses it.
      fail_at({file, a.toc_offset}, "unknown compression scheme '{}' (none and zstd-per-kernel are known)", s);
  }

  // The stored bytes of each ordinal.
  std::vector<Span> stored;
  if (a.scheme == KpackScheme::None) {
    if (const msgpack::object* o = lookup(top, "blobs")) {
      for (const msgpack::object& b : r.array(*o, "blobs")) {
        const auto m = r.map(b, fmt::format("blobs[{}]", stored.size()));
        const msgpack::object* off = lookup(m, "offset");
        const msgpack::object* size = lookup(m, "size");
        if (!off || !size) fail_at({file, a.toc_offset}, "blobs[{}] lacks its offset or size", stored.size());
        Span s{r.uint(*off, "a blob's offset"), r.uint(*size, "a blob's size")};
        if (s.offset < kKpackHeaderSize || range_exceeds(s.offset, s.size, data.size()))
          fail_at({file, s.offset}, "blob {} (0x{:x} bytes at 0x{:x}) lies outside the file (0x{:x} bytes past the "
                  "header)", stored.size(), s.size, s.offset, data.size());
        stored.push_back(s);
      }
    }
  } else {
    const msgpack::object* off = lookup(top, "zstd_offset");
    const msgpack::object* size = lookup(top, "zstd_size");
    if (!off || !size) fail_at({file, a.toc_offset}, "the zstd-per-kernel TOC lacks zstd_offset or zstd_size");
    a.zstd_offset = r.uint(*off, "zstd_offset");
    a.zstd_size = r.uint(*size, "zstd_size");
    if (a.zstd_offset < kKpackHeaderSize)
      fail_at({file, a.toc_offset}, "the zstd area at 0x{:x} overlaps the header", a.zstd_offset);
    for (const Span& f : zstd_frames(data, a.zstd_offset, a.zstd_size, file)) stored.push_back(f);
  }

  const msgpack::object* toc = lookup(top, "toc");
  if (!toc) fail_at({file, a.toc_offset}, "the TOC has no 'toc' map");
  std::vector<bool> used(stored.size());
  for (const auto& [binary, arches] : r.map(*toc, "toc")) {
    check_binary_key(binary, file, a.toc_offset);
    for (const auto& [arch, entry] : r.map(*arches, fmt::format("toc['{}']", binary))) {
      check_arch_key(arch, binary, file, a.toc_offset);
      const std::string what = fmt::format("toc['{}']['{}']", binary, arch);
      const auto m = r.map(*entry, what);
      KpackKernel k;
      k.binary = binary;
      k.arch = arch;
      if (const msgpack::object* t = lookup(m, "type")) k.type = r.str(*t, what + ".type");
      const msgpack::object* ord = lookup(m, "ordinal");
      const msgpack::object* osize = lookup(m, "original_size");
      // AMD's loader would read an uninitialised value in their place.
      if (!ord || !osize) fail_at({file, a.toc_offset}, "{} lacks its ordinal or original_size", what);
      const std::uint64_t ordinal = r.uint(*ord, what + ".ordinal");
      if (ordinal >= stored.size())
        fail_at({file, a.toc_offset}, "{} has ordinal {}, but the archive stores {} {}", what, ordinal, stored.size(),
                a.scheme == KpackScheme::None ? "blobs" : "frames");
      if (used[ordinal]) fail_at({file, a.toc_offset}, "{} has ordinal {}, which another entry uses too", what, ordinal);
      used[ordinal] = true;
      k.ordinal = static_cast<std::uint32_t>(ordinal);
      k.original_size = r.uint(*osize, what + ".original_size");
      k.offset = stored[ordinal].offset;
      k.stored_size = stored[ordinal].size;
      if (const msgpack::object* md = lookup(m, "metadata"); md && md->type == msgpack::type::MAP) {
        for (std::uint32_t i = 0; i < md->via.map.size; ++i) {
          const msgpack::object_kv& kv = md->via.map.ptr[i];
          if (kv.key.type != msgpack::type::STR || kv.val.type != msgpack::type::STR) {
            k.metadata.clear();
            break;
          }
          k.metadata.emplace_back(std::string(kv.key.via.str.ptr, kv.key.via.str.size),
                                  std::string(kv.val.via.str.ptr, kv.val.via.str.size));
        }
      }
      if (a.scheme == KpackScheme::None) {
        if (k.original_size != k.stored_size)
          fail_at({file, k.offset}, "{} declares an original size of 0x{:x} bytes, its blob holds 0x{:x}", what,
                  k.original_size, k.stored_size);
      } else {
        check_frame(data.subspan(k.offset, k.stored_size), k, file, k.offset);
      }
      a.kernels.push_back(std::move(k));
    }
  }
  return a;
}

std::vector<std::byte> kpack_code_object(KpackScheme scheme, const KpackKernel& k, Bytes stored,
                                         const std::string& file) {
  if (stored.size() != k.stored_size)
    fail_at({file, k.offset}, "'{}' for {}: 0x{:x} stored bytes given for 0x{:x}", k.binary, k.arch, stored.size(),
            k.stored_size);
  if (scheme == KpackScheme::None) return {stored.begin(), stored.end()};
  check_frame(stored, k, file, k.offset);
  try {
    return codec::decompress(codec::Method::Zstd, stored, k.original_size);
  } catch (const Error& e) {
    fail_at({file, k.offset}, "the zstd frame of '{}' for {} is damaged: {}", k.binary, k.arch, e.message());
  }
}

std::vector<std::byte> kpack_compress(Bytes code_object) {
  std::vector<std::byte> out(ZSTD_compressBound(code_object.size()));
  const std::size_t n =
      ZSTD_compress(out.data(), out.size(), code_object.data(), code_object.size(), kKpackZstdLevel);
  if (ZSTD_isError(n)) fail("", "zstd compression failed: {}", ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

void kpack_compress(Bytes code_object, const codec::Sink& sink, const std::function<void(std::uint64_t)>& consumed) {
  // ZSTD_compress's parameters (level 3; long-distance matching left to the
  // level, which has none), its bytes read in place: codec::Compressor's
  // stable input makes the frame ZSTD_compress2's over the whole of them,
  // which for these parameters is ZSTD_compress's (tests/unit/formats/kpack_test).
  codec::Params params;
  params.level = kKpackZstdLevel;
  params.long_distance = false;
  codec::Compressor c(params, code_object.size(), sink, codec::Compressor::Input::Stable);
  constexpr std::uint64_t kPiece = 4u << 20;
  for (std::uint64_t at = 0; at < code_object.size(); at += kPiece) {
    const std::uint64_t n = std::min<std::uint64_t>(kPiece, code_object.size() - at);
    c.write(code_object.subspan(at, n));
    if (consumed && at + n > c.window_size()) consumed(at + n - c.window_size());
  }
  c.finish();
}

namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

void pack_str(Packer& p, std::string_view s) {
  p.pack_str(static_cast<std::uint32_t>(s.size()));
  p.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
}

// The kernels' ordinals must be 0..N-1, N the number of blobs.
void check_ordinals(const KpackArchive& a, std::size_t blobs) {
  const std::size_t n = a.kernels.size();
  if (blobs != n) fail("", "{} stored blobs for {} kernels", blobs, n);
  std::vector<bool> seen(n);
  for (const KpackKernel& k : a.kernels) {
    if (k.ordinal >= n || seen[k.ordinal]) fail("", "kernel ordinals are not 0..{}", n - 1);
    seen[k.ordinal] = true;
  }
}

// The 64 bytes before the blob area, for a TOC at `toc_offset`.
std::array<std::byte, kKpackBlobStart> kpack_header(std::uint64_t toc_offset) {
  std::array<std::byte, kKpackBlobStart> header{};
  std::memcpy(header.data(), kKpackMagic.data(), 4);
  store_le<std::uint32_t>(header.data() + 4, kKpackVersion);
  store_le<std::uint64_t>(header.data() + 8, toc_offset);
  return header;
}

// The TOC of `a` whose blobs (scheme none: in ordinal order) lie at `spans`,
// the blob area ending at `area_end` (where the TOC starts).
void write_toc(const KpackArchive& a, std::span<const Span> spans, std::uint64_t area_end, const KpackOut& out) {
  const bool zstd = a.scheme == KpackScheme::ZstdPerKernel;
  // The TOC, in AMD's writer's key order (kpack.py).
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_map(zstd ? 8 : 7);
  pack_str(p, "format_version");
  p.pack_uint64(a.format_version);
  pack_str(p, "group_name");
  pack_str(p, a.group_name);
  pack_str(p, "gfx_arch_family");
  pack_str(p, a.gfx_arch_family);
  pack_str(p, "gfx_arches");
  p.pack_array(static_cast<std::uint32_t>(a.gfx_arches.size()));
  for (const std::string& s : a.gfx_arches) pack_str(p, s);
  pack_str(p, "toc");
  // Binary keys in first-added order, each with its arch keys likewise.
  std::vector<std::string_view> binaries;
  std::map<std::string_view, std::vector<const KpackKernel*>> by_binary;
  for (const KpackKernel& k : a.kernels) {
    auto& v = by_binary[k.binary];
    if (v.empty()) binaries.push_back(k.binary);
    v.push_back(&k);
  }
  p.pack_map(static_cast<std::uint32_t>(binaries.size()));
  for (std::string_view b : binaries) {
    pack_str(p, b);
    const auto& ks = by_binary[b];
    p.pack_map(static_cast<std::uint32_t>(ks.size()));
    for (const KpackKernel* k : ks) {
      pack_str(p, k->arch);
      p.pack_map(k->metadata.empty() ? 3 : 4);
      pack_str(p, "type");
      pack_str(p, k->type);
      pack_str(p, "ordinal");
      p.pack_uint64(k->ordinal);
      pack_str(p, "original_size");
      p.pack_uint64(k->original_size);
      if (!k->metadata.empty()) {
        pack_str(p, "metadata");
        p.pack_map(static_cast<std::uint32_t>(k->metadata.size()));
        for (const auto& [key, value] : k->metadata) {
          pack_str(p, key);
          pack_str(p, value);
        }
      }
    }
  }
  pack_str(p, "compression_scheme");
  pack_str(p, kpack_scheme_name(a.scheme));
  if (zstd) {
    pack_str(p, "zstd_offset");
    p.pack_uint64(kKpackBlobStart);
    pack_str(p, "zstd_size");
    p.pack_uint64(area_end - kKpackBlobStart);
  } else {
    pack_str(p, "blobs");
    p.pack_array(static_cast<std::uint32_t>(spans.size()));
    for (const Span& s : spans) {
      p.pack_map(2);
      pack_str(p, "offset");
      p.pack_uint64(s.offset);
      pack_str(p, "size");
      p.pack_uint64(s.size);
    }
  }
  out(Bytes(reinterpret_cast<const std::byte*>(buf.data()), buf.size()), false);
}

}  // namespace

void write_kpack(const KpackArchive& a, std::span<const Bytes> stored, const KpackOut& out) {
  check_ordinals(a, stored.size());
  const std::size_t n = a.kernels.size();
  const bool zstd = a.scheme == KpackScheme::ZstdPerKernel;
  // Where the blobs (or frames) go: the blob area in ordinal order after the
  // header and padding, the TOC right after it.
  std::vector<Span> spans(n);
  std::uint64_t at = kKpackBlobStart + (zstd ? 4 : 0);
  for (std::size_t i = 0; i < n; ++i) {
    if (zstd && stored[i].size() > UINT32_MAX) fail("", "a zstd frame of {} bytes (more than a u32 holds)", stored[i].size());
    at += zstd ? 4 : 0;
    spans[i] = {at, stored[i].size()};
    at += stored[i].size();
  }
  const std::uint64_t area_end = at;
  out(kpack_header(area_end), false);
  std::array<std::byte, 4> u32{};
  if (zstd) {
    store_le<std::uint32_t>(u32.data(), static_cast<std::uint32_t>(n));
    out(u32, false);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (zstd) {
      store_le<std::uint32_t>(u32.data(), static_cast<std::uint32_t>(stored[i].size()));
      out(u32, false);
    }
    out(stored[i], true);
  }
  write_toc(a, spans, area_end, out);
}

void write_kpack(const KpackArchive& a, const KpackBlob& blob, const KpackOut& out, const KpackPatch& patch) {
  check_ordinals(a, a.kernels.size());
  const std::size_t n = a.kernels.size();
  const bool zstd = a.scheme == KpackScheme::ZstdPerKernel;
  out(kpack_header(0), false);  // its TOC offset once the blobs are written
  std::array<std::byte, 4> u32{};
  std::uint64_t at = kKpackBlobStart;
  if (zstd) {
    store_le<std::uint32_t>(u32.data(), static_cast<std::uint32_t>(n));
    out(u32, false);
    at += 4;
  }
  std::vector<Span> spans(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t size_field = at;
    if (zstd) {
      out(std::array<std::byte, 4>{}, false);  // its size once the frame is written
      at += 4;
    }
    const std::uint64_t size = blob(i);
    if (zstd && size > UINT32_MAX) fail("", "a zstd frame of {} bytes (more than a u32 holds)", size);
    if (zstd) {
      store_le<std::uint32_t>(u32.data(), static_cast<std::uint32_t>(size));
      patch(size_field, u32);
    }
    spans[i] = {at, size};
    at += size;
  }
  write_toc(a, spans, at, out);
  patch(0, kpack_header(at));
}

std::vector<std::byte> write_kpack(const KpackArchive& a, std::span<const Bytes> stored) {
  std::vector<std::byte> bytes;
  write_kpack(a, stored, [&](Bytes b, bool) { bytes.insert(bytes.end(), b.begin(), b.end()); });
  return bytes;
}

KpackRef read_kpack_ref(Bytes data, const std::string& file, std::uint64_t at) {
  data = data.first(std::min<std::uint64_t>(data.size(), kKpackRefMaxSize));
  const msgpack::object_handle oh = unpack(data, file, at, "kpack marker");
  const Reader r{file, at};
  const auto m = r.map(oh.get(), "the kpack marker");
  KpackRef ref;
  const msgpack::object* name = lookup(m, "kernel_name");
  const msgpack::object* paths = lookup(m, "kpack_search_paths");
  if (!name || !paths) fail_at({file, at}, "the kpack marker lacks kernel_name or kpack_search_paths");
  ref.kernel_name = r.str(*name, "the marker's kernel_name");
  for (const msgpack::object& e : r.array(*paths, "the marker's kpack_search_paths"))
    if (e.type == msgpack::type::STR) ref.search_paths.emplace_back(e.via.str.ptr, e.via.str.size);
  if (ref.search_paths.empty()) fail_at({file, at}, "the kpack marker names no search path");
  if (ref.kernel_name.find('\0') != std::string::npos) fail_at({file, at}, "the marker's kernel_name holds a NUL byte");
  return ref;
}

std::vector<std::byte> write_kpack_ref(const KpackRef& ref) {
  msgpack::sbuffer buf;
  Packer p(buf);
  p.pack_map(2);
  pack_str(p, "kpack_search_paths");
  p.pack_array(static_cast<std::uint32_t>(ref.search_paths.size()));
  for (const std::string& s : ref.search_paths) pack_str(p, s);
  pack_str(p, "kernel_name");
  pack_str(p, ref.kernel_name);
  const auto* b = reinterpret_cast<const std::byte*>(buf.data());
  return {b, b + buf.size()};
}

std::string expand_gfxarch(std::string_view pattern, std::string_view arch) {
  std::string out(pattern);
  if (const std::size_t at = out.find(kGfxArchPlaceholder); at != std::string::npos)
    out.replace(at, kGfxArchPlaceholder.size(), arch);
  return out;
}

}  // namespace ot::formats
