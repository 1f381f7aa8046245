// The golden models against the problem suite: every problem has one; on the small preset it
// runs in under a second, its output has the spec's shape and finite values, and the fp32 twin
// agrees with it within the problem's tolerance; on a second, odd set of dims (batch 1, odd
// spatial sizes) it still runs and gives the spec's shape, which catches models that read a
// preset's numbers instead of the graph.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/spec_loader.h"
#include "common/tensor_generator.h"
#include "kernels/cpu_model.h"
#include "tests/support/assert_ok.h"

namespace kb {
namespace {

constexpr GeneratorKey kKey{.seed = 42, .trial = 0};
// The small preset exists to make the golden model cheap; a second is far above what any needs.
constexpr double kGoldenSecondsLimit = 1.0;

const Result<ProblemCatalog>& catalog() {
  static const Result<ProblemCatalog> kCatalog = load_problem_catalog(default_problems_dir());
  return kCatalog;
}

std::vector<std::string> problem_ids() {
  std::vector<std::string> ids;
  if (!catalog().is_ok()) return ids;  // CatalogLoads reports why
  for (const auto& [id, spec] : catalog().value().problems) ids.push_back(id);
  return ids;
}

std::shared_ptr<const ProblemSpec> spec_of(const std::string& id) {
  return catalog().value().problems.at(id);
}

template <typename T>
testing::AssertionResult all_finite(const HostTensor<T>& t) {
  for (size_t i = 0; i < t.data.size(); ++i) {
    if (!std::isfinite(t.data[i])) {
      return testing::AssertionFailure() << "element " << i << " is " << t.data[i];
    }
  }
  return testing::AssertionSuccess();
}

// |f - g| <= atol + rtol * |g| everywhere; on failure names the worst element.
testing::AssertionResult within_tolerance(const HostTensor<float>& fp32,
                                          const HostTensor<double>& golden, Tolerance tol) {
  if (fp32.shape != golden.shape) {
    return testing::AssertionFailure() << "fp32 shape " << shape_to_string(fp32.shape)
                                       << " != golden shape " << shape_to_string(golden.shape);
  }
  size_t worst = 0;
  double worst_ratio = 0;
  for (size_t i = 0; i < golden.data.size(); ++i) {
    const double allowed = tol.atol + tol.rtol * std::abs(golden.data[i]);
    const double ratio = std::abs(double(fp32.data[i]) - golden.data[i]) / allowed;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst = i;
    }
  }
  if (worst_ratio <= 1) return testing::AssertionSuccess();
  return testing::AssertionFailure()
         << "element " << worst << ": fp32 " << fp32.data[worst] << ", golden "
         << golden.data[worst] << " uses " << worst_ratio << "x the tolerance";
}

TEST(GoldenModelCatalog, CatalogLoads) {
  KB_ASSERT_OK(catalog());
  EXPECT_FALSE(catalog().value().problems.empty());
}

class GoldenModelTest : public testing::TestWithParam<std::string> {};

TEST_P(GoldenModelTest, SmallPresetFp32MatchesGolden) {
  const CpuModel* model = find_cpu_model(GetParam());
  ASSERT_NE(model, nullptr) << "no golden model registered for " << GetParam();
  Result<ProblemInstance> instance = ProblemInstance::create(spec_of(GetParam()), "small");
  KB_ASSERT_OK(instance);
  const TensorSet tensors = generate_tensors(instance.value(), kKey);

  const auto start = std::chrono::steady_clock::now();
  const HostTensor<double> golden = model->golden(instance.value(), tensors);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  const HostTensor<float> fp32 = model->fp32(instance.value(), tensors);

  EXPECT_LT(elapsed.count(), kGoldenSecondsLimit) << "the small preset is too big";
  ASSERT_EQ(golden.shape, instance->output_shape());
  EXPECT_TRUE(all_finite(golden));
  EXPECT_TRUE(all_finite(fp32));
  EXPECT_TRUE(within_tolerance(fp32, golden, instance->spec().tolerance));
}

// Every spec has an `odd` preset (batch 1, odd sizes and channel counts within the problem's
// divisibility rules) that breaks assumptions the other presets hide.
TEST_P(GoldenModelTest, OddPresetRunsWithTheSpecsShape) {
  const CpuModel* model = find_cpu_model(GetParam());
  ASSERT_NE(model, nullptr) << "no golden model registered for " << GetParam();
  Result<ProblemInstance> instance = ProblemInstance::create(spec_of(GetParam()), "odd");
  KB_ASSERT_OK(instance);
  const TensorSet tensors = generate_tensors(instance.value(), kKey);

  const HostTensor<double> golden = model->golden(instance.value(), tensors);
  ASSERT_EQ(golden.shape, instance->output_shape());
  EXPECT_TRUE(all_finite(golden));
}

// CatalogLoads reports a catalog that failed to load; no second failure for the empty list.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GoldenModelTest);
INSTANTIATE_TEST_SUITE_P(Suite, GoldenModelTest, testing::ValuesIn(problem_ids()),
                         [](const testing::TestParamInfo<std::string>& id) { return id.param; });

}  // namespace
}  // namespace kb
