// Bad variant, L2_060 (issue 12, trick 3a): honest on the job stream for the first kUntimedCalls
// calls; after them it enqueues the whole call on a private non-blocking stream and returns
// without joining it to the job stream.
// Why the old harness missed it: the launch trace covered trial 0 only, which was honest; the
// timing events on the job stream bracketed nothing (the work ran beside them, so the custom was
// timed at ~0), and the check after timing synchronized the device before reading.
// What catches it: the output judged as it stood at the call's stop event, which the work on the
// private stream has not reached (the timing gate holds every SM until the judged copy is
// queued). Expected: non_finite; a traced round that the work wins names the private stream
// (foreign_stream).
#include <cuda_runtime.h>

#include "common/cuda/cuda_check.h"
#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::private_stream_after_trials {

class PrivateStreamAfterTrials final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    KB_TRY(private_.create());
    return work_.setup(p, stream);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    return work_.run(args, ++calls_ > kUntimedCalls ? private_.get() : stream);
  }

 private:
  HonestWork work_;
  int calls_ = 0;
  PrivateStream private_;
};

}  // namespace kb::bad::private_stream_after_trials

KB_REGISTER_IMPLEMENTATION(L2_060, custom, kb::bad::private_stream_after_trials::PrivateStreamAfterTrials)
