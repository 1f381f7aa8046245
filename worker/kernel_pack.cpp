#include "worker/kernel_pack.h"

#include <dlfcn.h>

#include <utility>

namespace kb {

Result<KernelPack> KernelPack::open(const std::string& path) {
  // RTLD_LOCAL: two packs (two commits) in one process must not share symbols.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return Status::not_found("cannot load kernel pack " + path + ": " + dlerror());
  auto entry = reinterpret_cast<kb_pack_v1_fn>(dlsym(handle, "kb_pack_v1"));
  if (!entry) {
    dlclose(handle);
    return Status::invalid_argument(path + " is not a kernel pack (no kb_pack_v1)");
  }
  const kb_pack_v1_t* table = entry();
  if (!table || table->abi_version != KB_PACK_ABI_VERSION) {
    dlclose(handle);
    return Status::invalid_argument(path + ": pack ABI version " +
                                    std::to_string(table ? table->abi_version : 0) + ", expected " +
                                    std::to_string(KB_PACK_ABI_VERSION));
  }
  KernelPack pack;
  pack.handle_ = handle;
  pack.table_ = table;
  pack.path_ = path;
  return pack;
}

KernelPack::KernelPack(KernelPack&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)),
      table_(std::exchange(other.table_, nullptr)),
      path_(std::move(other.path_)) {}

KernelPack& KernelPack::operator=(KernelPack&& other) noexcept {
  std::swap(handle_, other.handle_);
  std::swap(table_, other.table_);
  std::swap(path_, other.path_);
  return *this;
}

KernelPack::~KernelPack() {
  if (handle_) dlclose(handle_);
}

}  // namespace kb
