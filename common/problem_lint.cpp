#include "common/problem_lint.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/parallel_for.h"
#include "common/tensor_generator.h"

namespace kb {
namespace {

constexpr uint64_t kRedrawSeedOffset = 1000;  // the seed of a redrawn tensor: far from the runs'
constexpr double kNearZeroShareMedium = 0.5;
constexpr double kNearZeroShareHigh = 0.9;
constexpr double kBarelyChangedShare = 0.01;
constexpr double kFlatStdInAtols = 10;  // a per-seed std below this many atols: a flat output

std::string format(const char* fmt, double a, double b = 0) {
  char buffer[128];
  std::snprintf(buffer, sizeof buffer, fmt, a, b);
  return buffer;
}

// An output as doubles, whichever type the reference gave (a float widens exactly).
template <typename T>
struct Values {
  const T* data;
  size_t size;
  double operator[](size_t i) const { return static_cast<double>(data[i]); }
};

template <typename T>
Values<T> values(const HostTensor<T>& t) {
  return {t.data.data(), t.data.size()};
}

// f(values) on the output, whichever its type.
template <typename F>
auto visit_values(const ReferenceOutput& out, F f) {
  return std::visit([&](const auto& t) { return f(values(t)); }, out);
}

// The larger of two worst ratios (neither NaN): what the serial loop keeps.
double keep_worst(double worst, double ratio) {
  return std::max(worst, ratio);
}

// The next worst ratio after element ratio `ratio`; NaN counts as infinite.
double next_worst(double worst, double ratio) {
  if (!(ratio <= worst))
    worst = std::isnan(ratio) ? std::numeric_limits<double>::infinity() : ratio;
  return worst;
}

double allowed(Tolerance tol, double r) {
  return tol.atol + tol.rtol * std::abs(r);
}

// max over elements of |c_i - r_i| / (atol + rtol |r_i|); NaN anywhere counts as infinite.
double worst_ratio(const ReferenceOutput& reference, const ReferenceOutput& candidate,
                   Tolerance tol) {
  return visit_values(reference, [&](auto ref) {
    return visit_values(candidate, [&](auto cand) {
      return parallel_reduce(
          static_cast<int64_t>(ref.size), 0.0,
          [&](int64_t begin, int64_t end) {
            double worst = 0;
            for (auto i = static_cast<size_t>(begin); i < static_cast<size_t>(end); ++i) {
              worst = next_worst(worst, std::abs(cand[i] - ref[i]) / allowed(tol, ref[i]));
            }
            return worst;
          },
          keep_worst);
    });
  });
}

double share_changed(const ReferenceOutput& a, const ReferenceOutput& b, Tolerance tol) {
  return visit_values(a, [&](auto va) {
    return visit_values(b, [&](auto vb) {
      const int64_t changed = parallel_reduce(
          static_cast<int64_t>(va.size), int64_t{0},
          [&](int64_t begin, int64_t end) {
            int64_t n = 0;
            for (auto i = static_cast<size_t>(begin); i < static_cast<size_t>(end); ++i) {
              if (!(std::abs(vb[i] - va[i]) <= allowed(tol, va[i]))) ++n;
            }
            return n;
          },
          std::plus<int64_t>());
      return va.size == 0 ? 0 : static_cast<double>(changed) / static_cast<double>(va.size);
    });
  });
}

// Sums in element order, serially (a parallel sum would round differently).
template <typename V>
double stddev(V v) {
  double mean = 0, sq = 0;
  for (size_t i = 0; i < v.size; ++i) mean += v[i];
  mean /= static_cast<double>(std::max<size_t>(v.size, 1));
  for (size_t i = 0; i < v.size; ++i) sq += (v[i] - mean) * (v[i] - mean);
  return std::sqrt(sq / static_cast<double>(std::max<size_t>(v.size, 1)));
}

// The first seed's mean as the constant stand-in: sum of v_i / n in element order, serially.
double mean_of_quotients(const ReferenceOutput& out) {
  return visit_values(out, [](auto v) {
    double mean = 0;
    for (size_t i = 0; i < v.size; ++i) mean += v[i] / static_cast<double>(v.size);
    return mean;
  });
}

// One seed's pass over its output: range, near-zero count and the cheats that need no second
// output (zeros, the constant, the output rounded to TF32 and to fp16).
struct SeedStats {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  int64_t near_zero = 0;
  double zeros = 0, constant = 0, tf32 = 0, fp16 = 0;  // worst ratios
};

// Combined in element order: std::min/std::max keep the earlier of equal values as the serial
// loop does, counts add, worst ratios are maxima.
SeedStats combine(const SeedStats& a, const SeedStats& b) {
  return {std::min(a.min, b.min),
          std::max(a.max, b.max),
          a.near_zero + b.near_zero,
          keep_worst(a.zeros, b.zeros),
          keep_worst(a.constant, b.constant),
          keep_worst(a.tf32, b.tf32),
          keep_worst(a.fp16, b.fp16)};
}

SeedStats seed_stats(const ReferenceOutput& out, Tolerance tol, double constant_value) {
  return visit_values(out, [&](auto v) {
    return parallel_reduce(
        static_cast<int64_t>(v.size), SeedStats{},
        [&](int64_t begin, int64_t end) {
          SeedStats s;
          for (auto i = static_cast<size_t>(begin); i < static_cast<size_t>(end); ++i) {
            const double r = v[i];
            s.min = std::min(s.min, r);
            s.max = std::max(s.max, r);
            if (std::abs(r) <= tol.atol) ++s.near_zero;
            const double limit = allowed(tol, r);
            auto ratio = [&](double c) { return std::abs(c - r) / limit; };
            s.zeros = next_worst(s.zeros, ratio(0.0));
            s.constant = next_worst(s.constant, ratio(constant_value));
            s.tf32 = next_worst(s.tf32, ratio(double(round_to_tf32(static_cast<float>(r)))));
            s.fp16 = next_worst(s.fp16, ratio(double(round_to_fp16(static_cast<float>(r)))));
          }
          return s;
        },
        combine);
  });
}

// What a stand-in output is, for a finding.
std::string describe(const std::string& cheat) {
  if (cheat == "zeros") return "an all-zero output";
  if (cheat == "constant") return "a constant output (the first seed's mean)";
  if (cheat == "tf32 output") return "the reference rounded to TF32";
  if (cheat == "fp16 output") return "the reference rounded to fp16";
  return "the reference computed from TF32-rounded operands";
}

bool constant_init(ParamInit init) {
  return init == ParamInit::kOnes || init == ParamInit::kZeros;
}

// `name` redrawn alone: an independent draw, or original + U(-0.5, 0.5) for a constant init.
HostTensor<float> redraw(const ProblemInstance& p, const std::string& name, bool is_param,
                         size_t index, const HostTensor<float>& original, GeneratorKey key) {
  const GeneratorKey other{key.seed + kRedrawSeedOffset, key.trial};
  if (!is_param) return generate_input(p, index, other);
  if (!constant_init(p.spec().params[index].init)) return generate_param(p, index, other);
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>{}(name)));
  std::uniform_real_distribution<float> offset(-0.5f, 0.5f);
  HostTensor<float> t = original;
  for (float& v : t.data) v += offset(rng);
  return t;
}

// TensorSet has no mutable access (common/host_tensor.h is CUDA's too); a set the lint made
// itself may be changed in place.
HostTensor<float>& mutable_tensor(TensorSet& set, const std::string& name) {
  return const_cast<HostTensor<float>&>(set.get(name));
}

// Each input and parameter of `base` redrawn alone, in place, and put back after its run.
void add_sensitivity(const ProblemInstance& p, const ReferenceFn& reference, TensorSet& base,
                     const ReferenceOutput& out, LintReport& report) {
  const ProblemSpec& spec = p.spec();
  const GeneratorKey key{0, 0};
  auto probe = [&](const std::string& name, bool is_param, size_t index) {
    HostTensor<float>& slot = mutable_tensor(base, name);
    HostTensor<float> aside = redraw(p, name, is_param, index, slot, key);
    std::swap(slot, aside);  // the redrawn tensor in the set, the original aside
    Sensitivity s{.tensor = name,
                  .is_param = is_param,
                  .constant_init = is_param && constant_init(spec.params[index].init)};
    ReferenceOutput changed;
    try {
      changed = reference(p, base);
    } catch (...) {
      std::swap(slot, aside);
      throw;
    }
    std::swap(slot, aside);
    s.changed_share = share_changed(out, changed, spec.tolerance);
    report.sensitivity.push_back(s);
  };
  for (size_t i = 0; i < spec.inputs.size(); ++i) probe(spec.inputs[i].name, false, i);
  for (size_t i = 0; i < spec.params.size(); ++i) probe(spec.params[i].name, true, i);
}

// Every operand rounded to TF32, in place.
void round_operands(TensorSet& tensors) {
  for (const auto& [name, unused] : tensors.all()) {
    float* v = mutable_tensor(tensors, name).data.data();
    parallel_for(unused.numel(), [v](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) v[i] = round_to_tf32(v[i]);
    });
  }
}

void add_findings(LintReport& r, Tolerance tol) {
  auto add = [&r](Severity s, std::string m) { r.findings.push_back({s, std::move(m)}); };
  for (const CheatResult& c : r.cheats) {
    if (!c.passes()) continue;
    const bool trivial = c.name == "zeros" || c.name == "constant";
    // A TF32 or half-precision kernel passing a strict-fp32 problem is medium; the output merely
    // rounded to TF32 (10 bits) passing is expected of any check looser than ~1e-3 relative: low.
    const Severity s = trivial                   ? Severity::kHigh
                       : c.name == "tf32 output" ? Severity::kLow
                                                 : Severity::kMedium;
    add(s, describe(c.name) + " passes the tolerance at every seed" +
               format(" (worst element at %.2g of the allowed error)", c.worst_ratio));
  }
  if (r.near_zero_share >= kNearZeroShareMedium) {
    add(r.near_zero_share >= kNearZeroShareHigh ? Severity::kHigh : Severity::kMedium,
        format("%.1f%% of the outputs are within atol of zero", 100 * r.near_zero_share));
  }
  if (r.seed_std_min < kFlatStdInAtols * tol.atol) {
    add(Severity::kHigh, format("the output is nearly flat: per-seed std %.3g (atol %.g)",
                                r.seed_std_min, tol.atol));
  }
  for (const Sensitivity& s : r.sensitivity) {
    const std::string what = (s.is_param ? "parameter " : "input ") + s.tensor;
    if (s.changed_share == 0) {
      add(s.is_param ? Severity::kMedium : Severity::kHigh,
          what + " does not change the output beyond the tolerance: a kernel may ignore it");
    } else if (s.changed_share < kBarelyChangedShare) {
      add(Severity::kLow,
          what + format(" changes only %.3g%% of the outputs", 100 * s.changed_share));
    }
    if (s.constant_init && s.changed_share > 0) {
      add(Severity::kLow, what +
                              " is ones/zeros at every seed, so a kernel that hard-codes it "
                              "passes, though the output depends on it");
    }
  }
}

}  // namespace

const char* severity_name(Severity severity) {
  switch (severity) {
    case Severity::kInfo:
      return "info";
    case Severity::kLow:
      return "low";
    case Severity::kMedium:
      return "medium";
    case Severity::kHigh:
      return "high";
  }
  return "?";
}

Severity LintReport::worst() const {
  Severity w = Severity::kInfo;
  for (const LintFinding& f : findings) w = std::max(w, f.severity);
  return w;
}

float round_to_tf32(float value) {
  if (!std::isfinite(value)) return value;
  uint32_t bits = std::bit_cast<uint32_t>(value);
  bits += 0xFFFu + ((bits >> 13) & 1u);  // round to nearest even on the 13 dropped bits
  return std::bit_cast<float>(bits & ~0x1FFFu);
}

float round_to_fp16(float value) {
  if (!std::isfinite(value)) return value;
  constexpr float kMax = 65504.0f, kMinNormal = 6.103515625e-05f, kSubnormalStep = 5.9604645e-08f;
  if (std::abs(value) >= kMax + 16.0f) return std::copysign(INFINITY, value);  // past the midpoint
  if (std::abs(value) < kMinNormal) return std::nearbyint(value / kSubnormalStep) * kSubnormalStep;
  return round_to_tf32(value);  // fp16 normals also keep 10 mantissa bits
}

LintReport lint_problem(const ProblemInstance& p, const ReferenceFn& reference, int seeds) {
  const Tolerance tol = p.spec().tolerance;
  LintReport r;
  r.id = p.spec().id;
  r.dims = p.dims();
  r.seeds = seeds;
  r.elements = element_count(p.output_shape());
  r.min = std::numeric_limits<double>::infinity();
  r.max = -r.min;
  r.seed_std_min = std::numeric_limits<double>::infinity();
  CheatResult zeros{.name = "zeros"}, constant{.name = "constant"}, tf32{.name = "tf32 output"},
      fp16{.name = "fp16 output"}, operands{.name = "tf32 operands"};
  int64_t near_zero = 0;
  std::vector<double> scalar_values;  // a 0-d output's value per seed
  // The serial sums (the constant, each seed's std) run on threads of their own while the lint
  // goes on; the outputs they read stay here until the end.
  std::vector<std::unique_ptr<const ReferenceOutput>> outputs;
  std::vector<std::future<double>> seed_stds;
  std::future<double> constant_sum;
  double constant_value = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    TensorSet tensors = generate_tensors(p, GeneratorKey{static_cast<uint64_t>(seed), 0});
    outputs.push_back(std::make_unique<const ReferenceOutput>(reference(p, tensors)));
    const ReferenceOutput& out = *outputs.back();
    if (seed == 0) {
      constant_sum = std::async(std::launch::async, [&out] { return mean_of_quotients(out); });
      add_sensitivity(p, reference, tensors, out, r);
      round_operands(tensors);  // the last use of this seed's tensors
      operands.worst_ratio = worst_ratio(out, reference(p, tensors), tol);
      constant_value = constant_sum.get();
    }
    seed_stds.push_back(std::async(std::launch::async, [&out] {
      return visit_values(out, [](auto v) { return stddev(v); });
    }));
    scalar_values.push_back(visit_values(out, [](auto v) { return v[0]; }));
    const SeedStats s = seed_stats(out, tol, constant_value);
    r.min = std::min(r.min, s.min);
    r.max = std::max(r.max, s.max);
    near_zero += s.near_zero;
    zeros.worst_ratio = std::max(zeros.worst_ratio, s.zeros);
    constant.worst_ratio = std::max(constant.worst_ratio, s.constant);
    tf32.worst_ratio = std::max(tf32.worst_ratio, s.tf32);
    fp16.worst_ratio = std::max(fp16.worst_ratio, s.fp16);
  }
  for (std::future<double>& s : seed_stds) r.seed_std_min = std::min(r.seed_std_min, s.get());
  // One value has no spread within a seed; how much it moves between seeds is what matters.
  if (r.elements == 1)
    r.seed_std_min = stddev(Values<double>{scalar_values.data(), scalar_values.size()});
  r.near_zero_share = static_cast<double>(near_zero) / static_cast<double>(r.elements * seeds);
  r.cheats = {zeros, constant, tf32, fp16, operands};
  add_findings(r, tol);
  return r;
}

}  // namespace kb
