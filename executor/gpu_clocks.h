// GPU clock and throttle monitoring through NVML, loaded at run time (libnvidia-ml.so.1 comes
// with the driver, so kbfleet has no build-time dependency on it). Without NVML, reports say
// `available: false` and nothing else changes.
//
// Thread safety: one thread.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace kb {

class GpuClocks {
 public:
  // `pci_bus_id` as cudaDeviceGetPCIBusId gives it ("0000:18:00.0").
  explicit GpuClocks(const std::string& pci_bus_id);

  bool available() const { return device_ != nullptr; }
  void sample();
  // {available, samples, sm_mhz_min, sm_mhz_max, max_sm_mhz, throttled, clocks_dropped,
  //  reasons: [...]}
  nlohmann::json report() const;
  int max_sm_mhz() const { return max_sm_mhz_; }

 private:
  void* device_ = nullptr;  // nvmlDevice_t
  int samples_ = 0;
  unsigned sm_min_ = ~0u, sm_max_ = 0;
  int max_sm_mhz_ = 0;
  uint64_t reasons_seen_ = 0;
};

}  // namespace kb
