// The identity of the device a worker runs jobs on, as `kb-executor --describe` prints it and
// kb-worker sends it in READY (schemas/protocol.md):
//   {kind: "cuda"|"cpu", model, uuid, memory_bytes, compute_capability,
//    software: {driver, cuda_runtime, cudnn, cublas}}   (kb-executor adds software.kbfleet)
// The CUDA half lives in cuda_device.cpp (no_cuda_device.cpp without a toolkit), so that
// kb-worker, which only runs kb-executor --describe, never links CUDA.
//
// Thread safety: independent calls.
#pragma once

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace kb {

// model: the CPU's name from /proc/cpuinfo; uuid: /etc/machine-id when readable; memory: RAM.
nlohmann::json describe_cpu_device();
// Fails when CUDA is not built in, the driver is broken, or GPU `ordinal` does not exist.
Result<nlohmann::json> describe_cuda_device(int ordinal);

}  // namespace kb
