#include "worker/pack_cache.h"

#include <unistd.h>

#include <fstream>

#include "common/sha256.h"

namespace kb {

namespace fs = std::filesystem;

bool PackCache::is_valid_hash(std::string_view hash) {
  if (hash.size() != 64) return false;
  for (char c : hash) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::optional<std::string> PackCache::path_of(const std::string& hash) const {
  if (!is_valid_hash(hash)) return std::nullopt;
  std::error_code ec;
  const fs::path file = file_of(hash);
  if (!fs::is_regular_file(file, ec)) return std::nullopt;
  return file.string();
}

Result<std::string> PackCache::store(const std::string& hash, std::string_view bytes) {
  if (!is_valid_hash(hash))
    return Status::invalid_argument("pack name is not a sha256: " + hash.substr(0, 80));
  const std::string actual = sha256_hex(bytes);
  if (actual != hash) {
    return Status::invalid_argument("pack " + hash + " arrived with sha256 " + actual);
  }
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return Status::io_error("cannot create " + dir_.string() + ": " + ec.message());
  const fs::path file = file_of(hash);
  fs::path temp = file;
  temp += ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) return Status::io_error("cannot write " + temp.string());
  }
  fs::rename(temp, file, ec);
  if (ec) return Status::io_error("cannot rename " + temp.string() + ": " + ec.message());
  return file.string();
}

}  // namespace kb
