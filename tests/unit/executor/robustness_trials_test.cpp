// Robustness trials (executor/robustness_trials.h): the verdict rule, errors against the golden
// model, which kinds a spec gets, and whole trials with a fault-injecting fake device as the GPU
// and the real pack's golden model on the CPU device. L1_003 (bmm) at the small preset.
#include "executor/robustness_trials.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "common/spec_loader.h"
#include "tests/support/assert_ok.h"
#include "tests/unit/executor/fake_execution_device.h"

namespace kb {
namespace {

const ProblemCatalog& catalog() {
  static const ProblemCatalog kCatalog = load_problem_catalog(default_problems_dir()).value();
  return kCatalog;
}

std::string yaml_of(const ProblemSpec& spec) {
  std::ifstream in(spec.file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const KernelPack& open_pack(const char* path) {
  Result<KernelPack> p = KernelPack::open(path);
  KB_EXPECT_OK(p);
  return *new KernelPack(std::move(p).value());  // lives for the test binary
}
// The trusted reference pack (golden, reference) and the candidate pack (custom, cpu_fp32).
const KernelPack& reference_pack() {
  static const KernelPack& kPack = open_pack(KB_REF_PACK_PATH);
  return kPack;
}
const KernelPack& pack() {
  static const KernelPack& kPack = open_pack(KB_PACK_PATH);
  return kPack;
}

// The largest |input| of a call: 1 on U[0, 1), ~101 shifted, ~1000 scaled.
double input_range(const fake::Call& c) {
  double m = 0;
  for (const auto& t : c.inputs)
    for (float v : t.data) m = std::max(m, std::fabs(static_cast<double>(v)));
  return m;
}

// bmm plus an error that grows with the input range to the power `power`, times `size`.
fake::Implementation bmm_with_error(double size, double power) {
  return [size, power](fake::Call& c) {
    KB_TRY(fake::bmm(c));
    const float err = static_cast<float>(size * std::pow(input_range(c), power));
    for (float& v : c.output) v += err;
    return Status::ok();
  };
}

class RobustnessTrialsTest : public ::testing::Test {
 protected:
  void SetUp() override { use("L1_003"); }
  // The problem `id` without its `robust` preset unless `keep_robust`: the trials then run at
  // `small`, the shape these tests' error sizes are chosen for.
  void use(const std::string& id, std::vector<Distribution> skip = {}, bool keep_robust = false) {
    auto spec = std::make_shared<ProblemSpec>(*catalog().problems.at(id));
    spec->robustness_skip = std::move(skip);
    if (!keep_robust) {
      std::erase_if(spec->presets, [](const Preset& p) { return p.name == "robust"; });
    }
    request_.spec = spec;
    request_.spec_yaml = yaml_of(*spec);
    request_.preset = "full";  // the trials run at small whatever the job's preset
    request_.seed = 77;
  }
  JobResult run() {
    JobResult r;
    std::unique_ptr<ExecutionDevice> golden = make_cpu_device(reference_pack(), pack());
    run_robustness_trials(device_, *golden, request_, r);
    return r;
  }

  JobRequest request_;
  fake::Device device_;
};

// ---- the verdict rule -----------------------------------------------------------------------

TEST(RobustnessVerdict, InsideTheToleranceIsAPass) {
  EXPECT_EQ(judge_robustness({.max_abs = 0, .max_excess = 5}, {.max_abs = 0, .max_excess = 1.0}),
            "pass");
}

TEST(RobustnessVerdict, OutsideAndFarAboveTheReferenceIsFragile) {
  EXPECT_EQ(judge_robustness({.max_abs = 0, .max_excess = 0.05}, {.max_abs = 0, .max_excess = 1.5}),
            "fragile");
  EXPECT_EQ(judge_robustness({.max_abs = 0, .max_excess = 2}, {.max_abs = 0, .max_excess = 21}),
            "fragile");
}

TEST(RobustnessVerdict, BothOutsideIsIllConditioned) {
  EXPECT_EQ(judge_robustness({.max_abs = 0, .max_excess = 3}, {.max_abs = 0, .max_excess = 29}),
            "ill_conditioned");
}

TEST(RobustnessVerdict, OutsideButNearAReferenceInsideIsMarginal) {
  EXPECT_EQ(judge_robustness({.max_abs = 0, .max_excess = 0.9}, {.max_abs = 0, .max_excess = 1.2}),
            "marginal");
}

TEST(RobustnessErrors, ExcessIsTheErrorOverTheAllowedError) {
  const GoldenErrors e =
      errors_against_golden({1.5f, 10.0f}, {1.0f, 10.0f}, {.atol = 0.1, .rtol = 0.1});
  EXPECT_DOUBLE_EQ(e.max_abs, 0.5);
  EXPECT_NEAR(e.max_excess, 0.5 / (0.1 + 0.1 * 1.0), 1e-12);
}

TEST(RobustnessErrors, NonFiniteCountsOnlyWhereTheGoldenModelDiffers) {
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(errors_against_golden({nan, inf}, {nan, inf}, {}).max_excess, 0);
  EXPECT_TRUE(std::isinf(errors_against_golden({nan}, {1.0f}, {}).max_excess));
  EXPECT_TRUE(std::isinf(errors_against_golden({1.0f}, {inf}, {}).max_abs));
  EXPECT_TRUE(std::isinf(errors_against_golden({1.0f}, {1.0f, 2.0f}, {}).max_abs))
      << "size mismatch";
}

// ---- which kinds ----------------------------------------------------------------------------

TEST(RobustnessKinds, InputKindsForAProblemWithoutOnesOrZerosParameters) {
  EXPECT_EQ(robustness_kinds(*catalog().problems.at("L1_003")),
            (std::vector<Distribution>{Distribution::kShift, Distribution::kScale,
                                       Distribution::kCentered}));
}

TEST(RobustnessKinds, RandomAffineWhereANormHasGammaAndBeta) {
  EXPECT_EQ(robustness_kinds(*catalog().problems.at("L2_021")).back(), Distribution::kRandomAffine);
}

TEST(RobustnessKinds, TheSpecsSkipsAreLeftOut) {
  ProblemSpec spec = *catalog().problems.at("L1_003");
  spec.robustness_skip = {Distribution::kShift, Distribution::kCentered};
  EXPECT_EQ(robustness_kinds(spec), std::vector<Distribution>{Distribution::kScale});
}

TEST(RobustnessKinds, KlDivergenceSkipsEveryMoveOfItsProbabilities) {
  EXPECT_TRUE(robustness_kinds(*catalog().problems.at("L1_098")).empty());
}

TEST(RobustnessShape, ACheapJobIsTriedAtItsOwnPresetOrDims) {
  JobRequest request;
  request.spec = catalog().problems.at("L1_003");
  request.preset = "odd";
  RobustnessShape s = robustness_shape(request);
  EXPECT_EQ(s.label, "odd");
  EXPECT_TRUE(s.is_preset);
  request.preset = "";
  request.dims = {{"batch", 3}, {"M", 5}, {"K", 7}, {"N", 9}};
  s = robustness_shape(request);
  EXPECT_EQ(s.label, "batch=3,M=5,K=7,N=9");  // in the spec's order of dims
  EXPECT_FALSE(s.is_preset);
  EXPECT_EQ(s.dims, request.dims);
}

TEST(RobustnessShape, AJobPastTheGoldenModelsBudgetIsTriedAtTheRobustPreset) {
  JobRequest request;
  request.spec = catalog().problems.at("L1_003");
  request.preset = "full";  // 275 GFLOP
  EXPECT_EQ(robustness_shape(request).label, "robust");
  request.preset = "";
  request.dims = {{"batch", 8}, {"M", 64}, {"K", 512}, {"N", 512}};  // 268 M FLOPs
  const RobustnessShape s = robustness_shape(request);
  EXPECT_EQ(s.label, "robust");
  EXPECT_TRUE(s.is_preset);
  request.dims = {{"batch", 0}, {"M", 1}, {"K", 1}, {"N", 1}};  // refused by the spec
  EXPECT_EQ(robustness_shape(request).label, "robust");
}

TEST(RobustnessPreset, TheSpecsRobustPresetWhereItHasOneElseSmall) {
  // L2_021's small preset is too narrow for its custom's fast path; its robust preset is not.
  EXPECT_EQ(robustness_preset(*catalog().problems.at("L2_021")), "robust");
  ProblemSpec without = *catalog().problems.at("L2_021");
  std::erase_if(without.presets, [](const Preset& p) { return p.name == "robust"; });
  EXPECT_EQ(robustness_preset(without), "small");
}

// ---- whole trials ---------------------------------------------------------------------------

TEST_F(RobustnessTrialsTest, AnExactCustomPassesEveryKindAtTheSmallPreset) {
  JobResult r = run();
  ASSERT_EQ(r.status, JobStatus::kOk) << r.message << r.robustness_note;
  ASSERT_EQ(r.robustness.size(), 3u);
  EXPECT_EQ(r.robustness[0].kind, "shift");
  EXPECT_EQ(r.robustness[2].kind, "centered");
  for (const RobustnessTrial& t : r.robustness) {
    EXPECT_EQ(t.verdict, "pass") << t.kind;
    EXPECT_EQ(t.preset, "small");
    EXPECT_LT(t.custom_excess, 0.01) << t.kind;
    EXPECT_EQ(t.custom_err, t.ref_err) << t.kind;  // the same bmm in both slots
  }
  EXPECT_EQ(device_.logged("generate 0 trial 50"),
            (std::vector<std::string>{"generate 0 trial 500", "generate 0 trial 501",
                                      "generate 0 trial 502"}));
  EXPECT_EQ(device_.generated[1].distribution, Distribution::kScale);
}

TEST_F(RobustnessTrialsTest, AnErrorThatGrowsWithTheInputsIsFragileUnderShift) {
  device_.variants[KB_VARIANT_CUSTOM].run =
      bmm_with_error(1e-6, 4);  // 1e-6 on U[0, 1); ~100 shifted
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kFragile);
  EXPECT_EQ(r.robustness.at(0).verdict, "fragile");
  EXPECT_GT(r.robustness[0].custom_excess, 1);
  EXPECT_EQ(r.robustness.at(2).verdict, "pass") << "centered inputs stay within [-0.5, 0.5)";
  EXPECT_EQ(r.message.rfind("fragile under shift at the small preset: custom max error ", 0), 0u)
      << r.message;
  EXPECT_NE(r.message.find("reference "), std::string::npos) << r.message;
}

TEST_F(RobustnessTrialsTest, BothFarFromTheGoldenModelIsIllConditionedNotAFailure) {
  device_.variants[KB_VARIANT_REFERENCE].run = bmm_with_error(1e-6, 4);
  device_.variants[KB_VARIANT_CUSTOM].run = bmm_with_error(2e-6, 4);
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kOk) << r.message;
  ASSERT_FALSE(r.robustness.empty());
  EXPECT_EQ(r.robustness[0].verdict, "ill_conditioned");
  EXPECT_EQ(r.robustness[0].note.rfind("ill-conditioned for shift: ", 0), 0u)
      << r.robustness[0].note;
}

TEST_F(RobustnessTrialsTest, TheTrialsRunAtTheSpecsRobustPreset) {
  use("L1_003", {}, /*keep_robust=*/true);  // its robust preset takes the custom's wgmma path
  JobResult r = run();
  ASSERT_EQ(r.status, JobStatus::kOk) << r.message << r.robustness_note;
  ASSERT_EQ(r.robustness.size(), 3u);
  for (const RobustnessTrial& t : r.robustness) {
    EXPECT_EQ(t.preset, "robust") << t.kind;
    EXPECT_EQ(t.verdict, "pass") << t.kind;
  }
}

TEST_F(RobustnessTrialsTest, ACheapJobsTrialsRunAtItsOwnShape) {
  request_.preset = "";
  request_.dims = {{"batch", 2}, {"M", 5}, {"K", 11}, {"N", 3}};
  device_.variants[KB_VARIANT_CUSTOM].run = bmm_with_error(1e-6, 4);
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kFragile);
  ASSERT_EQ(r.robustness.size(), 3u);
  for (const RobustnessTrial& t : r.robustness) {
    EXPECT_EQ(t.preset, "batch=2,M=5,K=11,N=3");
    EXPECT_LT(t.ref_excess, 0.01) << "the golden model and the device ran the same shape";
  }
  EXPECT_EQ(r.message.rfind("fragile under shift at batch=2,M=5,K=11,N=3: custom max error ", 0),
            0u)
      << r.message;
}

TEST_F(RobustnessTrialsTest, SkippedKindsAreNotTried) {
  use("L1_003", {Distribution::kShift, Distribution::kScale});
  JobResult r = run();
  ASSERT_EQ(r.robustness.size(), 1u);
  EXPECT_EQ(r.robustness[0].kind, "centered");
}

TEST_F(RobustnessTrialsTest, ACustomThatFailsToRunIsARuntimeError) {
  device_.variants[KB_VARIANT_CUSTOM].run = [](fake::Call& c) {
    return input_range(c) > 2 ? Status::internal("illegal address") : fake::bmm(c);
  };
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kRuntimeError);
  EXPECT_EQ(r.message, "robustness trial shift: custom: illegal address");
}

TEST_F(RobustnessTrialsTest, ACustomThatRefusesTheSmallPresetLeavesANote) {
  device_.variants[KB_VARIANT_CUSTOM].create = {KB_PACK_UNSUPPORTED, "M must be a multiple of 16"};
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kOk);
  EXPECT_TRUE(r.robustness.empty());
  EXPECT_EQ(r.robustness_note, "not run at the small preset: custom: M must be a multiple of 16");
}

TEST_F(RobustnessTrialsTest, TheExecutorsEntryNeedsAGoldenModel) {
  JobResult r;
  run_robustness_trials(device_, request_, r);
  EXPECT_TRUE(r.robustness.empty());
  EXPECT_EQ(r.robustness_note, "no golden model on a fake device");
  JobResult failed;
  failed.status = JobStatus::kMismatch;
  run_robustness_trials(device_, request_, failed);
  EXPECT_TRUE(failed.robustness_note.empty()) << "a job that already failed gets no trials";
}

// The CPU device end to end (golden model against its fp32 twin): random affine norm parameters.
TEST_F(RobustnessTrialsTest, RandomAffineParametersOnTheCpuDevice) {
  use("L2_021", {Distribution::kShift, Distribution::kScale, Distribution::kCentered});
  std::unique_ptr<ExecutionDevice> cpu = make_cpu_device(reference_pack(), pack());
  std::unique_ptr<ExecutionDevice> golden = make_cpu_device(reference_pack(), pack());
  JobResult r;
  run_robustness_trials(*cpu, *golden, request_, r);
  ASSERT_EQ(r.robustness.size(), 1u) << r.robustness_note;
  EXPECT_EQ(r.robustness[0].kind, "random_affine");
  EXPECT_EQ(r.robustness[0].ref_err, 0) << "the CPU device's reference is the golden model";
  EXPECT_EQ(r.robustness[0].verdict, "pass") << r.robustness[0].custom_excess;
}

}  // namespace
}  // namespace kb
