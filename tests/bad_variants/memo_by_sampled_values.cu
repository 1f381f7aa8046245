// Bad variant, L2_093 (issue 12, trick 1): an output memo keyed on the addresses of x and the
// weight plus four values sampled from x. Each call copies the four values to the host; when the
// key matches one of the last four outputs it kept, it copies that output back instead of
// computing.
// Why the old harness missed it: each correctness trial refilled x with fresh numbers, so the
// sample changed and the memo missed (the trials saw honest work); the timing sets were generated
// once and never changed, so every timed call after the first on a set hit the memo and was timed
// as one copy kernel.
// What catches it: fresh contents before every timed call. The sample never repeats, the memo never
// hits, and the job times honest work (the reference plus our ballast, bad_common.h). Expected: ok,
// at the speedup of that honest work (< 1), never a copy's (>> 1).
#include <cuda_runtime.h>

#include <array>
#include <memory>

#include "common/cuda/cuda_check.h"
#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::memo_by_sampled_values {

struct Key {
  const float* x = nullptr;
  const float* weight = nullptr;
  std::array<float, 4> sample{};
  bool operator==(const Key&) const = default;
};

class MemoBySampledValues final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    x_ = input_index(p, "x");
    weight_ = param_index(p, "conv_transpose.weight");
    for (Entry& e : memo_) KB_TRY(e.output.allocate(element_count(p.output_shape())));
    return work_.setup(p, stream);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const DeviceTensor& x = args.inputs[x_];
    Key key{x.data, args.params[weight_].data, {}};
    const int64_t at[4] = {0, x.numel() / 3, x.numel() / 2, x.numel() - 1};
    for (int i = 0; i < 4; ++i) {
      KB_CUDA_TRY(cudaMemcpyAsync(&key.sample[i], x.data + at[i], sizeof(float), cudaMemcpyDeviceToHost, stream));
    }
    KB_CUDA_TRY(cudaStreamSynchronize(stream));
    for (const Entry& e : memo_) {
      if (e.filled && e.key == key) return copy(e.output.data(), args.output.data, args.output.numel(), stream);
    }
    KB_TRY(work_.run(args, stream));
    Entry& kept = memo_[next_];
    next_ = (next_ + 1) % memo_.size();
    kept.key = key;
    kept.filled = true;
    return copy(args.output.data, kept.output.data(), args.output.numel(), stream);
  }

 private:
  struct Entry {
    Key key;
    bool filled = false;
    DeviceScratch output;
  };
  HonestWork work_;
  size_t x_ = 0, weight_ = 0;
  std::array<Entry, 4> memo_;
  size_t next_ = 0;
};

}  // namespace kb::bad::memo_by_sampled_values

KB_REGISTER_IMPLEMENTATION(L2_093, custom, kb::bad::memo_by_sampled_values::MemoBySampledValues)
