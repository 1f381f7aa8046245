// The bad variants that launch from a host thread of their own (host_thread_launch.cu,
// late_thread_launch.cu): honest for the first kUntimedCalls calls; after them run() only hands
// the call's tensors to the thread and returns, and the thread enqueues the work on the job stream
// kDelayMicroseconds later.
//
// Ownership: the variant owns its thread and joins it. Thread safety: run() on one thread, the
// variant's own thread beside it.
#pragma once

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

namespace kb::bad {

template <int kDelayMicroseconds>
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
    // Its library handles' own GPU work (cuDNN's memsets on a stream of its own) done before the
    // first call: not a launch the correctness trials' traces should see (session 47, H100: it
    // raced trial 1 and the variant was caught before the trick it shows).
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [this] { return handles_ready_; });
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
    KB_CUDA_WARN(cudaDeviceSynchronize());
    std::unique_lock<std::mutex> lock(mutex_);
    handles_ready_ = true;
    ready_.notify_one();
    for (;;) {
      wake_.wait(lock, [this] { return stop_ || !pending_.empty(); });
      if (stop_) return;
      Job job = std::move(pending_.front());
      pending_.pop_front();
      lock.unlock();
      // A busy wait: a sleep this short would take the scheduler's slack (~50 us) instead.
      const auto due =
          std::chrono::steady_clock::now() + std::chrono::microseconds(kDelayMicroseconds);
      while (std::chrono::steady_clock::now() < due) {
      }
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
  std::condition_variable ready_;  // handles_ready_ set: setup() returns
  bool handles_ready_ = false;
  std::deque<Job> pending_;
  bool stop_ = false;
  Status failure_;
  std::thread thread_;
};

}  // namespace kb::bad
