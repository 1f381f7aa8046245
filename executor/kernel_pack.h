// A loaded kernel pack (kernels/pack_abi.h): reads the library's bytes, checks their sha256
// against the expected hash, dlopen()s exactly those bytes, checks its ABI version and keeps it
// loaded for the object's life.
//
// Why the bytes are copied: the hash must cover what is loaded. The bytes are hashed in memory
// and written to a sealed memfd that dlopen() then maps, so a file changed between the check and
// the load (a tampered cache entry, a race with a writer) is never the one that runs. The memfd
// is loaded under a name (/proc/self/fd/N) that no library still loaded holds: glibc answers a
// name it knows with the library it already has, and a pack can stay loaded after its object is
// gone (RTLD_NODELETE, GNU unique symbols).
//
// Two packs per job, two instances (docs/design.md#kernel-packs): the trusted
// reference pack and the untrusted candidate pack are separate files, each opened with
// RTLD_LOCAL, so neither can bind the other's symbols. Not dlmopen(LM_ID_NEWLM): a new link-map
// namespace loads a second libc, libstdc++ and CUDA runtime for the candidate; the CUDA driver
// does not support being loaded in two namespaces of one process, and the cudaStream_t the
// executor passes through the ABI must belong to the same runtime. Isolation from the candidate
// is the process and the sandbox around it (worker/sandbox.h), not the loader.
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
  // Loads `path` when its bytes hash to `expected_sha256` (64 lowercase hex digits; "" skips the
  // check, for a pack the caller built itself). Errors: not_found (unreadable, not loadable),
  // failed_precondition (hash mismatch: nothing was loaded), invalid_argument (not a pack, ABI).
  static Result<KernelPack> open(const std::string& path, const std::string& expected_sha256 = "");
  KernelPack(KernelPack&& other) noexcept;
  KernelPack& operator=(KernelPack&& other) noexcept;
  KernelPack(const KernelPack&) = delete;
  KernelPack& operator=(const KernelPack&) = delete;
  ~KernelPack();

  const kb_pack_v1_t& table() const { return *table_; }
  const std::string& path() const { return path_; }
  const std::string& sha256() const { return sha256_; }  // of the bytes that were loaded

 private:
  KernelPack() = default;
  void* handle_ = nullptr;
  int fd_ = -1;  // the sealed memfd the library was loaded from
  const kb_pack_v1_t* table_ = nullptr;
  std::string path_, sha256_;
};

}  // namespace kb
