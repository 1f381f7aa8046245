// The CPU graph interpreter: every configured problem has it as its golden model, and it runs
// graphs no hand-written model ever covered (the golden fixtures check the suite against PyTorch).
#include "kernels/cpu/graph_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/spec_loader.h"
#include "common/tensor_generator.h"
#include "kernels/cpu_model.h"
#include "tests/support/assert_ok.h"
#include "tests/support/probe_specs.h"

namespace kb {
namespace {

TEST(GraphModel, EveryProblemOfTheSuiteHasTheInterpreterAsItsGoldenModel) {
  auto catalog = load_problem_catalog(default_problems_dir());
  KB_ASSERT_OK(catalog);
  for (const auto& [id, spec] : catalog->problems) {
    const CpuModel* model = find_cpu_model(id);
    ASSERT_NE(model, nullptr) << id;
    EXPECT_EQ(model->golden, &cpu::run_graph<double>) << id;
    EXPECT_EQ(model->fp32, &cpu::run_graph<float>) << id;
  }
}

TEST(GraphModel, InterpretsASpecThatHasNoHandWrittenModel) {
  const ProblemInstance p = testing::probe_instance(testing::kChainSpec);
  const TensorSet tensors = generate_tensors(p, GeneratorKey{5, 0});
  const HostTensor<double> out = cpu::run_graph<double>(p, tensors);
  ASSERT_EQ(out.shape, Shape({6}));
  const HostTensor<float>& x = tensors.get("x");
  for (size_t i = 0; i < 6; ++i) {
    const double v = x.data[i];
    const double expected = 1.0 / (1.0 + std::exp(-((v > 0 ? v : 0.0) + v)));
    EXPECT_DOUBLE_EQ(out.data[i], expected) << i;
  }
}

}  // namespace
}  // namespace kb
