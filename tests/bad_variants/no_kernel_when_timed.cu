// Bad variant, L1_073 (issue 12; our addition): launches no kernel when timed. Once the trials are
// over (kUntimedCalls), the first call on an x (keyed by its address) computes honestly and keeps
// the output; every later call on that x is a single cudaMemcpyAsync of the kept output (a copy,
// not a kernel, on the job stream).
// Why the old harness missed it: its launch rule was checked on trial 0 only, where this variant
// launched its own kernels; the timing sets never changed, so the kept outputs stayed right, and
// the check after timing compared one of them.
// What catches it: fresh contents before every timed call and a check after each: the kept output
// belongs to other numbers. Expected: mismatch (the first failing check ends the job before the
// launch accounting of the whole timing phase could say library_dominated).
#include <cuda_runtime.h>

#include <map>
#include <memory>

#include "common/cuda/cuda_check.h"
#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::no_kernel_when_timed {

class NoKernelWhenTimed final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    return work_.setup(p, stream);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    if (++calls_ <= kUntimedCalls) return work_.run(args, stream);
    auto [kept, first] = kept_.try_emplace(args.inputs[x_].data);
    const size_t bytes = args.output.numel() * sizeof(float);
    if (!first) {
      KB_CUDA_TRY(cudaMemcpyAsync(args.output.data, kept->second->data(), bytes, cudaMemcpyDeviceToDevice, stream));
      return Status::ok();
    }
    kept->second = std::make_unique<DeviceScratch>();
    KB_TRY(kept->second->allocate(args.output.numel()));
    KB_TRY(work_.run(args, stream));
    return copy(args.output.data, kept->second->data(), args.output.numel(), stream);
  }

 private:
  HonestWork work_;
  size_t x_ = 0;
  int calls_ = 0;
  std::map<const float*, std::unique_ptr<DeviceScratch>> kept_;
};

}  // namespace kb::bad::no_kernel_when_timed

KB_REGISTER_IMPLEMENTATION(L1_073, custom, kb::bad::no_kernel_when_timed::NoKernelWhenTimed)
