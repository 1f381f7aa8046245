// kb-executor --lint on the CPU device: the lint run on the reference pack's output must say what
// the lint on the golden model in `kb` says (the CPU device's reference is that golden model,
// rounded to fp32), in-process and through the executor process with its JSON.
#include "executor/reference_lint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/files.h"
#include "common/install_paths.h"
#include "common/spec_loader.h"
#include "kernels/cpu_model.h"
#include "worker/executor_child.h"

namespace kb {
namespace {

const KernelPack& reference_pack() {
  static const KernelPack* kPack = [] {
    Result<std::string> pin = read_pack_pin(KB_REF_PACK_PATH);
    EXPECT_TRUE(pin.is_ok()) << pin.status().message();
    Result<KernelPack> p = KernelPack::open(KB_REF_PACK_PATH, pin.is_ok() ? pin.value() : "");
    EXPECT_TRUE(p.is_ok()) << p.status().message();
    return p.is_ok() ? new KernelPack(std::move(p).value()) : nullptr;
  }();
  return *kPack;
}

ProblemInstance small_instance(const std::string& id) {
  auto catalog = load_problem_catalog(default_problems_dir());
  EXPECT_TRUE(catalog.is_ok()) << catalog.status().to_string();
  return ProblemInstance::create(catalog->problems.at(id), "small").value();
}

LintReport golden_lint(const ProblemInstance& p, int seeds) {
  return lint_problem(p, find_cpu_model(p.spec().id)->golden, seeds);
}

// Same verdicts; ratios and shares within what rounding the reference's output to fp32 moves.
void expect_same_verdicts(const LintReport& device, const LintReport& golden) {
  EXPECT_EQ(device.elements, golden.elements);
  EXPECT_NEAR(device.near_zero_share, golden.near_zero_share, 1e-3);
  EXPECT_NEAR(device.seed_std_min, golden.seed_std_min, 1e-6 * golden.seed_std_min);
  ASSERT_EQ(device.cheats.size(), golden.cheats.size());
  for (size_t i = 0; i < golden.cheats.size(); ++i) {
    EXPECT_EQ(device.cheats[i].name, golden.cheats[i].name);
    EXPECT_EQ(device.cheats[i].passes(), golden.cheats[i].passes()) << golden.cheats[i].name;
    EXPECT_NEAR(device.cheats[i].worst_ratio, golden.cheats[i].worst_ratio,
                0.05 * std::max(1.0, golden.cheats[i].worst_ratio))
        << golden.cheats[i].name;
  }
  ASSERT_EQ(device.sensitivity.size(), golden.sensitivity.size());
  for (size_t i = 0; i < golden.sensitivity.size(); ++i) {
    EXPECT_EQ(device.sensitivity[i].tensor, golden.sensitivity[i].tensor);
    EXPECT_NEAR(device.sensitivity[i].changed_share, golden.sensitivity[i].changed_share, 1e-3);
  }
  EXPECT_EQ(device.worst(), golden.worst());
}

TEST(ReferenceLint, OnTheCpuDeviceItSaysWhatTheGoldenModelLintSays) {
  const ProblemInstance p = small_instance("L2_017");  // an input and two parameters
  const auto device = make_cpu_device(reference_pack(), reference_pack());
  const Result<std::string> yaml = read_file(p.spec().file);
  ASSERT_TRUE(yaml.is_ok());
  const Result<LintReport> r = lint_reference(*device, p, yaml.value(), 2);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  expect_same_verdicts(r.value(), golden_lint(p, 2));
}

TEST(ReferenceLint, OneSeedIsRefusedBeforeAnythingRuns) {
  const ProblemInstance p = small_instance("L1_019");
  const auto device = make_cpu_device(reference_pack(), reference_pack());
  const Result<LintReport> r = lint_reference(*device, p, "", 1);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("2 seeds"), std::string::npos) << r.status().to_string();
}

// `kb-executor --lint ARGS --device cpu` with this build's reference pack.
ExecutorLaunch lint_launch(std::vector<std::string> args) {
  ExecutorLaunch launch;
  launch.executable = KB_EXECUTOR_PATH;
  launch.args = {"--lint", "--device", "cpu", "--reference-pack", KB_REF_PACK_PATH};
  launch.args.insert(launch.args.end(), args.begin(), args.end());
  launch.timeout_s = 120;
  return launch;
}

// The process `kb problems lint --device cuda` starts, here on the CPU device.
TEST(ReferenceLint, TheExecutorsLintModeWritesTheReportAsJson) {
  const ExecutorLaunch launch =
      lint_launch({"--problem", "L1_023", "--preset", "small", "--seeds", "2"});
  const Result<std::string> text = run_for_output(launch);
  ASSERT_TRUE(text.is_ok()) << text.status().to_string();
  const nlohmann::json out = nlohmann::json::parse(text.value());
  EXPECT_EQ(out.at("environment").at("device"), "cpu");
  const Result<LintReport> r = lint_report_from_json(out.at("lint"));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->id, "L1_023");
  expect_same_verdicts(r.value(), golden_lint(small_instance("L1_023"), 2));
}

TEST(ReferenceLint, TheExecutorsLintModeFailsWithTheReasonForAnUnknownProblem) {
  const ExecutorLaunch launch = lint_launch({"--problem", "L9_999"});
  EXPECT_FALSE(run_for_output(launch).is_ok());
}

}  // namespace
}  // namespace kb
