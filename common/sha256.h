// SHA-256 (FIPS 180-4) of a byte string, as 64 lowercase hex characters. Kernel packs are stored
// and served by this content hash (schemas/0001_initial.sql, packs.hash); a small implementation
// here keeps OpenSSL out of the dependencies.
//
// Thread safety: Sha256 is a plain value (one object per thread); sha256_hex is a pure function.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kb {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  std::array<uint8_t, 32> finish();  // the object is spent afterwards

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

std::string sha256_hex(std::string_view bytes);

}  // namespace kb
