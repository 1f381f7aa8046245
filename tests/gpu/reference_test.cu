// Every reference matches the golden model at the problem's tolerance on the small preset, the
// odd preset and every oracle fixture's dims (where it is also compared with PyTorch's output).
#include <gtest/gtest.h>

#include "common/npy.h"
#include "kernels/cpu_model.h"
#include "tests/gpu/problem_cases.h"

namespace kb::gpu_test {
namespace {

class ReferenceTest : public testing::TestWithParam<Case> {};

TEST_P(ReferenceTest, MatchesGoldenModel) {
  const Case& c = GetParam();
  ProblemInstance p = ProblemInstance::create(catalog().problems.at(c.id), c.dims).value();
  std::vector<float> got = run_variant(c, p, Variant::kReference);
  if (got.empty()) return;
  HostTensor<double> golden = find_cpu_model(c.id)->golden(p, generate_tensors(p, GeneratorKey{c.seed, c.trial}));
  expect_within_tolerance(c, p, got, golden.data, "golden");
  if (!c.expected_npy.empty()) expect_within_tolerance(c, p, got, read_npy(c.expected_npy).value().data, "pytorch");
}

INSTANTIATE_TEST_SUITE_P(AllProblems, ReferenceTest, testing::ValuesIn(cases_with(Variant::kReference)),
                         case_name);

}  // namespace
}  // namespace kb::gpu_test
