// MD5 through nettle (a well-kept library already linked by libarchive) and
// LLVM's "truncated MD5": MD5(data).low(), the first 8 digest bytes read as a
// little-endian integer.
#pragma once

#include <cstdint>
#include <string>

#include <nettle/md5.h>

#include "support/bytes.h"

namespace ot {

class Md5 {
 public:
  Md5() { md5_init(&ctx_); }
  void update(Bytes data) {
    md5_update(&ctx_, data.size(), reinterpret_cast<const std::uint8_t*>(data.data()));
  }
  // The CCOB hash: first 8 digest bytes as a little-endian uint64.
  std::uint64_t truncated() {
    std::uint8_t digest[MD5_DIGEST_SIZE];
    md5_digest(&ctx_, sizeof digest, digest);
    return load_le<std::uint64_t>(reinterpret_cast<const std::byte*>(digest));
  }
  // The digest in lower-case hex, as md5sum and a .deb's md5sums write it.
  std::string hex() {
    std::uint8_t digest[MD5_DIGEST_SIZE];
    md5_digest(&ctx_, sizeof digest, digest);
    std::string out;
    for (std::uint8_t d : digest) {
      out += "0123456789abcdef"[d >> 4];
      out += "0123456789abcdef"[d & 15];
    }
    return out;
  }

 private:
  md5_ctx ctx_;
};

}  // namespace ot
