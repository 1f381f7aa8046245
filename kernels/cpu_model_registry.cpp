#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/cpu_model.h"

namespace kb {
namespace {

std::vector<CpuModel>& registry() {
  static std::vector<CpuModel> models;
  return models;
}

}  // namespace

bool register_cpu_model(CpuModel model) {
  auto& models = registry();
  for (const CpuModel& m : models) {
    if (m.id == model.id) {
      std::fprintf(stderr, "kbfleet: two golden models registered for %.*s\n",
                   static_cast<int>(model.id.size()), model.id.data());
      std::abort();
    }
  }
  auto pos = std::lower_bound(models.begin(), models.end(), model,
                              [](const CpuModel& a, const CpuModel& b) { return a.id < b.id; });
  models.insert(pos, model);
  return true;
}

std::span<const CpuModel> cpu_models() { return registry(); }

const CpuModel* find_cpu_model(std::string_view id) {
  for (const CpuModel& m : registry()) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

}  // namespace kb
