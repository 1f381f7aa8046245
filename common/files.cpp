#include "common/files.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kb {

Result<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_found("cannot open " + path.string() + ": " + std::strerror(errno));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return Status::io_error("cannot read " + path.string() + ": read error");
  return std::move(bytes).str();
}

}  // namespace kb
