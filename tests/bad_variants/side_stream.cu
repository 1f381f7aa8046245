// Bad variant (f), L1_075: the reference's work runs on the job stream into a scratch buffer, then
// its own copy kernel runs on a private stream, fenced by events both ways, so the output is right
// and complete when the job stream reaches the end of the call. The rule is strict on purpose: the
// executor cannot tell fenced side-stream work from unfenced work, which would escape its timing
// events and race its output read. Expected verdict: foreign_stream.
#include <cuda_runtime.h>

#include <memory>

#include "common/cuda/cuda_check.h"
#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::side_stream {

class SideStream final : public Implementation {
 public:
  ~SideStream() override {
    if (ready_) KB_CUDA_WARN(cudaEventDestroy(ready_));
    if (done_) KB_CUDA_WARN(cudaEventDestroy(done_));
  }

  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    KB_TRY(side_.create());
    KB_CUDA_TRY(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    KB_CUDA_TRY(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    KB_TRY(scratch_.allocate(element_count(p.output_shape())));
    return make_reference(p, stream, reference_);
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    ImplArgs into_scratch = args;
    into_scratch.output.data = scratch_.data();
    KB_TRY(reference_->run(into_scratch, stream));
    KB_CUDA_TRY(cudaEventRecord(ready_, stream));
    KB_CUDA_TRY(cudaStreamWaitEvent(side_.get(), ready_, 0));
    KB_TRY(copy(scratch_.data(), args.output.data, scratch_.count(), side_.get()));
    KB_CUDA_TRY(cudaEventRecord(done_, side_.get()));
    KB_CUDA_TRY(cudaStreamWaitEvent(stream, done_, 0));
    return Status::ok();
  }

 private:
  std::unique_ptr<Implementation> reference_;
  DeviceScratch scratch_;
  PrivateStream side_;
  cudaEvent_t ready_ = nullptr, done_ = nullptr;
};

}  // namespace kb::bad::side_stream

KB_REGISTER_IMPLEMENTATION(L1_075, custom, kb::bad::side_stream::SideStream)
