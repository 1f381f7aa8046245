#include "common/problem_lint.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

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

// max over elements of |c - r| / (atol + rtol |r|); NaN anywhere counts as infinite.
template <typename F>
double worst_ratio(const HostTensor<double>& reference, Tolerance tol, F candidate) {
  double worst = 0;
  for (size_t i = 0; i < reference.data.size(); ++i) {
    const double r = reference.data[i];
    const double ratio = std::abs(candidate(i, r) - r) / (tol.atol + tol.rtol * std::abs(r));
    if (!(ratio <= worst))
      worst = std::isnan(ratio) ? std::numeric_limits<double>::infinity() : ratio;
  }
  return worst;
}

double share_changed(const HostTensor<double>& a, const HostTensor<double>& b, Tolerance tol) {
  int64_t changed = 0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    if (!(std::abs(b.data[i] - a.data[i]) <= tol.atol + tol.rtol * std::abs(a.data[i]))) ++changed;
  }
  return a.data.empty() ? 0 : static_cast<double>(changed) / static_cast<double>(a.data.size());
}

double stddev(const std::vector<double>& v) {
  double mean = 0, sq = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(std::max<size_t>(v.size(), 1));
  for (double x : v) sq += (x - mean) * (x - mean);
  return std::sqrt(sq / static_cast<double>(std::max<size_t>(v.size(), 1)));
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

void add_sensitivity(const ProblemInstance& p, const ReferenceFn& reference, const TensorSet& base,
                     const HostTensor<double>& out, LintReport& report) {
  const ProblemSpec& spec = p.spec();
  const GeneratorKey key{0, 0};
  auto probe = [&](const std::string& name, bool is_param, size_t index) {
    TensorSet changed = base;
    changed.put(name, redraw(p, name, is_param, index, base.get(name), key));
    Sensitivity s{.tensor = name,
                  .is_param = is_param,
                  .constant_init = is_param && constant_init(spec.params[index].init)};
    s.changed_share = share_changed(out, reference(p, changed), spec.tolerance);
    report.sensitivity.push_back(s);
  };
  for (size_t i = 0; i < spec.inputs.size(); ++i) probe(spec.inputs[i].name, false, i);
  for (size_t i = 0; i < spec.params.size(); ++i) probe(spec.params[i].name, true, i);
}

TensorSet rounded_operands(const TensorSet& tensors) {
  TensorSet out;
  for (const auto& [name, t] : tensors.all()) {
    HostTensor<float> r = t;
    for (float& v : r.data) v = round_to_tf32(v);
    out.put(name, std::move(r));
  }
  return out;
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
  double constant_value = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    const TensorSet tensors = generate_tensors(p, GeneratorKey{static_cast<uint64_t>(seed), 0});
    const HostTensor<double> out = reference(p, tensors);
    if (seed == 0) {
      for (double v : out.data) constant_value += v / static_cast<double>(out.data.size());
      add_sensitivity(p, reference, tensors, out, r);
      const HostTensor<double> from_tf32 = reference(p, rounded_operands(tensors));
      operands.worst_ratio =
          worst_ratio(out, tol, [&](size_t i, double) { return from_tf32.data[i]; });
    }
    for (double v : out.data) {
      r.min = std::min(r.min, v);
      r.max = std::max(r.max, v);
      if (std::abs(v) <= tol.atol) ++near_zero;
    }
    r.seed_std_min = std::min(r.seed_std_min, stddev(out.data));
    scalar_values.push_back(out.data.front());
    auto keep_worst = [&](CheatResult& c, auto f) {
      c.worst_ratio = std::max(c.worst_ratio, worst_ratio(out, tol, f));
    };
    keep_worst(zeros, [](size_t, double) { return 0.0; });
    keep_worst(constant, [&](size_t, double) { return constant_value; });
    keep_worst(tf32, [](size_t, double v) { return double(round_to_tf32(static_cast<float>(v))); });
    keep_worst(fp16, [](size_t, double v) { return double(round_to_fp16(static_cast<float>(v))); });
  }
  // One value has no spread within a seed; how much it moves between seeds is what matters.
  if (r.elements == 1) r.seed_std_min = stddev(scalar_values);
  r.near_zero_share = static_cast<double>(near_zero) / static_cast<double>(r.elements * seeds);
  r.cheats = {zeros, constant, tf32, fp16, operands};
  add_findings(r, tol);
  return r;
}

}  // namespace kb
