// Bad variant, L1_079 (issue 12, trick 5a): computes nothing. On its first call it looks around
// its own output for device allocations of exactly the output's size that it was not given
// (find_allocations_of_size: the reference's output is one, as the reference and the custom
// share the process); every call then writes zeros into its own output and into each of those.
// Why the old harness missed it: a correctness trial ran the reference, then the custom, then
// compared the two output buffers, so it compared zeros with zeros; the timed calls were a fill
// kernel, the "speedup" whatever the reference's conv costs over a memset.
// What catches it: the reference output is copied to a private buffer before the custom call and
// hashed around it; the write into the reference's buffer changes the hash. Expected:
// input_mutated (the executor's buffers are guarded like the inputs).
#include <cuda_runtime.h>

#include <vector>

#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::clobbers_reference_output {

class ClobbersReferenceOutput final : public Implementation {
 public:
  Status setup(const ProblemInstance&, cudaStream_t) override { return Status::ok(); }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    if (!scanned_) {
      std::vector<const void*> ours = {args.output.data};
      for (const DeviceTensor& t : args.inputs) ours.push_back(t.data);
      for (const DeviceTensor& t : args.params) ours.push_back(t.data);
      KB_TRY(find_allocations_of_size(args.output.data, args.output.numel() * sizeof(float), ours, targets_));
      if (targets_.empty()) return Status::internal("clobbers_reference_output: no other buffer of the output's size");
      scanned_ = true;
    }
    KB_TRY(fill(args.output.data, args.output.numel(), 0.0f, stream));
    for (float* target : targets_) KB_TRY(fill(target, args.output.numel(), 0.0f, stream));
    return Status::ok();
  }

 private:
  bool scanned_ = false;
  std::vector<float*> targets_;
};

}  // namespace kb::bad::clobbers_reference_output

KB_REGISTER_IMPLEMENTATION(L1_079, custom, kb::bad::clobbers_reference_output::ClobbersReferenceOutput)
