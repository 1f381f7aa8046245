#include "common/sha256.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace kb {

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1 || length != 32) {
    throw std::runtime_error("EVP_Digest(sha256) failed");
  }
  static const char kHex[] = "0123456789abcdef";
  std::string hex(2 * length, '0');
  for (unsigned i = 0; i < length; ++i) {
    hex[2 * i] = kHex[digest[i] >> 4];
    hex[2 * i + 1] = kHex[digest[i] & 0xf];
  }
  return hex;
}

}  // namespace kb
