// Bad variant, L1_019 (the 2026-12-07 review): honest on the job stream for the first
// kUntimedCalls calls; after them run() does the whole call on a private stream, waits for it on
// the host, and then launches a trivial kernel of its own on the job stream. Why the one-thread
// timing gate missed it: that gate held the job stream alone, so the private work ran while the
// host waited inside run(); the events on the job stream timed only the trivial kernel, and the
// output was complete before run() returned. Untraced rounds (three quarters) saw nothing; a traced
// round sees the private stream. What catches it: the gate holds the whole GPU
// (executor/stream_gate.cuh), so the private work cannot start before run() returns: the call waits
// out the gate's timeout, its sample is void, and the ungated samples after it count the host's
// wait. A traced round: foreign_stream.
#include <cuda_runtime.h>

#include "common/cuda/cuda_check.h"
#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::host_waits_on_private_stream {

class HostWaitsOnPrivateStream final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    KB_TRY(private_.create());
    return work_.setup(p, stream);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    if (++calls_ <= kUntimedCalls) return work_.run(args, stream);
    KB_TRY(work_.run(args, private_.get()));
    KB_CUDA_TRY(cudaStreamSynchronize(private_.get()));
    return ballast(1000, stream);
  }

 private:
  HonestWork work_;
  int calls_ = 0;
  PrivateStream private_;
};

}  // namespace kb::bad::host_waits_on_private_stream

KB_REGISTER_IMPLEMENTATION(L1_019, custom,
                           kb::bad::host_waits_on_private_stream::HostWaitsOnPrivateStream)
