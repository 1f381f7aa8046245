// Bad variant (c), L2_021: computes honestly on its first call and keeps that output; every later
// call copies the kept output back, whatever the inputs. Expected verdict: mismatch, at the second
// correctness trial (the first passes: correctness_trials == 1).
#include <cuda_runtime.h>

#include <memory>

#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::returns_first_output {

class ReturnsFirstOutput final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    KB_TRY(saved_.allocate(element_count(p.output_shape())));
    return make_reference(p, stream, reference_);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    if (calls_++ > 0) return copy(saved_.data(), args.output.data, saved_.count(), stream);
    KB_TRY(reference_->run(args, stream));
    return copy(args.output.data, saved_.data(), saved_.count(), stream);
  }

 private:
  std::unique_ptr<Implementation> reference_;
  DeviceScratch saved_;  // the first call's output
  int64_t calls_ = 0;
};

}  // namespace kb::bad::returns_first_output

KB_REGISTER_IMPLEMENTATION(L2_021, custom, kb::bad::returns_first_output::ReturnsFirstOutput)
