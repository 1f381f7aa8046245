// Bad variant, L3_025 (issue 12, trick 8): caches what it derives from the parameters. A real
// kernel would keep re-laid-out weights or batch-norm scales folded into the convs; this one keeps
// a copy of every parameter. Once the trials are over (kUntimedCalls), the first call on a
// parameter set (keyed by the address of its first tensor) takes the copy, and every later call on
// that set computes from the copy instead of the parameters it is given.
// Why the old harness missed it: the trials came first (and each refilled the parameters); the
// timing sets never changed, so the copy stayed right, and a kernel that spent its work deriving
// values from the weights was timed without that work.
// What catches it: the parameters change before every timed call; the copy is stale from the
// second timed call on. Expected: mismatch.
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <vector>

#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::stale_weights_when_timed {

class StaleWeightsWhenTimed final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t stream) override { return work_.setup(p, stream); }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    if (++calls_ <= kUntimedCalls || args.params.empty()) return work_.run(args, stream);
    auto [kept, first] = cache_.try_emplace(args.params[0].data);
    std::vector<DeviceTensor> params(args.params.begin(), args.params.end());
    for (size_t i = 0; i < params.size(); ++i) {
      if (first) {
        kept->second.push_back(std::make_unique<DeviceScratch>());
        KB_TRY(kept->second.back()->allocate(params[i].numel()));
        KB_TRY(copy(params[i].data, kept->second.back()->data(), params[i].numel(), stream));
      }
      params[i].data = kept->second[i]->data();
    }
    return work_.run({args.inputs, params, args.output}, stream);
  }

 private:
  HonestWork work_;
  int calls_ = 0;
  std::map<const float*, std::vector<std::unique_ptr<DeviceScratch>>> cache_;
};

}  // namespace kb::bad::stale_weights_when_timed

KB_REGISTER_IMPLEMENTATION(L3_025, custom, kb::bad::stale_weights_when_timed::StaleWeightsWhenTimed)
