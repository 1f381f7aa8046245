// Robustness of every custom variant and its reference against the golden model (double, linked
// directly, not rounded through the pack ABI), at every preset the correctness cases check and
// their sweep shapes (problem_cases.h: small, odd, robust, each other preset the golden model
// affords and up to three hidden shapes, so each path a custom routes to), under the
// spec's own inputs and each robustness distribution that applies (shifted, scaled and centered
// inputs; random affine norm/bias parameters; common/tensor_generator.h).
// Prints one table row per (problem, case, distribution): each variant's max |err| and its max
// error over the tolerance ("excess": > 1 is outside), and the robustness trials' verdict
// (executor/robustness_trials.h). The custom must never be `fragile` (outside the tolerance and
// > 10x the reference's error).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "executor/robustness_trials.h"
#include "kernels/cpu_model.h"
#include "tests/gpu/problem_cases.h"

namespace kb::gpu_test {
namespace {

// max |v - g| and max |v - g| / (atol + rtol |g|) against the double golden output; infinite
// where exactly one of the two is non-finite.
GoldenErrors errors_vs_golden(const std::vector<float>& got, const std::vector<double>& golden,
                              const Tolerance& tol) {
  GoldenErrors e;
  if (got.size() != golden.size()) return {INFINITY, INFINITY};
  for (size_t i = 0; i < got.size(); ++i) {
    const double v = got[i], g = golden[i];
    double err = 0, excess = 0;
    if (std::isfinite(v) && std::isfinite(g)) {
      err = std::fabs(v - g);
      excess = err / (tol.atol + tol.rtol * std::fabs(g));
    } else if (!((std::isnan(v) && std::isnan(g)) || v == g)) {
      err = excess = INFINITY;
    }
    e.max_abs = std::max(e.max_abs, err);
    e.max_excess = std::max(e.max_excess, excess);
  }
  return e;
}

// Every case of a problem with a custom and a reference but the PyTorch fixtures: the checked
// presets and the sweep's hidden shapes (problem_cases.h).
std::vector<Case> custom_cases() {
  std::vector<Case> out;
  for (Case& c : cases_with(Variant::kCustom)) {
    if (c.expected_npy.empty() && find_implementation(c.id, Variant::kReference))
      out.push_back(std::move(c));
  }
  return out;
}

class RobustnessTest : public testing::TestWithParam<Case> {};

TEST_P(RobustnessTest, CustomIsNeverFragileAgainstTheGoldenModel) {
  const std::string& id = GetParam().id;
  const std::string& label = GetParam().label;
  const ProblemSpec& spec = *catalog().problems.at(id);
  ProblemInstance p = ProblemInstance::create(catalog().problems.at(id), GetParam().dims).value();
  std::vector<Distribution> kinds = robustness_kinds(spec);
  kinds.insert(kinds.begin(), Distribution::kDefault);
  for (size_t k = 0; k < kinds.size(); ++k) {
    Case c{id, label, p.dims(), 7, kRobustTrialBase + static_cast<uint32_t>(k), "", kinds[k]};
    const std::vector<float> custom = run_variant(c, p, Variant::kCustom);
    const std::vector<float> ref = run_variant(c, p, Variant::kReference);
    ASSERT_FALSE(custom.empty() || ref.empty()) << id << " " << label << " " << to_string(kinds[k]);
    const HostTensor<double> golden = find_cpu_model(id)->golden(p, generate_tensors(p, c.key()));
    const GoldenErrors re = errors_vs_golden(ref, golden.data, spec.tolerance);
    const GoldenErrors ce = errors_vs_golden(custom, golden.data, spec.tolerance);
    const std::string verdict = judge_robustness(re, ce);
    std::printf("ROBUST %-7s %-14s %-14s ref %.3e (%8.3fx)  custom %.3e (%8.3fx)  %s\n", id.c_str(),
                label.c_str(), to_string(kinds[k]).c_str(), re.max_abs, re.max_excess, ce.max_abs,
                ce.max_excess, verdict.c_str());
    EXPECT_NE(verdict, "fragile") << id << " at " << label << " under " << to_string(kinds[k])
                                  << ": custom " << ce.max_abs << " vs reference " << re.max_abs
                                  << " against the golden model";
  }
}

INSTANTIATE_TEST_SUITE_P(AllCustoms, RobustnessTest, testing::ValuesIn(custom_cases()), case_name);

}  // namespace
}  // namespace kb::gpu_test
