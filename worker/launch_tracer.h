// Traces the kernels, copies and memsets launched in a window (CUPTI's activity API), to tell
// whether a custom call launched kernels of its own and whether it left work on other streams.
//
// "Our own" kernels are those in namespace kb (kbfleet's convention for every kernel it writes:
// their mangled names contain "N2kb" or start with "_ZN2kb"), except the eager ops of kb::eager,
// which are the references' building blocks; everything else — cuDNN's, cuBLAS's, the eager
// ops — counts as a library kernel.
//
// CUPTI's activity API is process-wide: one LaunchTracer at a time.
// Thread safety: one thread.
#pragma once

#include <cuda_runtime.h>

#include "common/status.h"
#include "worker/execution_device.h"

namespace kb {

class LaunchTracer {
 public:
  Status begin();
  // Synchronizes the device, flushes the trace and summarizes it against `job_stream`.
  Result<LaunchTrace> end(cudaStream_t job_stream);
};

bool is_own_kernel_name(const char* mangled_name);

}  // namespace kb
