// A gate that holds a stream while the host enqueues one timed call, so that the call's events
// time the GPU's work alone (NVBench's blocking kernel).
//
// Without it a timed sample is: L2 flush, start event, the call's launches, stop event. Whenever
// the host takes longer to issue the call's launches (a library's per-call work, CUPTI's callbacks
// on traced rounds, a slower host CPU) than the GPU takes to run the flush, the GPU idles between
// the events and the idle time is counted as the call's. Session 39 measured the reference of
// 15-300 us layers 2x slower in one lease than another (L1_054 at 10 x 2 -> 54: 41 and 91 us; the
// custom 81 both times): a verdict that depends on the worker's host.
//
// close() enqueues a one-thread kernel that spins (with __nanosleep) on a flag in mapped pinned
// host memory; the call's launches queue behind it; open() sets the flag after the stop event is
// enqueued, and the GPU runs the whole call back to back. A call that waits on the stream itself
// (a synchronizing API inside run(): cudaFree, cudaStreamSynchronize, a device-to-host copy) would
// wait on the gate: the kernel gives up after `timeout` and marks it (timed_out()); the caller
// then drops the gate and voids the sample (execution_device.h's TimedCall: the executor retakes
// the round on fresh contents).
//
// Ownership: owns the mapped flag pair. Thread safety: one thread; one closed gate at a time.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>

#include "common/status.h"

namespace kb {

class StreamGate {
 public:
  StreamGate() = default;
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  ~StreamGate();

  // Allocates the flags (mapped pinned memory: the device reads the host's writes).
  Status init(std::chrono::milliseconds timeout);
  // Enqueues the gate on `stream`: work enqueued after it waits until open() or the timeout.
  Status close(cudaStream_t stream);
  // Lets the stream go (host side; call it after the timed call's stop event is enqueued).
  void open();
  // Whether the last closed gate gave up waiting; valid once the stream has passed the gate.
  bool timed_out() const;

 private:
  struct Flags {
    int open;       // host -> device: 1 releases the gate
    int timed_out;  // device -> host: 1 when the gate gave up
  };
  Flags* host_ = nullptr;    // mapped pinned memory
  Flags* device_ = nullptr;  // the same memory, as the device addresses it
  uint64_t timeout_ns_ = 0;
};

}  // namespace kb
