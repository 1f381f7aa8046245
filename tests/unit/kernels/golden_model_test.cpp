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

namespace kb {
namespace {

constexpr GeneratorKey kKey{.seed = 42, .trial = 0};
// The small preset exists to make the golden model cheap; a second is far above what any needs.
constexpr double kGoldenSecondsLimit = 1.0;

// A second set of dims per problem, chosen to break assumptions the presets hide: batch 1, odd
// spatial sizes and channel counts, while keeping each problem's divisibility rules.
const std::map<std::string, Dims>& odd_dims() {
  static const std::map<std::string, Dims> kOddDims = {
      {"L1_003", {{"batch", 1}, {"M", 7}, {"K", 9}, {"N", 5}}},
      {"L1_054", {{"N", 1}, {"C_in", 3}, {"C_out", 5}, {"D", 7}, {"H", 9}, {"W", 5}}},
      // Kernel (3, 5, 7) over (D, H, W).
      {"L1_060", {{"N", 1}, {"C_in", 3}, {"C_out", 5}, {"D", 5}, {"H", 7}, {"W", 9}}},
      {"L1_070", {{"N", 1}, {"C_in", 5}, {"C_out", 3}, {"D", 3}, {"H", 5}, {"W", 7}}},
      {"L1_073", {{"N", 1}, {"C_in", 5}, {"C_out", 3}, {"D", 3}, {"H", 5}, {"W", 7}}},
      // groups = 4 divides both channel counts.
      {"L1_075", {{"N", 1}, {"C_in", 8}, {"C_out", 12}, {"H", 5}, {"W", 7}}},
      {"L1_079", {{"N", 1}, {"C_in", 5}, {"C_out", 7}, {"L", 33}}},
      {"L1_081", {{"N", 1}, {"C_in", 5}, {"C_out", 3}, {"H", 3}, {"W", 5}}},
      {"L1_098", {{"N", 1}, {"D", 33}}},
      {"L2_001", {{"N", 1}, {"C_in", 5}, {"C_out", 7}, {"H", 9}, {"W", 11}}},
      {"L2_007", {{"N", 1}, {"C_in", 5}, {"C_out", 7}, {"D", 5}, {"H", 7}, {"W", 9}}},
      {"L2_010", {{"N", 1}, {"C_in", 5}, {"C_out", 7}, {"H", 9}, {"W", 11}}},
      {"L2_017", {{"N", 1}, {"C_in", 5}, {"C_out", 7}, {"H", 9}, {"W", 11}}},
      // GroupNorm(8, C_out): 8 divides C_out.
      {"L2_021", {{"N", 1}, {"C_in", 5}, {"C_out", 24}, {"H", 9}, {"W", 11}}},
      {"L2_031", {{"N", 1}, {"C_in", 5}, {"C_out", 7}, {"H", 9}, {"W", 11}}},
      // LayerNorm(C_out) normalizes the last dim, 2 * W after the transposed conv: C_out = 2 * W.
      {"L2_034", {{"N", 1}, {"C_in", 5}, {"C_out", 18}, {"D", 3}, {"H", 5}, {"W", 9}}},
      // GroupNorm(4, C_out): 4 divides C_out.
      {"L2_060", {{"N", 1}, {"C_in", 3}, {"C_out", 12}, {"D", 3}, {"H", 5}, {"W", 7}}},
      {"L2_091", {{"N", 1}, {"C_in", 5}, {"C_out", 7}, {"H", 5}, {"W", 7}}},
      {"L2_093", {{"N", 1}, {"C_in", 5}, {"C_out", 7}, {"H", 5}, {"W", 7}}},
      {"L3_013", {{"N", 1}, {"C_in", 5}, {"C_out", 7}, {"H", 9}, {"W", 11}}},
      // G divides C_in and C_out / 4; C_in != C_out keeps the conv + BN shortcut.
      {"L3_025", {{"N", 1}, {"C_in", 9}, {"C_out", 12}, {"G", 3}, {"H", 7}, {"W", 9}}},
      // 4 heads divide C (head_dim 3); L = 15 tokens.
      {"L3_031", {{"N", 1}, {"C", 12}, {"H", 3}, {"W", 5}}},
  };
  return kOddDims;
}

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
  ASSERT_TRUE(catalog().is_ok()) << catalog().status().to_string();
  EXPECT_FALSE(catalog().value().problems.empty());
}

TEST(GoldenModelCatalog, OddDimsNameOnlyKnownProblems) {
  ASSERT_TRUE(catalog().is_ok());
  for (const auto& [id, dims] : odd_dims()) {
    EXPECT_NE(catalog().value().find(id), nullptr) << id << " has odd dims but no spec";
  }
}

class GoldenModelTest : public testing::TestWithParam<std::string> {};

TEST_P(GoldenModelTest, SmallPresetFp32MatchesGolden) {
  const CpuModel* model = find_cpu_model(GetParam());
  ASSERT_NE(model, nullptr) << "no golden model registered for " << GetParam();
  Result<ProblemInstance> instance = ProblemInstance::create(spec_of(GetParam()), "small");
  ASSERT_TRUE(instance.is_ok()) << instance.status().to_string();
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

TEST_P(GoldenModelTest, OddDimsRunWithTheSpecsShape) {
  const CpuModel* model = find_cpu_model(GetParam());
  ASSERT_NE(model, nullptr) << "no golden model registered for " << GetParam();
  const auto dims = odd_dims().find(GetParam());
  ASSERT_NE(dims, odd_dims().end()) << "no odd dims for " << GetParam() << "; add a row";
  Result<ProblemInstance> instance = ProblemInstance::create(spec_of(GetParam()), dims->second);
  ASSERT_TRUE(instance.is_ok()) << instance.status().to_string();
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
