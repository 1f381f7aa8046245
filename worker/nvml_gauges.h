// A GPU's temperature and SM clocks for kb-worker's /metrics, through NVML loaded at run time
// (libnvidia-ml.so.1 comes with the driver; kb-worker never links CUDA or NVML). Without NVML, or
// for a device NVML does not know (the CPU device), sample() returns nothing and /metrics simply
// has no GPU lines. (executor/gpu_clocks.* samples clocks inside kb-executor during timing; this is
// the worker's own, always-built view for monitoring.)
//
// Thread safety: sample() may be called from any thread (NVML is thread-safe); construction once.
#pragma once

#include <optional>
#include <string>

#include "worker/worker_metrics.h"

namespace kb {

class NvmlGauges {
 public:
  // `uuid` as kb-executor --describe reports it ("GPU-xxxxxxxx-..."); "" for no GPU.
  explicit NvmlGauges(const std::string& uuid);
  bool available() const { return device_ != nullptr; }
  std::optional<WorkerGauges::Gpu> sample() const;

 private:
  std::string uuid_;
  void* device_ = nullptr;  // nvmlDevice_t
};

}  // namespace kb
