#include "common/shape_sweep.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

namespace kb {
namespace {

constexpr int kAttemptsPerShape = 400;

enum class DimKind { kBatch, kChannel, kFixed, kSize };

DimKind kind_of(const ProblemSpec& spec, size_t index, int64_t full) {
  const std::string& name = spec.dims[index];
  if (index == 0) return DimKind::kBatch;
  if (name[0] == 'C') return DimKind::kChannel;
  if (full <= 8) return DimKind::kFixed;
  return DimKind::kSize;
}

class Drawer {
 public:
  explicit Drawer(uint64_t seed) : rng_(seed) {}

  // Log-uniform integer in [lo, hi].
  int64_t log_uniform(int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    std::uniform_real_distribution<double> u(std::log(static_cast<double>(lo)),
                                             std::log(static_cast<double>(hi) + 1.0));
    return std::clamp<int64_t>(static_cast<int64_t>(std::exp(u(rng_))), lo, hi);
  }

  int64_t uniform(int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

 private:
  std::mt19937_64 rng_;
};

// One value of dim `kind` with full-preset value `full`; `strict`: channels avoid multiples of 8.
int64_t draw_dim(Drawer& d, DimKind kind, int64_t full, bool large, bool strict) {
  switch (kind) {
    case DimKind::kFixed:
      return full;
    case DimKind::kBatch:
      return large ? d.uniform((full + 1) / 2, full) : d.log_uniform(1, full);
    case DimKind::kChannel: {
      const int64_t hi = std::max<int64_t>(full, 16);
      int64_t c =
          large ? d.uniform(std::max<int64_t>(1, full * 3 / 4), full) : d.log_uniform(1, hi);
      if (strict && c % 8 == 0) c = c > 1 ? c - 1 : c + 1;
      return c;
    }
    case DimKind::kSize: {
      const int64_t lo = std::min<int64_t>(3, full);
      int64_t v = large ? d.uniform(std::max(lo, full / 2), full) : d.log_uniform(lo, full);
      if (v % 2 == 0) v = v + 1 <= full ? v + 1 : v - 1;
      return std::max(v, lo);
    }
  }
  return full;
}

}  // namespace

std::string to_string(SweepRegime regime) {
  return regime == SweepRegime::kMixed ? "mixed" : "alternate";
}

Result<SweepRegime> parse_sweep_regime(const std::string& text) {
  if (text == "alternate") return SweepRegime::kAlternate;
  if (text == "mixed") return SweepRegime::kMixed;
  return Status::invalid_argument("sweep regime '" + text + "': expected alternate or mixed");
}

Result<std::vector<SweepShape>> draw_sweep_shapes(std::shared_ptr<const ProblemSpec> spec,
                                                  const std::string& preset, int count,
                                                  uint64_t seed, SweepRegime regime) {
  auto full = ProblemInstance::create(spec, preset);
  if (!full.is_ok()) {
    return Status::invalid_argument(spec->id + ": no valid preset '" + preset +
                                    "' to sweep under: " + full.status().message());
  }
  const Cost full_cost = full->cost();
  Drawer d(seed ^ std::hash<std::string>{}(spec->id));
  std::vector<SweepShape> shapes;
  // `attempt` counts the draws since the last shape kept; a shape that takes them all ends the
  // sweep of this spec.
  for (int attempt = 0; attempt < kAttemptsPerShape && static_cast<int>(shapes.size()) < count;
       ++attempt) {
    // Channel counts avoid multiples of 8 during the first half of a shape's attempts; a spec
    // whose groups need them (GroupNorm over 8 groups) gets them afterwards.
    const bool strict = attempt < kAttemptsPerShape / 2;
    const bool mixed = regime == SweepRegime::kMixed;
    const bool large = !mixed && shapes.size() % 2 == 1;
    Dims dims;
    int drawn_large = 0, drawn_any = 0;  // mixed: the drawn dims of each kind
    for (size_t i = 0; i < spec->dims.size(); ++i) {
      const int64_t f = full->dims().at(spec->dims[i]);
      const DimKind kind = kind_of(*spec, i, f);
      const bool dim_large = mixed ? d.uniform(0, 1) == 1 : large;
      if (kind != DimKind::kFixed) ++(dim_large ? drawn_large : drawn_any);
      dims[spec->dims[i]] = draw_dim(d, kind, f, dim_large, strict);
    }
    if (mixed && (drawn_large == 0 || drawn_any == 0)) continue;
    if (dims == full->dims()) continue;
    if (std::any_of(shapes.begin(), shapes.end(),
                    [&](const SweepShape& s) { return s.dims == dims; }))
      continue;
    auto inst = ProblemInstance::create(spec, dims);
    if (!inst.is_ok()) continue;
    const Cost& cost = inst->cost();
    if (cost.flops > full_cost.flops || cost.min_bytes > full_cost.min_bytes) continue;
    shapes.push_back({dims, full_cost.flops > 0 ? cost.flops / full_cost.flops : 0.0, large});
    attempt = -1;
  }
  return shapes;
}

std::string dims_argument(const ProblemSpec& spec, const Dims& dims) {
  std::string out;
  for (const std::string& name : spec.dims) {
    if (!out.empty()) out += ",";
    out += name + "=" + std::to_string(dims.at(name));
  }
  return out;
}

}  // namespace kb
