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

// The name dlopen() is given for the memfd: /proc/self/fd/N, with N moved (fd updated) until no
// loaded library holds that name. glibc knows a loaded library by the name it was opened with,
// and a library can outlive its KernelPack: dlclose() leaves one with GNU unique symbols mapped
// (a sanitizer build's packs have them), as it does one marked RTLD_NODELETE, which a pack can
// ask for itself. Its /proc/self/fd/N then names nothing open, and a later pack whose memfd got
// the same number would be handed the old library instead of the bytes just hashed
// (kernel_pack_test.cpp, KernelPack.ALibraryLeftLoadedNeverStandsInForTheNextPack).
Result<std::string> unclaimed_name(int& fd, const std::string& path) {
  constexpr int kAttempts = 64;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    std::string name = "/proc/self/fd/" + std::to_string(fd);
    void* resident = dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (resident == nullptr) return name;
    dlclose(resident);  // the reference RTLD_NOLOAD took
    const int higher = fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
    if (higher < 0) {
      return Status::io_error("cannot renumber the copy of kernel pack " + path + ": " +
                              std::strerror(errno));
    }
    close(fd);
    fd = higher;
  }
  return Status::internal("kernel pack " + path + ": " + std::to_string(kAttempts) +
                          " descriptor names in a row belong to libraries still loaded");
}

}  // namespace

Result<KernelPack> KernelPack::open(const std::string& path, const std::string& expected_sha256) {
  KB_ASSIGN_OR_RETURN(const std::string bytes, read_bytes(path));
  const std::string actual = sha256_hex(bytes);
  if (!expected_sha256.empty() && actual != expected_sha256) {
    return Status::failed_precondition("kernel pack " + path + " has sha256 " + actual +
                                       ", expected " + expected_sha256 + ": refused, not loaded");
  }
  KB_ASSIGN_OR_RETURN(int fd, sealed_memfd(bytes, path));
  const Result<std::string> fd_path = unclaimed_name(fd, path);
  if (!fd_path.is_ok()) {
    close(fd);
    return fd_path.status();
  }
  // RTLD_LOCAL: the reference and the candidate pack in one process must not share symbols.
  void* handle = dlopen(fd_path.value().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    close(fd);
    return Status::not_found("cannot load kernel pack " + path + ": " + dlerror());
  }
  // The memfd stays open while the library is loaded: glibc knows a library by the name it was
  // opened with, and a closed fd's number (the same /proc/self/fd/N) could name the next pack
  // (unclaimed_name covers a library that stays loaded after its pack is gone).
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
