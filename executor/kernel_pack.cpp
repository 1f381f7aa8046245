#include "executor/kernel_pack.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>

#include "common/files.h"
#include "common/sha256.h"

namespace kb {
namespace {

// A pack passed as an inherited descriptor ("/proc/self/fd/N", worker/executor_child.h) is
// read through that descriptor: reopening the path would check the file's mode against this
// process's uid, which in the sandbox is not the owner's.
Result<std::string> read_descriptor(int fd, const std::string& path) {
  std::string bytes;
  char buf[1 << 16];
  off_t offset = 0;
  ssize_t n;
  while ((n = pread(fd, buf, sizeof buf, offset)) > 0) {
    bytes.append(buf, static_cast<size_t>(n));
    offset += n;
  }
  if (n < 0)
    return Status::not_found("cannot load kernel pack " + path + ": " + std::strerror(errno));
  return bytes;
}

Result<std::string> read_bytes(const std::string& path) {
  constexpr std::string_view kFdPrefix = "/proc/self/fd/";
  if (path.rfind(kFdPrefix, 0) == 0) {
    const std::string number = path.substr(kFdPrefix.size());
    if (!number.empty() && number.find_first_not_of("0123456789") == std::string::npos) {
      return read_descriptor(std::stoi(number), path);
    }
  }
  Result<std::string> bytes = read_file(path);
  if (!bytes.is_ok()) {
    return Status::not_found("cannot load kernel pack " + path + " (" + bytes.status().message() +
                             ")");
  }
  return bytes;
}

// A sealed anonymous file holding `bytes`: nobody, this process included, can change it after.
Result<int> sealed_memfd(const std::string& bytes, const std::string& path) {
  const int fd = memfd_create("kb-pack", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return Status::io_error(std::string("memfd_create: ") + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      return Status::io_error("cannot copy kernel pack " + path + ": " + std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
  return fd;
}

}  // namespace

Result<KernelPack> KernelPack::open(const std::string& path, const std::string& expected_sha256) {
  KB_ASSIGN_OR_RETURN(const std::string bytes, read_bytes(path));
  const std::string actual = sha256_hex(bytes);
  if (!expected_sha256.empty() && actual != expected_sha256) {
    return Status::failed_precondition("kernel pack " + path + " has sha256 " + actual +
                                       ", expected " + expected_sha256 + ": refused, not loaded");
  }
  KB_ASSIGN_OR_RETURN(const int fd, sealed_memfd(bytes, path));
  // RTLD_LOCAL: the reference and the candidate pack in one process must not share symbols.
  const std::string fd_path = "/proc/self/fd/" + std::to_string(fd);
  void* handle = dlopen(fd_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    close(fd);
    return Status::not_found("cannot load kernel pack " + path + ": " + dlerror());
  }
  // The memfd stays open while the library is loaded: glibc knows a library by the name it was
  // opened with, and a closed fd's number (the same /proc/self/fd/N) could name the next pack.
  KernelPack pack;
  pack.handle_ = handle;
  pack.fd_ = fd;
  auto entry = reinterpret_cast<kb_pack_v1_fn>(dlsym(handle, "kb_pack_v1"));
  if (!entry) {
    return Status::invalid_argument(path + " is not a kernel pack (no kb_pack_v1)");
  }
  const kb_pack_v1_t* table = entry();
  if (!table || table->abi_version != KB_PACK_ABI_VERSION) {
    return Status::invalid_argument(path + ": pack ABI version " +
                                    std::to_string(table ? table->abi_version : 0) + ", expected " +
                                    std::to_string(KB_PACK_ABI_VERSION));
  }
  pack.table_ = table;
  pack.path_ = path;
  pack.sha256_ = actual;
  return pack;
}

KernelPack::KernelPack(KernelPack&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      fd_(std::exchange(other.fd_, -1)),
      table_(std::exchange(other.table_, nullptr)),
      path_(std::move(other.path_)),
      sha256_(std::move(other.sha256_)) {}

KernelPack& KernelPack::operator=(KernelPack&& other) noexcept {
  std::swap(handle_, other.handle_);
  std::swap(fd_, other.fd_);
  std::swap(table_, other.table_);
  std::swap(path_, other.path_);
  std::swap(sha256_, other.sha256_);
  return *this;
}

KernelPack::~KernelPack() {
  if (handle_) dlclose(handle_);
  if (fd_ >= 0) close(fd_);
}

}  // namespace kb
