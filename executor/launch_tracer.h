// Traces the kernels, copies and memsets launched in a window (CUPTI's activity API, with stream
// ids, correlation ids and GPU start/end), and attributes each to the executor's call during
// which it was launched (CUPTI's runtime and driver API callbacks record, for every API call, its
// correlation id, its thread and the call open on the executor's thread at that moment).
//
// Per call (CallTrace): own and library kernels with their GPU time, and every activity that ran
// on a stream other than the job stream (the legacy and per-thread default streams included),
// noting when it ended after the call's last job-stream work. Outside the calls (LaunchTrace::
// stray): activities launched by any other host thread, or with no API call recorded for them.
// Activities the executor's thread launches between calls (input generation, hashing, the L2
// flush) are the harness's own and ignored.
//
// "Our own" kernels are those in namespace kb (kbfleet's convention for every kernel it writes:
// their mangled names contain "N2kb" or start with "_ZN2kb"), except the eager ops of kb::eager,
// which are the references' building blocks; everything else — cuDNN's, cuBLAS's, the eager
// ops — counts as a library kernel.
//
// CUPTI's activity and callback APIs are process-wide: one LaunchTracer at a time, and no other
// CUPTI subscriber (a profiler) while it traces.
// Thread safety: begin(), open_call(), close_call() and end() on the executor's thread; CUPTI's
// callbacks from any thread.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "common/status.h"
#include "executor/execution_device.h"

namespace kb {

class LaunchTracer {
 public:
  // Synchronizes the device (nothing earlier may land in the window), then starts recording.
  Status begin();
  // Marks a call of the slot's variant on this (the executor's) thread; no-ops when not tracing.
  void open_call(Slot slot);
  void close_call();
  // Synchronizes the device, flushes the trace and summarizes it against `job_stream`.
  Result<LaunchTrace> end(cudaStream_t job_stream);
};

bool is_own_kernel_name(const char* mangled_name);

// The length of the union of [start, end) intervals (CallTrace::busy_ms, in the timestamps' unit).
uint64_t interval_union_length(std::vector<std::pair<uint64_t, uint64_t>> intervals);

}  // namespace kb
