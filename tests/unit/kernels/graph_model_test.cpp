// The CPU graph interpreter: every configured problem has it as its golden model, and it runs
// graphs no hand-written model ever covered (the golden fixtures check the suite against PyTorch).
#include "kernels/cpu/graph_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "common/spec_loader.h"
#include "common/tensor_generator.h"
#include "kernels/cpu_model.h"

namespace kb {
namespace {

// out = sigmoid(reshape(relu(x) + x)): a view in the middle, an input read twice.
constexpr char kChain[] = R"yaml(id: L1_901
name: Chain
level: 1
family: activation
dims: [N, C]
presets:
  full: {N: 4, C: 6}
  small: {N: 2, C: 3}
inputs:
  - {name: x, shape: [N, C], generator: normal}
parameters: []
graph:
  - {name: act, op: relu, in: [x], out: a}
  - {name: sum, op: add, in: [a, x], out: b}
  - {name: view, op: reshape, in: [b], out: v, shape: [N * C]}
  - {name: squash, op: sigmoid, in: [v], out: out}
output: out
source: "..."
)yaml";

TEST(GraphModel, EveryProblemOfTheSuiteHasTheInterpreterAsItsGoldenModel) {
  auto catalog = load_problem_catalog(default_problems_dir());
  ASSERT_TRUE(catalog.is_ok()) << catalog.status().to_string();
  for (const auto& [id, spec] : catalog->problems) {
    const CpuModel* model = find_cpu_model(id);
    ASSERT_NE(model, nullptr) << id;
    EXPECT_EQ(model->golden, &cpu::run_graph<double>) << id;
    EXPECT_EQ(model->fp32, &cpu::run_graph<float>) << id;
  }
}

TEST(GraphModel, InterpretsASpecThatHasNoHandWrittenModel) {
  auto spec = parse_problem_spec(kChain, "problems/L1_901_chain.yaml");
  ASSERT_TRUE(spec.is_ok()) << spec.status().to_string();
  const ProblemInstance p = ProblemInstance::create(spec.value(), "small").value();
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
