// Bad variant, L3_031 (issue 12, trick 6): the whole attention block is the reference's cuBLAS
// GEMMs and eager ops, written straight into the output; beside them runs one trivial kernel of
// our own (a one-element fill into a scratch buffer), so that the trace holds an own kernel.
// Why the old harness missed it: its launch rule was "at least one own kernel" (no_custom_kernel
// otherwise), which one token kernel satisfies; the job was `ok` at a speedup of ~1.
// What catches it: own kernels must carry at least half of the custom's GPU time; here they carry
// one fill kernel of about a microsecond beside tens of microseconds of library work. Expected:
// library_dominated.
#include <cuda_runtime.h>

#include <memory>

#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::library_with_token_kernel {

class LibraryWithTokenKernel final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    KB_TRY(token_.allocate(1));
    return make_reference(p, stream, reference_);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    KB_TRY(fill(token_.data(), 1, 0.0f, stream));
    return reference_->run(args, stream);
  }

 private:
  std::unique_ptr<Implementation> reference_;
  DeviceScratch token_;
};

}  // namespace kb::bad::library_with_token_kernel

KB_REGISTER_IMPLEMENTATION(L3_031, custom, kb::bad::library_with_token_kernel::LibraryWithTokenKernel)
