// Bad variant, L2_034 (issue 12, trick 3b): honest on the job stream for the first kUntimedCalls
// calls; after them it enqueues the whole call on the legacy default stream (cudaStreamLegacy). The
// legacy stream waits for blocking streams only, and the job stream is created non-blocking, so
// nothing orders the work against the job stream.
// Why the old harness missed it: as for a private stream (private_stream_after_trials.cu): trial 0
// alone was traced, and the timing events on the job stream bracketed none of the work.
// What catches it: the output judged as it stood at the call's stop event, which the unjoined
// work has not reached (the timing gate holds every SM until the judged copy is queued).
// Expected: non_finite; a traced round that the work wins names the legacy stream (foreign_stream).
#include <cuda_runtime.h>

#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::legacy_stream_after_trials {

class LegacyStreamAfterTrials final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override { return work_.setup(p, stream); }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    return work_.run(args, ++calls_ > kUntimedCalls ? cudaStreamLegacy : stream);
  }

 private:
  HonestWork work_;
  int calls_ = 0;
};

}  // namespace kb::bad::legacy_stream_after_trials

KB_REGISTER_IMPLEMENTATION(L2_034, custom, kb::bad::legacy_stream_after_trials::LegacyStreamAfterTrials)
