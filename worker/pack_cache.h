// The worker's kernel packs, by content hash: `<state>/packs/<sha256>.so`. A run names its pack
// by hash; a worker that lacks it asks the coordinator (PACK_REQUEST) and stores the bytes here
// once their sha256 matches the name, so every pack is fetched once per machine and state dir.
//
// Files are written to a temp name and renamed, so a half-written pack is never loaded.
//
// Errors: store() fails (invalid_argument) when the bytes do not hash to the name or the name is
// not a sha256 (64 lowercase hex digits: it becomes a file name), io_error when writing fails.
// Thread safety: one thread.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace kb {

class PackCache {
 public:
  explicit PackCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

  static bool is_valid_hash(std::string_view hash);
  // The cached pack's path, when it is there.
  std::optional<std::string> path_of(const std::string& hash) const;
  // Verifies and stores; returns the path.
  Result<std::string> store(const std::string& hash, std::string_view bytes);

  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path file_of(const std::string& hash) const { return dir_ / (hash + ".so"); }

  std::filesystem::path dir_;
};

}  // namespace kb
