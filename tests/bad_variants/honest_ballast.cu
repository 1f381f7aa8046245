// Control, L2_010: HonestWork alone (bad_common.h): the reference's work into the output, then the
// ballast kernel of our own, all on the job stream, on every call. Expected: ok. It shows that the
// variants built on HonestWork are caught for their tricks, not for the way their honest part is
// put together (the ballast makes own kernels carry most of the GPU time, so it is not
// library_dominated, and slower than the reference, so never implausible).
#include <cuda_runtime.h>

#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::honest_ballast {

class HonestBallast final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override { return work_.setup(p, stream); }
  Status run(const ImplArgs& args, cudaStream_t stream) override { return work_.run(args, stream); }

 private:
  HonestWork work_;
};

}  // namespace kb::bad::honest_ballast

KB_REGISTER_IMPLEMENTATION(L2_010, custom, kb::bad::honest_ballast::HonestBallast)
