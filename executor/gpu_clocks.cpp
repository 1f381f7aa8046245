#include "executor/gpu_clocks.h"

#include <dlfcn.h>

#include <utility>
#include <vector>

namespace kb {
namespace {

// The few NVML entry points used, declared by their documented C signatures.
using NvmlReturn = int;  // NVML_SUCCESS == 0
using NvmlInit = NvmlReturn (*)();
using NvmlHandleByPci = NvmlReturn (*)(const char*, void**);
using NvmlClockInfo = NvmlReturn (*)(void*, int, unsigned*);
using NvmlReasons = NvmlReturn (*)(void*, unsigned long long*);
constexpr int kNvmlClockSm = 1;

struct Nvml {
  NvmlHandleByPci handle_by_pci = nullptr;
  NvmlClockInfo clock = nullptr, max_clock = nullptr;
  NvmlReasons reasons = nullptr;
};

const Nvml* nvml() {
  static const Nvml* loaded = []() -> const Nvml* {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return nullptr;
    auto init = reinterpret_cast<NvmlInit>(dlsym(lib, "nvmlInit_v2"));
    static Nvml n;
    n.handle_by_pci =
        reinterpret_cast<NvmlHandleByPci>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    n.clock = reinterpret_cast<NvmlClockInfo>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    n.max_clock = reinterpret_cast<NvmlClockInfo>(dlsym(lib, "nvmlDeviceGetMaxClockInfo"));
    n.reasons = reinterpret_cast<NvmlReasons>(dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons"));
    if (!n.reasons)
      n.reasons =
          reinterpret_cast<NvmlReasons>(dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
    if (!init || !n.handle_by_pci || !n.clock || init() != 0) return nullptr;
    return &n;
  }();
  return loaded;
}

// Reasons that mean the clock was pulled down by power or heat (not idleness or settings).
const std::vector<std::pair<uint64_t, const char*>> kThrottleReasons = {{0x4, "sw_power_cap"},
                                                                        {0x8, "hw_slowdown"},
                                                                        {0x20, "sw_thermal"},
                                                                        {0x40, "hw_thermal"},
                                                                        {0x80, "hw_power_brake"}};

}  // namespace

GpuClocks::GpuClocks(const std::string& pci_bus_id) {
  const Nvml* n = nvml();
  if (!n || n->handle_by_pci(pci_bus_id.c_str(), &device_) != 0) {
    device_ = nullptr;
    return;
  }
  unsigned max_mhz = 0;
  if (n->max_clock && n->max_clock(device_, kNvmlClockSm, &max_mhz) == 0)
    max_sm_mhz_ = static_cast<int>(max_mhz);
}

void GpuClocks::sample() {
  if (!device_) return;
  const Nvml* n = nvml();
  unsigned mhz = 0;
  if (n->clock(device_, kNvmlClockSm, &mhz) == 0) {
    sm_min_ = std::min(sm_min_, mhz);
    sm_max_ = std::max(sm_max_, mhz);
  }
  unsigned long long reasons = 0;
  if (n->reasons && n->reasons(device_, &reasons) == 0) reasons_seen_ |= reasons;
  ++samples_;
}

nlohmann::json GpuClocks::report() const {
  if (!device_ || samples_ == 0) return {{"available", device_ != nullptr}, {"samples", samples_}};
  nlohmann::json reasons = nlohmann::json::array();
  for (const auto& [bit, name] : kThrottleReasons) {
    if (reasons_seen_ & bit) reasons.push_back(name);
  }
  // A job whose SM clock moved by more than 3% while it was timed is flagged: its samples mix
  // clock rates, even when the driver reports no throttle reason.
  const bool dropped = sm_min_ < 0.97 * sm_max_;
  return {{"available", true},         {"samples", samples_},       {"sm_mhz_min", sm_min_},
          {"sm_mhz_max", sm_max_},     {"max_sm_mhz", max_sm_mhz_}, {"throttled", !reasons.empty()},
          {"clocks_dropped", dropped}, {"reasons", reasons}};
}

}  // namespace kb
