// Bad variant, L2_007 (issue 12, trick 4): once the trials are over (kUntimedCalls), every call
// first zeroes x and the conv weight in place, then computes honestly on what is left. From then
// on both variants are timed on degenerate data (and a kernel that special-cases zeros, or a
// reference slowed by denormals, would distort the ratio), and every later check compares two
// answers computed from zeros.
// Why the old harness missed it: the inputs were hashed around the trials only; the check after
// timing ran the reference on the zeroed set too, so both outputs agreed.
// What catches it: the inputs and parameters are hashed around every timed call. Expected:
// input_mutated.
#include <cuda_runtime.h>

#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::zeroes_inputs_when_timed {

class ZeroesInputsWhenTimed final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv.weight");
    return work_.setup(p, stream);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    if (++calls_ > kUntimedCalls) {
      for (const DeviceTensor& t : {args.inputs[x_], args.params[weight_]}) KB_TRY(fill(t.data, t.numel(), 0.0f, stream));
    }
    return work_.run(args, stream);
  }

 private:
  HonestWork work_;
  size_t x_ = 0, weight_ = 0;
  int calls_ = 0;
};

}  // namespace kb::bad::zeroes_inputs_when_timed

KB_REGISTER_IMPLEMENTATION(L2_007, custom, kb::bad::zeroes_inputs_when_timed::ZeroesInputsWhenTimed)
