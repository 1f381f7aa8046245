// A loaded kernel pack (kernels/pack_abi.h): dlopen()s the shared library, checks its ABI
// version and keeps it loaded for the object's life.
//
// Ownership: owns the library handle; move-only. The table stays valid while the object lives.
// Thread safety: the table's functions are thread-safe as pack_abi.h says.
#pragma once

#include <string>

#include "common/status.h"
#include "kernels/pack_abi.h"

namespace kb {

class KernelPack {
 public:
  static Result<KernelPack> open(const std::string& path);
  KernelPack(KernelPack&& other) noexcept;
  KernelPack& operator=(KernelPack&& other) noexcept;
  KernelPack(const KernelPack&) = delete;
  KernelPack& operator=(const KernelPack&) = delete;
  ~KernelPack();

  const kb_pack_v1_t& table() const { return *table_; }
  const std::string& path() const { return path_; }

 private:
  KernelPack() = default;
  void* handle_ = nullptr;
  const kb_pack_v1_t* table_ = nullptr;
  std::string path_;
};

}  // namespace kb
