#include "worker/pack_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/sha256.h"

namespace kb {

namespace fs = std::filesystem;

namespace {

Status errno_status(const std::string& what) { return Status::io_error(what + ": " + std::strerror(errno)); }

Status write_synced(const fs::path& path, std::string_view bytes) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return errno_status("cannot create " + path.string());
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s = errno_status("cannot write " + path.string());
      close(fd);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) {
    Status s = errno_status("cannot fsync " + path.string());
    close(fd);
    return s;
  }
  if (close(fd) != 0) return errno_status("cannot close " + path.string());
  return Status::ok();
}

}  // namespace

Status make_private_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::io_error("cannot create " + dir.string() + ": " + ec.message());
  if (chmod(dir.c_str(), 0700) != 0) return errno_status("cannot chmod 0700 " + dir.string());
  return Status::ok();
}

Status sync_dir(const fs::path& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_status("cannot open " + dir.string());
  const int rc = fsync(fd);
  Status s = rc == 0 ? Status::ok() : errno_status("cannot fsync " + dir.string());
  close(fd);
  return s;
}

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
  if (Status s = make_private_dir(dir_); !s.is_ok()) return s;
  const fs::path file = file_of(hash);
  fs::path temp = file;
  temp += ".tmp" + std::to_string(getpid());
  // Durable before visible: the bytes reach the disk before the rename publishes the name, and
  // the directory entry after it, so a crash leaves the old state or the whole pack.
  if (Status s = write_synced(temp, bytes); !s.is_ok()) return s;
  std::error_code ec;
  fs::rename(temp, file, ec);
  if (ec) return Status::io_error("cannot rename " + temp.string() + ": " + ec.message());
  if (Status s = sync_dir(dir_); !s.is_ok()) return s;
  return file.string();
}

}  // namespace kb
