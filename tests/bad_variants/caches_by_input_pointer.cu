// Bad variant (d), L1_054: memoizes on the address of its input: recomputes only when x's pointer
// changes, otherwise copies the output it kept. The executor's correctness trials refill one input
// buffer with fresh data, so the second trial gets a stale answer. Expected verdict: mismatch, at
// the second correctness trial (correctness_trials == 1).
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>

#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::caches_by_input_pointer {

class CachesByInputPointer final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    KB_TRY(saved_.allocate(element_count(p.output_shape())));
    return make_reference(p, stream, reference_);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const float* x = args.inputs[x_].data;
    if (x == cached_for_) return copy(saved_.data(), args.output.data, saved_.count(), stream);
    KB_TRY(reference_->run(args, stream));
    cached_for_ = x;
    return copy(args.output.data, saved_.data(), saved_.count(), stream);
  }

 private:
  std::unique_ptr<Implementation> reference_;
  size_t x_ = 0;
  const float* cached_for_ = nullptr;  // the x whose output saved_ holds
  DeviceScratch saved_;
};

}  // namespace kb::bad::caches_by_input_pointer

KB_REGISTER_IMPLEMENTATION(L1_054, custom, kb::bad::caches_by_input_pointer::CachesByInputPointer)
