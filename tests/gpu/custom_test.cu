// Every custom variant matches the golden model and its reference at the problem's tolerance on
// the small preset, the odd preset (batch 1, odd sizes) and every oracle fixture's dims — shapes
// that are not multiples of any tile. The full preset is checked by the executor (`kb bench`).
#include <gtest/gtest.h>

#include "kernels/cpu_model.h"
#include "tests/gpu/problem_cases.h"

namespace kb::gpu_test {
namespace {

class CustomTest : public testing::TestWithParam<Case> {};

TEST_P(CustomTest, MatchesGoldenModelAndReference) {
  const Case& c = GetParam();
  ProblemInstance p = ProblemInstance::create(catalog().problems.at(c.id), c.dims).value();
  std::vector<float> got = run_variant(c, p, Variant::kCustom);
  if (got.empty()) return;
  HostTensor<double> golden = find_cpu_model(c.id)->golden(p, generate_tensors(p, GeneratorKey{c.seed, c.trial}));
  expect_within_tolerance(c, p, got, golden.data, "golden");
  std::vector<float> ref = run_variant(c, p, Variant::kReference);
  if (!ref.empty()) expect_within_tolerance(c, p, got, ref, "ref");
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CustomTest);
INSTANTIATE_TEST_SUITE_P(AllCustoms, CustomTest, testing::ValuesIn(cases_with(Variant::kCustom)), case_name);

}  // namespace
}  // namespace kb::gpu_test
