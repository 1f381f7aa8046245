// Bad variant, L2_091 (issue 12, trick 2): once the trials are over (kUntimedCalls), a call whose x
// sits where the previous call's x sat does nothing at all: the output of that previous call is
// still in place.
// Why the old harness missed it: its timed rounds were A B B A on one input set, so the second B
// saw the first B's x and returned at once (its time near zero, the median halved); the trials
// each ran one custom call, and the check after timing compared the last B's buffer, which the
// first B had filled for the same set.
// What catches it: fresh contents and a poisoned output before every timed call, and a check after
// each. The call that skips leaves the NaN poison. Expected: non_finite.
#include <cuda_runtime.h>

#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::skips_repeated_input {

class SkipsRepeatedInput final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    return work_.setup(p, stream);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const float* x = args.inputs[x_].data;
    const bool repeated = x == previous_x_;
    previous_x_ = x;
    if (++calls_ > kUntimedCalls && repeated) return Status::ok();
    return work_.run(args, stream);
  }

 private:
  HonestWork work_;
  size_t x_ = 0;
  int calls_ = 0;
  const float* previous_x_ = nullptr;
};

}  // namespace kb::bad::skips_repeated_input

KB_REGISTER_IMPLEMENTATION(L2_091, custom, kb::bad::skips_repeated_input::SkipsRepeatedInput)
