#include "formats/llvm_densemap_order.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <utility>

#include <xxhash.h>

#include "support/bytes.h"

namespace ot::formats {
namespace {

// The CityHash-derived constants of llvm/ADT/Hashing.h.
constexpr std::uint64_t kK0 = 0xc3a5c85c97cb3127ULL;
constexpr std::uint64_t kK1 = 0xb492b66fbe98f273ULL;
constexpr std::uint64_t kK2 = 0x9ae16a3b2f90404fULL;
constexpr std::uint64_t kK3 = 0xc949d7c7509e6557ULL;
constexpr std::uint64_t kMul = 0x9ddfea08eb382d69ULL;
constexpr std::uint64_t kSeed = 0xff51afd7ed558ccdULL;

std::uint64_t f64(const unsigned char* p) { return load_le<std::uint64_t>(reinterpret_cast<const std::byte*>(p)); }
std::uint32_t f32(const unsigned char* p) { return load_le<std::uint32_t>(reinterpret_cast<const std::byte*>(p)); }
std::uint64_t rot(std::uint64_t v, int s) { return s == 0 ? v : std::rotr(v, s); }
std::uint64_t shift_mix(std::uint64_t v) { return v ^ (v >> 47); }

std::uint64_t hash16(std::uint64_t lo, std::uint64_t hi) {
  std::uint64_t a = (lo ^ hi) * kMul;
  a ^= a >> 47;
  std::uint64_t b = (hi ^ a) * kMul;
  b ^= b >> 47;
  return b * kMul;
}

std::uint64_t hash_1to3(const unsigned char* s, std::size_t len, std::uint64_t seed) {
  std::uint32_t y = static_cast<std::uint32_t>(s[0]) + (static_cast<std::uint32_t>(s[len >> 1]) << 8);
  std::uint32_t z = static_cast<std::uint32_t>(len) + (static_cast<std::uint32_t>(s[len - 1]) << 2);
  return shift_mix((y * kK2) ^ (z * kK3) ^ seed) * kK2;
}

std::uint64_t hash_4to8(const unsigned char* s, std::size_t len, std::uint64_t seed) {
  std::uint64_t a = f32(s);
  return hash16(len + (a << 3), seed ^ f32(s + len - 4));
}

std::uint64_t hash_9to16(const unsigned char* s, std::size_t len, std::uint64_t seed) {
  std::uint64_t a = f64(s), b = f64(s + len - 8);
  return hash16(seed ^ a, rot(b + len, static_cast<int>(len))) ^ b;
}

std::uint64_t hash_17to32(const unsigned char* s, std::size_t len, std::uint64_t seed) {
  std::uint64_t a = f64(s) * kK1, b = f64(s + 8), c = f64(s + len - 8) * kK2, d = f64(s + len - 16) * kK0;
  return hash16(rot(a - b, 43) + rot(c ^ seed, 30) + d, a + rot(b ^ kK3, 20) - c + len + seed);
}

std::uint64_t hash_33to64(const unsigned char* s, std::size_t len, std::uint64_t seed) {
  std::uint64_t z = f64(s + 24);
  std::uint64_t a = f64(s) + (len + f64(s + len - 16)) * kK0;
  std::uint64_t b = rot(a + z, 52), c = rot(a, 37);
  a += f64(s + 8);
  c += rot(a, 7);
  a += f64(s + 16);
  std::uint64_t vf = a + z, vs = b + rot(a, 31) + c;
  a = f64(s + 16) + f64(s + len - 32);
  z = f64(s + len - 8);
  b = rot(a + z, 52);
  c = rot(a, 37);
  a += f64(s + len - 24);
  c += rot(a, 7);
  a += f64(s + len - 16);
  std::uint64_t wf = a + z, ws = b + rot(a, 31) + c;
  std::uint64_t r = shift_mix((vf + ws) * kK2 + (wf + vs) * kK0);
  return shift_mix((seed ^ (r * kK0)) + vs) * kK2;
}

std::uint64_t hash_short(const unsigned char* s, std::size_t len, std::uint64_t seed) {
  if (len >= 4 && len <= 8) return hash_4to8(s, len, seed);
  if (len > 8 && len <= 16) return hash_9to16(s, len, seed);
  if (len > 16 && len <= 32) return hash_17to32(s, len, seed);
  if (len > 32) return hash_33to64(s, len, seed);
  if (len != 0) return hash_1to3(s, len, seed);
  return kK2 ^ seed;
}

// The 56-byte running state used for inputs longer than 64 bytes.
struct LongState {
  std::uint64_t h0, h1, h2, h3, h4, h5, h6;

  static void mix32(const unsigned char* s, std::uint64_t& a, std::uint64_t& b) {
    a += f64(s);
    std::uint64_t c = f64(s + 24);
    b = rot(b + a + c, 21);
    std::uint64_t d = a;
    a += f64(s + 8) + f64(s + 16);
    b += rot(a, 44) + d;
    a += c;
  }

  static LongState start(const unsigned char* s, std::uint64_t seed) {
    LongState st{0, seed, hash16(seed, kK1), rot(seed ^ kK1, 49), seed * kK1, shift_mix(seed), 0};
    st.h6 = hash16(st.h4, st.h5);
    st.mix(s);
    return st;
  }

  void mix(const unsigned char* s) {
    h0 = rot(h0 + h1 + h3 + f64(s + 8), 37) * kK1;
    h1 = rot(h1 + h4 + f64(s + 48), 42) * kK1;
    h0 ^= h6;
    h1 += h3 + f64(s + 40);
    h2 = rot(h2 + h5, 33) * kK1;
    h3 = h4 * kK1;
    h4 = h0 + h5;
    mix32(s, h3, h4);
    h5 = h2 + h6;
    h6 = h1 + f64(s + 16);
    mix32(s + 32, h5, h6);
    std::swap(h2, h0);
  }

  std::uint64_t finish(std::uint64_t len) const {
    return hash16(hash16(h3, h5) + shift_mix(h1) * kK1 + h2, hash16(h4, h6) + shift_mix(len) * kK1 + h0);
  }
};

}  // namespace

std::uint64_t llvm_hash_value(std::string_view str) {
  const auto* s = reinterpret_cast<const unsigned char*>(str.data());
  const std::size_t len = str.size();
  if (len <= 64) return hash_short(s, len, kSeed);
  const unsigned char* aligned_end = s + (len & ~std::size_t{63});
  LongState st = LongState::start(s, kSeed);
  for (const unsigned char* p = s + 64; p != aligned_end; p += 64) st.mix(p);
  if (len & 63) st.mix(s + len - 64);
  return st.finish(len);
}

std::uint64_t llvm23_hash_value(std::string_view s) { return XXH3_64bits(s.data(), s.size()) ^ kSeed; }

std::vector<std::size_t> densemap_iteration_order(std::span<const std::string_view> keys,
                                                  std::uint64_t (*hash)(std::string_view), bool linear_probing) {
  // DenseMapInfo<StringRef>::getHashValue truncates the hash to `unsigned`.
  std::vector<std::uint32_t> hashes;
  hashes.reserve(keys.size());
  for (std::string_view k : keys) hashes.push_back(static_cast<std::uint32_t>(hash(k)));

  std::vector<std::optional<std::size_t>> buckets;
  auto place = [&](std::size_t index) {
    const std::size_t mask = buckets.size() - 1;
    std::size_t b = hashes[index] & mask;
    for (std::size_t probe = 1; buckets[b]; ++probe) b = (b + (linear_probing ? 1 : probe)) & mask;
    buckets[b] = index;
  };
  std::size_t entries = 0;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    // Grow before inserting once the table would become 3/4 full: to 64
    // buckets first, then doubling; old entries move over in bucket order.
    if ((entries + 1) * 4 >= buckets.size() * 3) {
      std::vector<std::optional<std::size_t>> old = std::move(buckets);
      buckets.assign(std::max<std::size_t>(64, old.size() * 2), std::nullopt);
      for (const auto& slot : old)
        if (slot) place(*slot);
    }
    place(i);
    ++entries;
  }
  std::vector<std::size_t> order;
  order.reserve(keys.size());
  for (const auto& slot : buckets)
    if (slot) order.push_back(*slot);
  return order;
}

}  // namespace ot::formats
