// StreamGate (stream_gate.cuh): the spinning kernel and the mapped flags.
#include "executor/stream_gate.cuh"

#include <atomic>

#include "common/cuda/cuda_check.h"

namespace kb {
namespace {

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One thread: waits until the host sets `open`, or gives up after timeout_ns and says so.
__global__ void gate_kernel(volatile int* open, volatile int* timed_out, uint64_t timeout_ns) {
  const uint64_t start = global_ns();
  while (*open == 0) {
    if (global_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
    __nanosleep(500);
  }
}

}  // namespace

Status StreamGate::init(std::chrono::milliseconds timeout) {
  if (host_ == nullptr) {
    void* p = nullptr;
    KB_CUDA_TRY(cudaHostAlloc(&p, sizeof(Flags), cudaHostAllocMapped));
    host_ = static_cast<Flags*>(p);
    void* d = nullptr;
    KB_CUDA_TRY(cudaHostGetDevicePointer(&d, p, 0));
    device_ = static_cast<Flags*>(d);
  }
  timeout_ns_ = static_cast<uint64_t>(std::chrono::nanoseconds(timeout).count());
  return Status::ok();
}

Status StreamGate::close(cudaStream_t stream) {
  if (host_ == nullptr) return Status::failed_precondition("StreamGate: close() before init()");
  reinterpret_cast<volatile Flags*>(host_)->open = 0;
  reinterpret_cast<volatile Flags*>(host_)->timed_out = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);  // both reset before the kernel can run
  gate_kernel<<<1, 1, 0, stream>>>(&device_->open, &device_->timed_out, timeout_ns_);
  KB_CUDA_TRY(cudaGetLastError());
  return Status::ok();
}

void StreamGate::open() {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // the enqueued work before the release
  reinterpret_cast<volatile Flags*>(host_)->open = 1;
}

bool StreamGate::timed_out() const {
  return host_ != nullptr && reinterpret_cast<volatile const Flags*>(host_)->timed_out != 0;
}

StreamGate::~StreamGate() {
  if (host_ != nullptr) KB_CUDA_WARN(cudaFreeHost(host_));
}

}  // namespace kb
