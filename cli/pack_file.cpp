#include "cli/pack_file.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/files.h"
#include "common/sha256.h"

namespace kb::cli {

namespace fs = std::filesystem;

std::string default_pack_path() {
  if (const char* env = std::getenv("KB_PACK_PATH"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (const fs::path& candidate : {self.parent_path() / "libkbpack.so",
                                    self.parent_path().parent_path() / "kernels" / "libkbpack.so",
                                    self.parent_path().parent_path() / "lib" / "libkbpack.so"}) {
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
  }
  return "";
}

Result<PackFile> read_pack_file(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return Status::not_found("kernel pack " + path + " is not a file");
  Result<std::string> bytes = read_file(path);
  if (!bytes.is_ok())
    return Status::io_error("cannot read kernel pack: " + bytes.status().message());
  PackFile pack;
  pack.path = path;
  pack.bytes = std::move(bytes).value();
  pack.sha256 = sha256_hex(pack.bytes);
  return pack;
}

}  // namespace kb::cli
