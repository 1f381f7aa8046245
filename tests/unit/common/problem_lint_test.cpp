// The problem lint: it must flag a check that trivial outputs pass and inputs a kernel may
// ignore, and stay quiet where the check is strong.
#include "common/problem_lint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "cli/problem_lint_report.h"
#include "common/parallel_for.h"
#include "common/spec_loader.h"
#include "kernels/cpu/graph_model.h"
#include "tests/support/assert_ok.h"
#include "tests/support/probe_specs.h"

namespace kb {
namespace {

// out = relu(x - 2) with x ~ U[0, 1): every output is zero; y is never read.
constexpr char kDead[] = R"yaml(id: L1_903
name: Dead
level: 1
family: activation
dims: [N, C]
presets:
  full: {N: 4, C: 64}
  small: {N: 4, C: 64}
inputs:
  - {name: x, shape: [N, C], generator: uniform}
  - {name: y, shape: [N, C], generator: uniform}
parameters:
  - {name: scale, shape: [C], init: ones}
graph:
  - {name: shift, op: add_scalar, in: [x], out: s, value: -2.0}
  - {name: scaled, op: mul, in: [s, scale], out: m}
  - {name: act, op: relu, in: [m], out: out}
output: out
)yaml";

// out = bmm(A, B) with normal operands over K = 64: a strong check.
constexpr char kMatmul[] = R"yaml(id: L1_904
name: Matmul
level: 1
family: matmul
dims: [B, M, K, N]
presets:
  full: {B: 2, M: 16, K: 64, N: 16}
  small: {B: 2, M: 16, K: 64, N: 16}
inputs:
  - {name: A, shape: [B, M, K], generator: normal}
  - {name: X, shape: [B, K, N], generator: normal}
parameters: []
graph:
  - {name: bmm, op: bmm, in: [A, X], out: out}
output: out
)yaml";

LintReport lint(const char* yaml) {
  return lint_problem(kb::testing::probe_instance(yaml), &cpu::run_graph<double>, 2);
}

const CheatResult& cheat(const LintReport& r, const std::string& name) {
  auto it = std::find_if(r.cheats.begin(), r.cheats.end(),
                         [&](const CheatResult& c) { return c.name == name; });
  EXPECT_NE(it, r.cheats.end()) << name;
  return *it;
}

const Sensitivity& sensitivity(const LintReport& r, const std::string& tensor) {
  auto it = std::find_if(r.sensitivity.begin(), r.sensitivity.end(),
                         [&](const Sensitivity& s) { return s.tensor == tensor; });
  EXPECT_NE(it, r.sensitivity.end()) << tensor;
  return *it;
}

TEST(ProblemLint, AnAllZeroOutputIsAHighFindingWithEveryInputIgnorable) {
  const LintReport r = lint(kDead);
  EXPECT_DOUBLE_EQ(r.near_zero_share, 1.0);
  EXPECT_TRUE(cheat(r, "zeros").passes());
  EXPECT_EQ(sensitivity(r, "x").changed_share, 0);
  EXPECT_EQ(sensitivity(r, "y").changed_share, 0);
  EXPECT_TRUE(sensitivity(r, "scale").constant_init);
  EXPECT_EQ(r.worst(), Severity::kHigh);
  EXPECT_NE(cli::lint_text(r).find("zeros **pass**"), std::string::npos) << cli::lint_text(r);
}

TEST(ProblemLint, AStrongCheckHasNoFindingAndNoStandInPasses) {
  const LintReport r = lint(kMatmul);
  for (const CheatResult& c : r.cheats) {
    EXPECT_FALSE(c.passes()) << c.name << " passes, worst ratio " << c.worst_ratio;
  }
  EXPECT_GT(sensitivity(r, "A").changed_share, 0.9);
  EXPECT_GT(sensitivity(r, "X").changed_share, 0.9);
  EXPECT_TRUE(r.findings.empty()) << cli::lint_text(r);
  const std::string md = cli::lint_markdown({r}, "small", "kb problems lint");
  EXPECT_NE(md.find("| L1_904 |"), std::string::npos) << md;
}

// What `kb problems lint` reports for the suite in CI (docs/problem-quality.md): no problem may
// accept an all-zero or constant output (KernelBench issue #165), and none may have an input that
// a kernel could ignore.
TEST(ProblemLint, NoSuiteProblemAcceptsATrivialOutputOrIgnoresAnInput) {
  auto catalog = load_problem_catalog(default_problems_dir());
  KB_ASSERT_OK(catalog);
  for (const auto& [id, spec] : catalog->problems) {
    const ProblemInstance p = ProblemInstance::create(spec, "small").value();
    const LintReport r = lint_problem(p, &cpu::run_graph<double>, 2);
    EXPECT_FALSE(cheat(r, "zeros").passes()) << id;
    EXPECT_FALSE(cheat(r, "constant").passes()) << id;
    for (const Sensitivity& s : r.sensitivity) {
      if (!s.is_param) {
        EXPECT_GT(s.changed_share, 0) << id << " input " << s.tensor;
      }
    }
  }
}

// out = relu(x * scale + y) over 131072 elements: two chunks of the parallel loops.
constexpr char kWide[] = R"yaml(id: L1_905
name: Wide
level: 1
family: activation
dims: [N, C]
presets:
  full: {N: 256, C: 512}
  small: {N: 256, C: 512}
inputs:
  - {name: x, shape: [N, C], generator: normal}
  - {name: y, shape: [N, C], generator: uniform}
parameters:
  - {name: scale, shape: [C], init: ones}
graph:
  - {name: scaled, op: mul, in: [x, scale], out: m}
  - {name: shifted, op: add, in: [m, y], out: s}
  - {name: act, op: relu, in: [s], out: out}
output: out
)yaml";

// The lint's loops and the generator run on several threads: the report is the serial one, bit
// for bit (docs/problem-quality.md and the executor's JSON must not depend on the machine).
TEST(ProblemLint, EveryThreadCountGivesTheSameReport) {
  const ProblemInstance p = kb::testing::probe_instance(kWide);
  set_parallel_threads(1);
  const std::string serial = to_json(lint_problem(p, &cpu::run_graph<double>, 3)).dump();
  for (int threads : {2, 5}) {
    set_parallel_threads(threads);
    EXPECT_EQ(to_json(lint_problem(p, &cpu::run_graph<double>, 3)).dump(), serial) << threads;
  }
  set_parallel_threads(0);
}

// A device's fp32 output is read as doubles in place: the same report as its widened copy.
TEST(ProblemLint, AFloatOutputGivesTheReportOfItsWidenedCopy) {
  const ProblemInstance p = kb::testing::probe_instance(kWide);
  auto as_float = [](const ProblemInstance& q, const TensorSet& t) {
    const HostTensor<double> out = cpu::run_graph<double>(q, t);
    HostTensor<float> f(out.shape);
    for (size_t i = 0; i < f.data.size(); ++i) f.data[i] = static_cast<float>(out.data[i]);
    return f;
  };
  auto widened = [&](const ProblemInstance& q, const TensorSet& t) {
    const HostTensor<float> f = as_float(q, t);
    HostTensor<double> out(f.shape);
    for (size_t i = 0; i < f.data.size(); ++i) out.data[i] = f.data[i];
    return out;
  };
  EXPECT_EQ(to_json(lint_problem(p, as_float, 2)).dump(),
            to_json(lint_problem(p, widened, 2)).dump());
}

// kb-executor --lint hands its report to `kb` as JSON: every field comes back, an infinite worst
// ratio (a NaN in the reference) included.
TEST(ProblemLint, TheReportSurvivesJsonWithInfiniteRatios) {
  LintReport r = lint(kDead);
  r.cheats.push_back({.name = "nan", .worst_ratio = INFINITY});
  const Result<LintReport> back = lint_report_from_json(nlohmann::json::parse(to_json(r).dump()));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(to_json(back.value()), to_json(r));
  EXPECT_EQ(back->cheats.back().worst_ratio, INFINITY);
  EXPECT_EQ(back->worst(), Severity::kHigh);
  EXPECT_EQ(cli::lint_text(back.value()), cli::lint_text(r));
}

TEST(ProblemLint, AReportWithoutItsFieldsIsAnErrorNotAnEmptyReport) {
  const Result<LintReport> back = lint_report_from_json({{"id", "L1_001"}});
  ASSERT_FALSE(back.is_ok());
  EXPECT_NE(back.status().message().find("lint report"), std::string::npos);
}

TEST(ProblemLint, RoundingKeepsTenMantissaBitsToNearestEven) {
  EXPECT_EQ(round_to_tf32(1.0f), 1.0f);
  EXPECT_EQ(round_to_tf32(1.0f + 0x1p-11f), 1.0f);  // a tie rounds to even
  EXPECT_EQ(round_to_tf32(1.0f + 0x1p-11f + 0x1p-20f), 1.0f + 0x1p-10f);
  EXPECT_NEAR(round_to_tf32(1.0e30f), 1.0e30f, 1.0e30f * 0x1p-11f);  // fp32's range, not fp16's
  EXPECT_EQ(round_to_fp16(70000.0f), INFINITY);                      // past fp16's range
  EXPECT_EQ(round_to_fp16(65504.0f), 65504.0f);
  EXPECT_EQ(round_to_fp16(0x1p-25f), 0.0f);              // below half the step
  EXPECT_EQ(round_to_fp16(3 * 0x1p-24f), 3 * 0x1p-24f);  // subnormals are multiples
  EXPECT_TRUE(std::isnan(round_to_tf32(NAN)));
}

}  // namespace
}  // namespace kb
