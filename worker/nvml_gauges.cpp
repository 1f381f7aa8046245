#include "worker/nvml_gauges.h"

#include <dlfcn.h>

namespace kb {
namespace {

// The few NVML entry points used, with their C signatures (nvml.h is not needed to build).
using NvmlInit = int (*)();
using NvmlHandleByUuid = int (*)(const char*, void**);
using NvmlTemperature = int (*)(void*, int, unsigned*);
using NvmlClock = int (*)(void*, int, unsigned*);
constexpr int kNvmlTemperatureGpu = 0;
constexpr int kNvmlClockSm = 1;

struct Nvml {
  NvmlHandleByUuid handle_by_uuid = nullptr;
  NvmlTemperature temperature = nullptr;
  NvmlClock clock = nullptr, max_clock = nullptr;
  bool ok = false;
};

const Nvml& nvml() {
  static const Nvml loaded = [] {
    Nvml n;
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return n;
    auto init = reinterpret_cast<NvmlInit>(dlsym(lib, "nvmlInit_v2"));
    n.handle_by_uuid = reinterpret_cast<NvmlHandleByUuid>(dlsym(lib, "nvmlDeviceGetHandleByUUID"));
    n.temperature = reinterpret_cast<NvmlTemperature>(dlsym(lib, "nvmlDeviceGetTemperature"));
    n.clock = reinterpret_cast<NvmlClock>(dlsym(lib, "nvmlDeviceGetClockInfo"));
    n.max_clock = reinterpret_cast<NvmlClock>(dlsym(lib, "nvmlDeviceGetMaxClockInfo"));
    n.ok = init && n.handle_by_uuid && n.temperature && n.clock && n.max_clock && init() == 0;
    return n;
  }();
  return loaded;
}

}  // namespace

NvmlGauges::NvmlGauges(const std::string& uuid) : uuid_(uuid) {
  if (uuid.rfind("GPU-", 0) != 0 || !nvml().ok) return;
  void* device = nullptr;
  if (nvml().handle_by_uuid(uuid.c_str(), &device) == 0) device_ = device;
}

std::optional<WorkerGauges::Gpu> NvmlGauges::sample() const {
  if (!device_) return std::nullopt;
  unsigned temperature = 0, sm = 0, max_sm = 0;
  if (nvml().temperature(device_, kNvmlTemperatureGpu, &temperature) != 0 ||
      nvml().clock(device_, kNvmlClockSm, &sm) != 0 ||
      nvml().max_clock(device_, kNvmlClockSm, &max_sm) != 0) {
    return std::nullopt;
  }
  return WorkerGauges::Gpu{uuid_, static_cast<double>(temperature), static_cast<double>(sm),
                           static_cast<double>(max_sm)};
}

}  // namespace kb
