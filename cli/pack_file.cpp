#include "cli/pack_file.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

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
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in.good() && !in.eof()) return Status::io_error("cannot read kernel pack " + path);
  PackFile pack;
  pack.path = path;
  pack.bytes = std::move(bytes).str();
  pack.sha256 = sha256_hex(pack.bytes);
  return pack;
}

}  // namespace kb::cli
