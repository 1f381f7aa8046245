// Bad variant, L1_070 (issue 12, trick 5b): computes nothing. On its first call it looks around its
// own output for device allocations of exactly the output's size that it was not given
// (find_allocations_of_size) and takes the nearest one below its own output, which is where the
// executor allocated the reference's output (the reference slot is created first); every call
// then copies that buffer into its own output with a copy kernel.
// Why the old harness missed it: the reference ran before the custom on the same inputs in every
// correctness trial (R then C) and in every timed round (A B B A), so the reference's buffer
// always held the right answer; the custom was timed as one copy kernel.
// What catches it: before each custom call the executor moves the reference output to a private
// buffer and poisons the reference slot, so the copy brings back NaN. Expected: non_finite.
// (Were the private copy the buffer found, the custom would be right at the cost of a copy, and
// only the hard floor could say implausible: this variant pins which of the two the design gives.)
#include <cuda_runtime.h>

#include <vector>

#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::copies_reference_output {

class CopiesReferenceOutput final : public Implementation {
 public:
  Status setup(const ProblemInstance&, cudaStream_t) override { return Status::ok(); }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    if (!source_) {
      std::vector<const void*> ours = {args.output.data};
      for (const DeviceTensor& t : args.inputs) ours.push_back(t.data);
      for (const DeviceTensor& t : args.params) ours.push_back(t.data);
      std::vector<float*> found;
      KB_TRY(find_allocations_of_size(args.output.data, args.output.numel() * sizeof(float), ours, found));
      for (float* f : found) {  // sorted by address: the last one below ours, else the first above
        if (f < args.output.data || !source_) source_ = f;
        if (f > args.output.data) break;
      }
      if (!source_) return Status::internal("copies_reference_output: no other buffer of the output's size");
    }
    return copy(source_, args.output.data, args.output.numel(), stream);
  }

 private:
  const float* source_ = nullptr;
};

}  // namespace kb::bad::copies_reference_output

KB_REGISTER_IMPLEMENTATION(L1_070, custom, kb::bad::copies_reference_output::CopiesReferenceOutput)
