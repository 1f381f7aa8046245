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
// close() enqueues the gate kernel; the call's launches queue behind it; open() sets a flag in
// mapped pinned host memory after the stop event is enqueued, and the GPU runs the whole call back
// to back. A call that waits on the stream itself (a synchronizing API inside run(): cudaFree,
// cudaStreamSynchronize, a device-to-host copy) would wait on the gate: the kernel gives up after
// `timeout` and marks it (timed_out()); the caller then drops the gate and voids the sample
// (execution_device.h's TimedCall: the executor retakes the round on fresh contents).
//
// The gate holds the whole GPU's SMs, not only its stream: its blocks fill every SM's thread slots
// (two blocks of 1024 threads per SM on the H100 and H200), and close() returns only once every
// block is resident (armed), so no kernel of any stream runs from then until open(). A one-thread
// gate held the job stream alone, and a call could run its real work on a private stream and wait
// for it on the host inside run(): the events on the job stream then timed nothing and the host's
// wait was outside them (the 2026-12-07 review; the launch trace sees the private stream, but only
// in traced rounds). Against this gate that work cannot start until the gate opens, which needs
// run() to return: the call waits out the timeout and its sample is void, and the ungated samples
// from then on count the host's wait. A kernel left running from an earlier call keeps the gate
// from arming: close() fails after the timeout. Copy engines are not held: a copy on another
// stream runs under the gate (the launch trace names it in traced rounds, and the executor's
// traced busy-time check bounds what it can hide).
// Block 0 polls the host's flag; the other blocks poll a word in device memory that block 0 sets
// (a host-memory poll from every block would be hundreds of PCIe reads per microsecond); every
// block also gives up on its own at the timeout.
//
// Ownership: owns the mapped flag pair and the release word. Thread safety: one thread; one closed
// gate at a time.
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

  // Allocates the flags (mapped pinned memory: the device reads the host's writes) and sizes the
  // gate for GPU `ordinal` (the current device).
  Status init(int ordinal, std::chrono::milliseconds timeout);
  // Enqueues the gate on `stream` and waits on the host until it holds every SM (armed): work
  // enqueued after it waits until open() or the timeout. Fails (the gate opened again) when work
  // of another stream keeps SMs busy past the timeout.
  Status close(cudaStream_t stream);
  // Lets the stream go (host side; call it after the timed call's stop event is enqueued).
  void open();
  // Whether the last closed gate gave up waiting; valid once the stream has passed the gate.
  bool timed_out() const;

 private:
  struct Flags {
    int open;       // host -> device: 1 releases the gate
    int timed_out;  // device -> host: 1 when the gate gave up
    int armed;      // device -> host: 1 once every block is resident
  };
  Flags* host_ = nullptr;        // mapped pinned memory
  Flags* device_ = nullptr;      // the same memory, as the device addresses it
  unsigned* release_ = nullptr;  // device memory: block 0 writes the generation it released
  unsigned* arrived_ = nullptr;  // device memory: blocks resident in the latest gate
  unsigned generation_ = 0;      // of the latest close()
  unsigned blocks_ = 1;          // blocks of block_threads_ that fill every SM's thread slots
  unsigned block_threads_ = 1;
  std::chrono::milliseconds timeout_{0};
  uint64_t timeout_ns_ = 0;
};

}  // namespace kb
