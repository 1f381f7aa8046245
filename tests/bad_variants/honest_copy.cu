// The pack's control, L1_060: built like the bad variants (the reference's work into a scratch
// buffer, then a copy kernel of our own, all on the job stream) but without a trick. Expected
// verdict: ok — which shows that the bad variants' verdicts come from their tricks, not from the
// way this pack is put together.
#include <cuda_runtime.h>

#include <memory>

#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::honest_copy {

class HonestCopy final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    KB_TRY(scratch_.allocate(element_count(p.output_shape())));
    return make_reference(p, stream, reference_);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    ImplArgs into_scratch = args;
    into_scratch.output.data = scratch_.data();
    KB_TRY(reference_->run(into_scratch, stream));
    return copy(scratch_.data(), args.output.data, scratch_.count(), stream);
  }

 private:
  std::unique_ptr<Implementation> reference_;
  DeviceScratch scratch_;
};

}  // namespace kb::bad::honest_copy

KB_REGISTER_IMPLEMENTATION(L1_060, custom, kb::bad::honest_copy::HonestCopy)
