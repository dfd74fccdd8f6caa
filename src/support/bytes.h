// Endian-aware, alignment-safe integers and a bounds-checked reader over
// untrusted bytes. Nothing here ever reinterpret_casts input data.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "support/error.h"

namespace ot {

using Bytes = std::span<const std::byte>;

template <typename T>
constexpr T byteswap_if(T v, bool swap) {
  if (!swap) return v;
  if constexpr (sizeof(T) == 1) {
    return v;
  } else {
    using U = std::make_unsigned_t<T>;
    U u = static_cast<U>(v), r = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      r = static_cast<U>((r << 8) | (u & 0xff));
      u = static_cast<U>(u >> 8);
    }
    return static_cast<T>(r);
  }
}

// An integer stored in a fixed byte order at any alignment.
template <typename T, std::endian E>
class Packed {
 public:
  Packed() = default;
  Packed(T v) { *this = v; }  // NOLINT: implicit by design, like mold's ul32
  Packed& operator=(T v) {
    T s = byteswap_if(v, E != std::endian::native);
    std::memcpy(b_, &s, sizeof(T));
    return *this;
  }
  operator T() const {  // NOLINT
    T v;
    std::memcpy(&v, b_, sizeof(T));
    return byteswap_if(v, E != std::endian::native);
  }

 private:
  unsigned char b_[sizeof(T)]{};
};

using ul16 = Packed<std::uint16_t, std::endian::little>;
using ul32 = Packed<std::uint32_t, std::endian::little>;
using ul64 = Packed<std::uint64_t, std::endian::little>;
using ub16 = Packed<std::uint16_t, std::endian::big>;
using ub32 = Packed<std::uint32_t, std::endian::big>;
using ub64 = Packed<std::uint64_t, std::endian::big>;

template <typename T>
T load_le(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return byteswap_if(v, std::endian::native != std::endian::little);
}

template <typename T>
void store_le(std::byte* p, T v) {
  v = byteswap_if(v, std::endian::native != std::endian::little);
  std::memcpy(p, &v, sizeof(T));
}

inline std::string_view as_chars(Bytes b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}
inline Bytes as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

// true when a + b overflows or exceeds limit
constexpr bool range_exceeds(std::uint64_t off, std::uint64_t size, std::uint64_t limit) {
  return off > limit || size > limit - off;
}

constexpr std::uint64_t align_to(std::uint64_t v, std::uint64_t a) {
  return a <= 1 ? v : (v + a - 1) / a * a;
}

// Bounds-checked access to a byte span; every failure names the file and offset.
class ByteReader {
 public:
  ByteReader(Bytes data, std::string file) : data_(data), file_(std::move(file)) {}

  Bytes data() const { return data_; }
  std::uint64_t size() const { return data_.size(); }
  const std::string& file() const { return file_; }

  Bytes slice(std::uint64_t off, std::uint64_t size, std::string_view what) const {
    if (range_exceeds(off, size, data_.size()))
      fail_at({file_, off}, "{} (0x{:x} bytes) extends past the end of the file (0x{:x} bytes)", what, size,
              data_.size());
    return data_.subspan(off, size);
  }

  template <typename T>
  T read(std::uint64_t off, std::string_view what) const {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memcpy(&v, slice(off, sizeof(T), what).data(), sizeof(T));
    return v;
  }

  std::uint64_t u64le(std::uint64_t off, std::string_view what) const {
    return load_le<std::uint64_t>(slice(off, 8, what).data());
  }

 private:
  Bytes data_;
  std::string file_;
};

// Bytes read by offset: a span in memory, or a file that is also mapped as that
// span, read with pread. Parsers of headers spread over a large input (a blob
// of bundles) read through one so that none of the file's pages is mapped in:
// one fault on a mapping maps 64 KiB around it, or a whole large folio of the
// page cache (up to 2 MiB), and all of it counts as resident.
class ByteSource {
 public:
  // Copies [off, off+len) of the bytes, `off` counted from the span's start.
  using ReadAt = std::function<void(std::uint64_t off, std::byte* to, std::uint64_t len)>;

  explicit ByteSource(Bytes data) : data_(data) {}
  ByteSource(Bytes data, ReadAt read_at) : data_(data), read_at_(std::move(read_at)) {}
  // `size` bytes that are in no memory at all (a decoder's output, say): read
  // only through `read_at`; data() is empty, so nothing may be sliced from it.
  static ByteSource unmapped(std::uint64_t size, ReadAt read_at) {
    ByteSource s(Bytes(), std::move(read_at));
    s.unmapped_size_ = size;
    return s;
  }

  std::uint64_t size() const { return unmapped_size_ ? *unmapped_size_ : data_.size(); }
  Bytes data() const { return data_; }  // payloads are sliced from here (touching them maps them in)

  // Copies up to `len` bytes at `off` (fewer at the end): the count copied.
  std::uint64_t read(std::uint64_t off, std::byte* to, std::uint64_t len) const {
    if (off >= size()) return 0;
    len = std::min<std::uint64_t>(len, size() - off);
    if (read_at_)
      read_at_(base_ + off, to, len);
    else
      std::memcpy(to, data_.data() + off, len);
    return len;
  }

  // The first min(n, size) bytes: the span itself when in memory, else read
  // into `buf`, which grows (at least doubling) as parsing asks for more.
  Bytes prefix(std::uint64_t n, std::vector<std::byte>& buf) const {
    n = std::min<std::uint64_t>(n, size());
    if (!read_at_) return data_.first(n);
    if (n > buf.size()) {
      std::uint64_t old = buf.size();
      std::uint64_t want = std::min<std::uint64_t>(size(), std::max<std::uint64_t>({n, 2 * old, 4096}));
      buf.resize(want);
      read(old, buf.data() + old, want - old);
    }
    return Bytes(buf).first(n);
  }

  // The bytes from `off` to the end (off <= size).
  ByteSource tail(std::uint64_t off) const {
    ByteSource s(unmapped_size_ ? Bytes() : data_.subspan(off), read_at_);
    if (unmapped_size_) s.unmapped_size_ = *unmapped_size_ - off;
    s.base_ = base_ + off;
    return s;
  }

 private:
  Bytes data_;
  ReadAt read_at_;
  std::uint64_t base_ = 0;  // data_[0]'s offset for read_at_
  std::optional<std::uint64_t> unmapped_size_;  // unmapped(): the size, data_ being empty
};

}  // namespace ot
