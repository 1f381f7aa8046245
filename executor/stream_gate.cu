// StreamGate (stream_gate.cuh): the gate kernel, the mapped flags and the release word.
#include "executor/stream_gate.cuh"

#include <atomic>
#include <random>
#include <thread>

#include "common/cuda/cuda_check.h"

namespace kb {
namespace {

constexpr int kMaxGateThreads = 1024;  // a block's most

__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Every thread of every block stays resident until the gate opens (its warps wait at the barrier,
// issuing nothing), so the blocks fill the SMs' thread slots. Thread 0 of each block counts its
// block in `arrived`; the last to arrive tells the host that the gate holds the GPU (`armed`).
// Thread 0 of block 0 then waits until the host sets `open` and releases generation `generation`;
// thread 0 of every other block waits for that release. Each gives up after timeout_ns; block 0
// then says so.
// Two blocks of 1024 threads per SM need at most 32 registers a thread (the launch bounds).
__global__ void __launch_bounds__(kMaxGateThreads, 2)
    gate_kernel(volatile int* open, volatile int* timed_out, volatile int* armed, unsigned* arrived,
                volatile unsigned* release, unsigned generation, uint64_t timeout_ns) {
  if (threadIdx.x == 0) {
    const uint64_t start = global_ns();
    // Armed only while still closed: a block that arrives after block 0 gave up arms nothing.
    if (atomicAdd(arrived, 1u) == gridDim.x - 1 && *release != generation) {
      __threadfence_system();
      *armed = 1;
    }
    if (blockIdx.x == 0) {
      while (*open == 0) {
        if (global_ns() - start > timeout_ns) {
          *timed_out = 1;
          break;
        }
        __nanosleep(500);
      }
      __threadfence();
      *release = generation;
    } else {
      while (*release != generation && global_ns() - start <= timeout_ns) __nanosleep(200);
    }
  }
  __syncthreads();
}

}  // namespace

Status StreamGate::init(int ordinal, std::chrono::milliseconds timeout) {
  if (host_ == nullptr) {
    void* p = nullptr;
    KB_CUDA_TRY(cudaHostAlloc(&p, sizeof(Flags), cudaHostAllocMapped));
    host_ = static_cast<Flags*>(p);
    void* d = nullptr;
    KB_CUDA_TRY(cudaHostGetDevicePointer(&d, p, 0));
    device_ = static_cast<Flags*>(d);
    KB_CUDA_TRY(cudaMalloc(&release_, sizeof *release_));
    KB_CUDA_TRY(cudaMemset(release_, 0, sizeof *release_));
    KB_CUDA_TRY(cudaMalloc(&arrived_, sizeof *arrived_));
    // A variant that found the release word could open the gate early if it knew the generation.
    generation_ = static_cast<unsigned>(std::random_device{}());
  }
  int sms = 0, threads_per_sm = 0;
  KB_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal));
  KB_CUDA_TRY(
      cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, ordinal));
  // The fewest equal blocks that fill an SM's thread slots: 2 x 1024 (H100, H200), 2 x 768 (1536
  // slots), 1 x 1024.
  const int per_sm = (threads_per_sm + kMaxGateThreads - 1) / kMaxGateThreads;
  block_threads_ = static_cast<unsigned>(threads_per_sm / per_sm);
  int resident = 0;  // what the kernel as compiled fits on one SM
  KB_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, gate_kernel,
                                                            static_cast<int>(block_threads_), 0));
  if (resident < per_sm || block_threads_ % 32 != 0) {
    return Status::internal("StreamGate: " + std::to_string(resident) + " blocks of " +
                            std::to_string(block_threads_) + " threads fit an SM, " +
                            std::to_string(per_sm) + " needed to fill its " +
                            std::to_string(threads_per_sm) + " thread slots");
  }
  blocks_ = static_cast<unsigned>(sms * per_sm);
  timeout_ = timeout;
  timeout_ns_ = static_cast<uint64_t>(std::chrono::nanoseconds(timeout).count());
  return Status::ok();
}

Status StreamGate::close(cudaStream_t stream) {
  if (host_ == nullptr) return Status::failed_precondition("StreamGate: close() before init()");
  volatile Flags* flags = reinterpret_cast<volatile Flags*>(host_);
  flags->open = 0;
  flags->timed_out = 0;
  flags->armed = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);  // all reset before the kernel can run
  if (++generation_ == 0) ++generation_;                // never the release word's first value
  KB_CUDA_TRY(cudaMemsetAsync(arrived_, 0, sizeof *arrived_, stream));
  gate_kernel<<<blocks_, block_threads_, 0, stream>>>(&device_->open, &device_->timed_out,
                                                      &device_->armed, arrived_, release_,
                                                      generation_, timeout_ns_);
  KB_CUDA_TRY(cudaGetLastError());
  // Armed: every block resident, so nothing else runs from here until open(). Work ahead of the
  // gate on `stream` (the L2 flush) takes tens of microseconds; work of another stream that keeps
  // SMs past the timeout is a variant's, left running.
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (flags->armed == 0) {
    if (std::chrono::steady_clock::now() > deadline && flags->armed == 0) {
      open();
      return Status::failed_precondition(
          "the timing gate could not hold the GPU within " + std::to_string(timeout_.count()) +
          " ms: work of another stream kept SMs busy (left running by a variant)");
    }
    std::this_thread::yield();
  }
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
  if (release_ != nullptr) KB_CUDA_WARN(cudaFree(release_));
  if (arrived_ != nullptr) KB_CUDA_WARN(cudaFree(arrived_));
  if (host_ != nullptr) KB_CUDA_WARN(cudaFreeHost(host_));
}

}  // namespace kb
