// The worker's kernel packs, by content hash: `<state>/packs/<sha256>.so`. A run names its pack
// by hash; a worker that lacks it asks the coordinator (PACK_REQUEST) and stores the bytes here
// once their sha256 matches the name, so every pack is fetched once per machine and state dir.
//
// Files are written to a temp name, fsync()ed, renamed, and the directory fsync()ed, so a
// half-written pack is never loaded and a stored one survives a crash. The directory is 0700.
// The hash is checked here on arrival and again by kb-executor before every load
// (executor/kernel_pack.h), so a cache file changed afterwards is refused, never run.
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

// Creates `dir` (and parents) and sets it to mode 0700: the worker's state is its own.
Status make_private_dir(const std::filesystem::path& dir);
// fsync() of a directory, so that a rename in it is durable.
Status sync_dir(const std::filesystem::path& dir);

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
