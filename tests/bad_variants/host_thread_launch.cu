// Bad variant, L3_013 (issue 12, trick 3c): honest for the first kUntimedCalls calls; after them
// run() only hands the call's tensors to a host thread of its own and returns. The thread waits
// 200 us, so that the executor has recorded its end event, then enqueues the work on the job
// stream itself.
// Why the old harness missed it: trial 0 alone was traced, and it was honest; each timed call
// bracketed nothing (the work landed on the job stream after the end event), so the custom was
// timed at ~0, and by the check after timing the thread's last work had long finished.
// What catches it: launch accounting over every timed call. The work was launched by a thread
// other than the caller's, and it ends after the call's end event. Expected: foreign_stream.
#include <cuda_runtime.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "common/cuda/cuda_check.h"
#include "kernels/eager/library_handles.h"
#include "kernels/implementation.h"
#include "tests/bad_variants/bad_common.h"

namespace kb::bad::host_thread_launch {

class HostThreadLaunch final : public Implementation {
 public:
  ~HostThreadLaunch() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      pending_.clear();  // never write into buffers the executor may be freeing
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

  Status setup(const ProblemInstance& p, cudaStream_t stream) override {
    KB_CUDA_TRY(cudaGetDevice(&device_));
    KB_TRY(work_.setup(p, stream));
    thread_ = std::thread([this] { launch_later(); });
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    if (++calls_ <= kUntimedCalls) return work_.run(args, stream);
    std::lock_guard<std::mutex> lock(mutex_);
    KB_TRY(failure_);  // an error of the thread surfaces on the next call
    pending_.push_back({OwnedArgs::of(args), stream});
    wake_.notify_one();
    return Status::ok();
  }

 private:
  struct Job {
    OwnedArgs args;
    cudaStream_t stream;
  };

  void launch_later() {
    KB_CUDA_WARN(cudaSetDevice(device_));
    (void)cudnn_handle();  // this thread's library handles, created before the first job
    (void)cublas_handle();
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stop_ || !pending_.empty(); });
      if (stop_) return;
      Job job = std::move(pending_.front());
      pending_.pop_front();
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      Status s = work_.run(job.args.view(), job.stream);
      lock.lock();
      if (!s.is_ok() && failure_.is_ok()) std::swap(failure_, s);  // (nvcc: no discarded operator=)
    }
  }

  HonestWork work_;  // the executor's thread uses it before kUntimedCalls, this thread after
  int calls_ = 0;
  int device_ = 0;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> pending_;
  bool stop_ = false;
  Status failure_;
  std::thread thread_;
};

}  // namespace kb::bad::host_thread_launch

KB_REGISTER_IMPLEMENTATION(L3_013, custom, kb::bad::host_thread_launch::HostThreadLaunch)
