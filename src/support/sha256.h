// SHA-256 through nettle (as support/md5.h), with the digest in the form a
// Python wheel's RECORD writes it: URL-safe base64 without '=' padding (PEP 376, 427).
#pragma once

#include <cstdint>
#include <string>

#include <nettle/base64.h>
#include <nettle/sha2.h>

#include "support/bytes.h"

namespace ot {

class Sha256 {
 public:
  Sha256() { sha256_init(&ctx_); }
  void update(Bytes data) { sha256_update(&ctx_, data.size(), reinterpret_cast<const std::uint8_t*>(data.data())); }
  // "sha256=" and the digest in URL-safe base64, unpadded (resets the hash).
  std::string record_hash() {
    std::uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_digest(&ctx_, sizeof digest, digest);
    char text[BASE64_ENCODE_LENGTH(SHA256_DIGEST_SIZE) + BASE64_ENCODE_FINAL_LENGTH];
    base64_encode_ctx b;
    base64url_encode_init(&b);
    std::size_t n = base64_encode_update(&b, text, sizeof digest, digest);
    n += base64_encode_final(&b, text + n);
    std::string out(text, n);
    while (!out.empty() && out.back() == '=') out.pop_back();
    return "sha256=" + out;
  }

 private:
  sha256_ctx ctx_;
};

}  // namespace ot
