// The executor's policy against a fault-injecting in-memory device (fake_execution_device.h):
// the correctness trials' verdicts, the timing loop's samples, rotation and stopping, derived
// figures, not_implemented and A/A jobs. The timing phase's per-call checks and the policy label
// are in executor_timing_test.cpp. L1_003 (bmm) at the small preset is the problem throughout.
#include "executor/executor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/executor/executor_fixture.h"

namespace kb {
namespace {

using fake::Call;

// ---- Success --------------------------------------------------------------------------------

TEST_F(ExecutorTest, CorrectAndTwiceAsFastIsOkWithASpeedupOfTwo) {
  JobResult r = run();
  ASSERT_EQ(r.status, JobStatus::kOk) << r.message;
  EXPECT_EQ(r.problem_id, "L1_003");
  EXPECT_EQ(r.preset, "small");
  EXPECT_EQ(r.device_kind, "fake");
  EXPECT_EQ(r.dims, nlohmann::json({{"batch", 3}, {"M", 17}, {"K", 33}, {"N", 19}}));
  EXPECT_EQ(r.correctness_trials, 5);
  EXPECT_EQ(r.errors.mismatches, 0);
  EXPECT_EQ(r.errors.first_mismatch_index, -1);
  EXPECT_EQ(r.custom_kernels, std::vector<std::string>{"kb::bmm_kernel"});

  EXPECT_EQ(r.stop_reason, "converged");
  EXPECT_GE(r.rounds, 10);
  EXPECT_EQ(r.reference.samples_ms.size(), static_cast<size_t>(2 * r.rounds));
  EXPECT_EQ(r.custom.samples_ms.size(), static_cast<size_t>(2 * r.rounds));
  EXPECT_NEAR(r.reference.summary.median, 2.0, 0.02);
  EXPECT_NEAR(r.custom.summary.median, 1.0, 0.01);
  EXPECT_EQ(r.reference.summary.count, 2 * r.rounds);
  EXPECT_NEAR(r.speedup.speedup, 2.0, 0.02);
  EXPECT_LE(r.speedup.ci_low, 2.0);
  EXPECT_GE(r.speedup.ci_high, 2.0);
  EXPECT_LE(r.speedup.relative_half_width, 0.01);
  EXPECT_EQ(device_.clock_samples, r.rounds);
  EXPECT_EQ(r.traced_rounds, r.rounds);  // every round traced, its samples kept
  EXPECT_TRUE(r.verified);
  EXPECT_EQ(r.unverified_reason, "");
  EXPECT_EQ(r.environment["device"], "fake");
  EXPECT_EQ(r.environment["clocks"]["fake"], true);
}

TEST_F(ExecutorTest, DerivedFiguresUseTheProblemCostAndTheDevicePeaks) {
  JobResult r = run();
  ASSERT_EQ(r.status, JobStatus::kOk) << r.message;
  // bmm: 2 * batch * M * N * K FLOPs; bytes: 4 * (A + B + C elements).
  EXPECT_DOUBLE_EQ(r.flops, 2.0 * 3 * 17 * 19 * 33);
  EXPECT_DOUBLE_EQ(r.min_bytes, 4.0 * (3 * 17 * 33 + 3 * 33 * 19 + 3 * 17 * 19));
  const double floor_ms = 1e3 * std::max(r.flops / 1e12, r.min_bytes / 1e11);
  EXPECT_DOUBLE_EQ(r.floor_ms, floor_ms);
  EXPECT_DOUBLE_EQ(r.custom_over_floor, r.custom.summary.median / floor_ms);
  EXPECT_DOUBLE_EQ(r.reference_over_floor, r.reference.summary.median / floor_ms);
  EXPECT_DOUBLE_EQ(r.custom_tflops, r.flops / (r.custom.summary.median * 1e-3) / 1e12);
  EXPECT_DOUBLE_EQ(r.custom_gbps, r.min_bytes / (r.custom.summary.median * 1e-3) / 1e9);
  // The hard floor: bytes at the nominal DRAM peak, FLOPs at the 3xTF32 peak (the fake's 2e11,
  // 2e12).
  EXPECT_DOUBLE_EQ(r.hard_floor_ms, 1e3 * std::max(r.min_bytes / 2e11, r.flops / 2e12));
  EXPECT_DOUBLE_EQ(r.custom_over_hard_floor, r.custom.summary.median / r.hard_floor_ms);
}

// Without a fixed secret each job draws its own: the run seed (on the executor's command line)
// does not give a pack the timed calls' inputs, and two jobs of one seed time different inputs.
TEST_F(ExecutorTest, TheTimedInputsComeFromASecretOfTheJobNotTheRunSeed) {
  request_.timing_secret.reset();
  std::vector<uint64_t> timing_seeds;
  for (int job = 0; job < 2; ++job) {
    device_.generated.clear();
    JobResult r = run();
    ASSERT_EQ(r.status, JobStatus::kOk) << r.message;
    ASSERT_GT(device_.generated.size(), 6u);
    for (size_t i = 0; i < 5; ++i) EXPECT_EQ(device_.generated[i].seed, 1234u);
    const uint64_t timing = device_.generated[5].seed;
    EXPECT_NE(timing, 1234u);
    for (size_t i = 5; i < device_.generated.size(); ++i)
      EXPECT_EQ(device_.generated[i].seed, timing);
    timing_seeds.push_back(timing);
  }
  EXPECT_NE(timing_seeds[0], timing_seeds[1]);
}

// The hashes around each custom call are keyed by a salt of their own, drawn from the timing
// secret: the same salt before and after the call, a new one for every check, none a custom can
// know (the input hash is a sum over words, so a known salt admits crafted collisions).
TEST_F(ExecutorTest, EachHashCheckHasASaltOfItsOwnFromTheTimingSecret) {
  std::vector<std::vector<uint64_t>> jobs;
  for (bool secret : {true, true, false}) {
    if (!secret) request_.timing_secret.reset();
    device_.hash_salts.clear();
    JobResult r = run();
    ASSERT_EQ(r.status, JobStatus::kOk) << r.message;
    jobs.push_back(device_.hash_salts);
  }
  const std::vector<uint64_t>& salts = jobs[0];
  ASSERT_GT(salts.size(), 10u + 4u);
  std::set<uint64_t> distinct;
  for (size_t t = 0; t < 10; t += 2) {  // the 5 correctness trials: inputs before, after
    EXPECT_EQ(salts[t], salts[t + 1]) << t;
    distinct.insert(salts[t]);
  }
  ASSERT_EQ((salts.size() - 10) % 4, 0u);
  for (size_t p = 10; p < salts.size(); p += 4) {  // each timed pair: inputs, reference slot
    EXPECT_EQ(salts[p], salts[p + 2]) << p;
    EXPECT_EQ(salts[p + 1], salts[p + 3]) << p;
    distinct.insert(salts[p]);
    distinct.insert(salts[p + 1]);
  }
  EXPECT_EQ(distinct.size(), 5 + (salts.size() - 10) / 2);
  EXPECT_EQ(jobs[1], jobs[0]) << "the same secret, the same salts";
  EXPECT_NE(jobs[2], jobs[0]) << "the same run seed, another secret";
}

TEST_F(ExecutorTest, TrialsUseFreshInputsAndPoisonTheCustomOutput) {
  JobResult r = run();
  ASSERT_EQ(r.status, JobStatus::kOk) << r.message;
  // Trials 0..4 on set 0, the warm-up contents (trial 1000), then one new trial per timed pair;
  // both pairs of a round in one input set, the rounds rotating over the three sets.
  std::vector<std::string> generated = device_.logged("generate");
  // The B A pair's contents are made again before its reference runs (make_contents).
  ASSERT_EQ(generated.size(), 5u + 1u + 3u * static_cast<size_t>(r.rounds));
  for (int t = 0; t < 5; ++t) EXPECT_EQ(generated[t], "generate 0 trial " + std::to_string(t));
  EXPECT_EQ(generated[5], "generate 0 trial 1000");
  EXPECT_EQ(generated[6], "generate 0 trial 1001");
  EXPECT_EQ(generated[7], "generate 0 trial 1002");
  EXPECT_EQ(generated[8], "generate 0 trial 1002");
  EXPECT_EQ(generated[9], "generate 1 trial 1003");
  EXPECT_EQ(generated[10], "generate 1 trial 1004");
  EXPECT_EQ(generated[11], "generate 1 trial 1004");
  EXPECT_EQ(generated[12], "generate 2 trial 1005");
  EXPECT_EQ(generated[15], "generate 0 trial 1007");
  // The trials from the run seed, the timing phase from the job's timing secret.
  ASSERT_GT(device_.generated.size(), 5u);
  for (size_t i = 0; i < device_.generated.size(); ++i)
    EXPECT_EQ(device_.generated[i].seed, i < 5 ? 1234u : 5678u) << i;
  // Each trial: reference, poison, hash, custom (traced), hash.
  const std::vector<std::string> first_trial(device_.log.begin() + 3, device_.log.begin() + 11);
  EXPECT_EQ(first_trial, (std::vector<std::string>{"run reference 0", "poison custom", "hash 0",
                                                   "begin_trace", "run custom 0", "end_trace",
                                                   "hash 0", "generate 0 trial 1"}));
  // Every trial and every timed round is traced; every custom call, timed or not, is poisoned.
  EXPECT_EQ(device_.logged("begin_trace").size(), 5u + static_cast<size_t>(r.rounds));
  EXPECT_EQ(device_.logged("poison custom").size(), 5u + 2u * static_cast<size_t>(r.rounds));
}

TEST_F(ExecutorTest, WarmsUpBothVariantsBeforeTiming) {
  JobResult r = run();
  ASSERT_EQ(r.status, JobStatus::kOk) << r.message;
  auto first_timed = std::find_if(device_.log.begin(), device_.log.end(),
                                  [](const std::string& e) { return e.rfind("time", 0) == 0; });
  auto last_generate = std::find(device_.log.begin(), device_.log.end(), "generate 0 trial 1000");
  ASSERT_NE(last_generate, device_.log.end());
  int reference_warmups = 0, custom_warmups = 0;
  for (auto it = last_generate; it != first_timed; ++it) {
    reference_warmups += it->rfind("run reference", 0) == 0;
    custom_warmups += it->rfind("run custom", 0) == 0;
  }
  EXPECT_GE(reference_warmups, 3);
  EXPECT_GE(custom_warmups, 3);
}

TEST_F(ExecutorTest, RoundsAlternateABBA) {
  JobResult r = run();
  ASSERT_EQ(r.status, JobStatus::kOk) << r.message;
  std::vector<std::string> timed = device_.logged("time");
  ASSERT_GE(timed.size(), 8u);
  for (size_t i = 0; i < timed.size(); ++i) {
    const bool reference = i % 4 == 0 || i % 4 == 3;
    EXPECT_EQ(timed[i].rfind(reference ? "time reference" : "time custom", 0), 0u)
        << i << ": " << timed[i];
  }
}

// Rotation exists so that both variants see every input set; with four sets and four samples per
// round, `(round * 4 + i) % sets` pins the reference to sets {0, 3} and the custom to {1, 2}.
TEST_F(ExecutorTest, EachVariantIsTimedOnEveryInputSet) {
  device_.input_sets = 4;
  JobResult r = run();
  ASSERT_EQ(r.status, JobStatus::kOk) << r.message;
  std::set<std::string> reference_sets, custom_sets;
  for (const std::string& e : device_.logged("time reference")) reference_sets.insert(e.substr(15));
  for (const std::string& e : device_.logged("time custom")) custom_sets.insert(e.substr(12));
  EXPECT_EQ(reference_sets, (std::set<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(custom_sets, (std::set<std::string>{"0", "1", "2", "3"}));
}

TEST_F(ExecutorTest, InputSetsAreCappedByConfigAndDevice) {
  device_.input_sets = 16;
  request_.config.max_input_sets = 2;
  ASSERT_EQ(run().status, JobStatus::kOk);
  std::set<std::string> sets;
  for (const std::string& e : device_.logged("time")) sets.insert(e.substr(e.rfind(' ') + 1));
  EXPECT_EQ(sets, (std::set<std::string>{"0", "1"}));
}

// The CPU device: no trace, but no custom GPU code either; its results stay verified (labelled
// cpu).
TEST_F(ExecutorTest, TraceUnavailableIsNotAFailure) {
  device_.trace_available = false;
  request_.config.trace_fraction = 0.5;
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kOk);
  EXPECT_TRUE(r.verified);
  EXPECT_EQ(r.traced_rounds, 0);
}

// ---- Stopping -------------------------------------------------------------------------------

TEST_F(ExecutorTest, NeverNarrowEnoughStopsAtMaxRounds) {
  request_.config.stopping.target_relative_half_width = 0;
  request_.config.stopping.max_rounds = 13;
  JobResult r = run();
  ASSERT_EQ(r.status, JobStatus::kOk) << r.message;
  EXPECT_EQ(r.stop_reason, "max_rounds");
  EXPECT_EQ(r.rounds, 13);
  EXPECT_EQ(r.custom.samples_ms.size(), 26u);
}

TEST_F(ExecutorTest, NeverNarrowEnoughStopsAtTheTimeCap) {
  request_.config.stopping.target_relative_half_width = 0;
  request_.config.stopping.time_cap_s = 0.05;
  JobResult r = run();
  ASSERT_EQ(r.status, JobStatus::kOk) << r.message;
  EXPECT_EQ(r.stop_reason, "time_cap");
  EXPECT_GE(r.rounds, 2);
}

// ---- Wrong answers --------------------------------------------------------------------------

TEST_F(ExecutorTest, WrongByOnePartInAThousandIsMismatch) {
  set_custom([](Call& c) {
    Status s = fake::bmm(c);
    for (float& v : c.output) v *= 1.001f;
    return s;
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kMismatch);
  EXPECT_EQ(r.correctness_trials, 0);
  EXPECT_EQ(r.errors.mismatches, kOutputs);
  EXPECT_EQ(r.errors.first_mismatch_index, 0);
  EXPECT_NEAR(r.errors.max_rel_error, 1e-3, 2e-5);
  EXPECT_GT(r.errors.max_abs_error, 1e-3);
  EXPECT_EQ(r.errors.non_finite, 0);
  EXPECT_NE(r.message.find("first at index 0"), std::string::npos) << r.message;
  // A wrong answer is not timed.
  EXPECT_TRUE(r.reference.samples_ms.empty());
  EXPECT_TRUE(r.custom.samples_ms.empty());
}

TEST_F(ExecutorTest, OneWrongElementIsFoundByIndex) {
  set_custom([](Call& c) {
    Status s = fake::bmm(c);
    c.output[500] += 1.0f;
    return s;
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kMismatch);
  EXPECT_EQ(r.errors.mismatches, 1);
  EXPECT_EQ(r.errors.first_mismatch_index, 500);
  EXPECT_NEAR(r.errors.max_abs_error, 1.0, 1e-5);
}

TEST_F(ExecutorTest, AnUnwrittenElementIsNonFinite) {
  set_custom([](Call& c) {
    const float left = c.output[123];
    Status s = fake::bmm(c);
    c.output[123] = left;  // as if no thread wrote it
    return s;
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kNonFinite) << r.message;
  EXPECT_EQ(r.errors.non_finite, 1);
  EXPECT_EQ(r.errors.mismatches, 1);
  EXPECT_EQ(r.errors.first_mismatch_index, 123);
}

TEST_F(ExecutorTest, NaNOutputIsNonFinite) {
  set_custom([](Call& c) {
    Status s = fake::bmm(c);
    c.output[7] = std::numeric_limits<float>::quiet_NaN();
    c.output[8] = std::numeric_limits<float>::infinity();
    return s;
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kNonFinite);
  EXPECT_EQ(r.errors.non_finite, 2);
  EXPECT_EQ(r.errors.first_mismatch_index, 7);
}

TEST_F(ExecutorTest, WritingIntoAnInputIsInputMutated) {
  set_custom([](Call& c) {
    Status s = fake::bmm(c);
    c.inputs[1].data[5] = 0.5f * c.inputs[1].data[5] + 1.0f;  // scratch space in B
    return s;
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kInputMutated) << r.message;
  EXPECT_EQ(r.correctness_trials, 0);
  EXPECT_TRUE(r.custom.samples_ms.empty());
}

TEST_F(ExecutorTest, InputMutationInALaterTrialIsCaught) {
  set_custom([](Call& c) {
    Status s = fake::bmm(c);
    if (c.index == 2) c.inputs[0].data[0] += 1.0f;
    return s;
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kInputMutated);
  EXPECT_EQ(r.correctness_trials, 2);
}

TEST_F(ExecutorTest, RightOnlyOnTheFirstCallIsCaughtInTheFirstTimedRound) {
  request_.config.correctness_trials = 1;
  set_custom([](Call& c) {
    Status s = fake::bmm(c);
    if (c.index > 0) {
      for (float& v : c.output) v += 0.5f;  // e.g. a cached result reused for new inputs
    }
    return s;
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kMismatch);
  EXPECT_EQ(r.correctness_trials, 1);
  EXPECT_EQ(r.message.rfind("timed round 0: ", 0), 0u) << r.message;
  EXPECT_EQ(r.errors.mismatches, kOutputs);
  EXPECT_TRUE(r.custom.samples_ms.empty());  // the round it failed in keeps no samples
}

TEST_F(ExecutorTest, RightOnlyDuringTheTrialsIsCaughtInTheFirstTimedRound) {
  set_custom([](Call& c) {
    Status s = fake::bmm(c);
    if (c.index >= 5) c.output[0] += 1.0f;
    return s;
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kMismatch);
  EXPECT_EQ(r.correctness_trials, 5);
  EXPECT_EQ(r.message.rfind("timed round 0: ", 0), 0u) << r.message;
  EXPECT_EQ(r.errors.first_mismatch_index, 0);
}

// ---- Launch trace ---------------------------------------------------------------------------

CallTrace nothing_launched(Slot slot, int) {
  CallTrace t;
  t.slot = slot;
  return t;
}

CallTrace library_only(Slot slot, int) {
  CallTrace t;
  t.slot = slot;
  t.library_kernels = 2;
  t.total_gpu_ms = 1.0;
  t.kernel_names = {"sm90_xmma_gemm", "cublasLt::splitKreduce"};
  return t;
}

TEST_F(ExecutorTest, OnlyLibraryKernelsIsNoCustomKernel) {
  device_.trace_call = library_only;
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kNoCustomKernel);
  EXPECT_EQ(r.message,
            "correctness trial 0: the custom call launched 2 library kernels and none of its own");
  EXPECT_EQ(r.custom_kernels, library_only(Slot::kCustom, 0).kernel_names);
  EXPECT_TRUE(r.custom.samples_ms.empty());
}

// --no-launch-trace (for profilers that need CUPTI): no trace is taken, so the own-kernel check
// cannot fail the job, and the result says the trace was disabled and is unverified.
TEST_F(ExecutorTest, NoLaunchTraceSkipsTheTraceAndSaysSo) {
  device_.trace_call = nothing_launched;
  request_.config.no_launch_trace = true;
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kOk) << r.message;
  EXPECT_EQ(std::count(device_.log.begin(), device_.log.end(), "begin_trace"), 0);
  EXPECT_EQ(r.environment.value("launch_trace", ""), "disabled");
  EXPECT_EQ(r.traced_rounds, 0);
  EXPECT_FALSE(r.verified);
  EXPECT_EQ(r.unverified_reason, "launch trace disabled");
}

TEST_F(ExecutorTest, NothingLaunchedIsNoCustomKernel) {
  device_.trace_call = nothing_launched;
  EXPECT_EQ(run().status, JobStatus::kNoCustomKernel);
}

TEST_F(ExecutorTest, WorkOnAnotherStreamIsForeignStream) {
  device_.trace_call = [](Slot slot, int index) {
    CallTrace t = fake::honest_trace(slot, index);
    t.foreign = {"kernel kb::side_kernel on stream 13 (job stream 7)",
                 "memset on stream 13 (job stream 7)"};
    return t;
  };
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kForeignStream);
  EXPECT_EQ(
      r.message,
      "correctness trial 0: 2 activities of the custom call ran off the job stream or after the "
      "call; first: kernel kb::side_kernel on stream 13 (job stream 7)");
}

// ---- Errors and missing variants ------------------------------------------------------------

TEST_F(ExecutorTest, AnErrorFromTheCustomCallIsRuntimeErrorWithItsMessage) {
  set_custom([](Call&) { return Status::internal("an illegal memory access was encountered"); });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kRuntimeError);
  EXPECT_EQ(r.message, "correctness trial 0: custom: an illegal memory access was encountered");
  EXPECT_EQ(r.correctness_trials, 0);
}

TEST_F(ExecutorTest, AnErrorDuringTimingIsRuntimeError) {
  set_custom([](Call& c) {
    if (c.index >= kFirstTimedCall) return Status::internal("launch failed");
    return fake::bmm(c);
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kRuntimeError);
  EXPECT_EQ(r.message, "timed round 0: custom: launch failed");
  EXPECT_EQ(r.correctness_trials, 5);
  EXPECT_TRUE(r.reference.samples_ms.empty());  // round 0 stopped at its first custom sample
  EXPECT_TRUE(r.custom.samples_ms.empty());
  EXPECT_EQ(device_.logged("begin_trace").size(),
            device_.logged("end_trace").size());  // the trace was ended
}

TEST_F(ExecutorTest, AReferenceErrorIsRuntimeError) {
  device_.variants[KB_VARIANT_REFERENCE].run = [](Call&) {
    return Status::internal("cudnn: bad param");
  };
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kRuntimeError);
  EXPECT_NE(r.message.find("cudnn: bad param"), std::string::npos) << r.message;
}

TEST_F(ExecutorTest, CreateErrorIsRuntimeError) {
  device_.variants[KB_VARIANT_CUSTOM].create = {KB_PACK_ERROR, "out of memory"};
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kRuntimeError);
  EXPECT_EQ(r.message, "custom: out of memory");
}

TEST_F(ExecutorTest, NotImplementedStillTimesTheReference) {
  device_.variants[KB_VARIANT_CUSTOM].create = {KB_PACK_NOT_IMPLEMENTED,
                                                "no custom variant for L1_003"};
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kNotImplemented);
  EXPECT_EQ(r.message, "no custom variant for L1_003");
  EXPECT_EQ(r.correctness_trials, 0);
  EXPECT_EQ(device_.calls(Slot::kCustom), 0);
  EXPECT_GE(r.rounds, 10);
  EXPECT_EQ(r.stop_reason, "converged");
  EXPECT_EQ(r.reference.samples_ms.size(), static_cast<size_t>(2 * r.rounds));
  EXPECT_NEAR(r.reference.summary.median, 2.0, 0.02);
  EXPECT_TRUE(r.custom.samples_ms.empty());
  EXPECT_EQ(r.custom.summary.count, 0);
  EXPECT_EQ(r.speedup.speedup, 0);
  EXPECT_GT(r.reference_over_floor, 0);
  EXPECT_EQ(r.custom_tflops, 0);
}

TEST_F(ExecutorTest, CustomUnsupportedIsUnsupportedAndUntimed) {
  device_.variants[KB_VARIANT_CUSTOM].create = {KB_PACK_UNSUPPORTED, "K must be a multiple of 16"};
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kUnsupported);
  EXPECT_EQ(r.message, "custom: K must be a multiple of 16");
  EXPECT_TRUE(r.reference.samples_ms.empty());
}

TEST_F(ExecutorTest, ReferenceUnsupportedIsUnsupported) {
  device_.variants[KB_VARIANT_REFERENCE].create = {KB_PACK_UNSUPPORTED, "no cuDNN algorithm"};
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kUnsupported);
  EXPECT_EQ(r.message, "reference: no cuDNN algorithm");
  EXPECT_EQ(device_.logged("create custom").size(), 0u);
}

TEST_F(ExecutorTest, DimsThatDoNotFitTheSpecAreUnsupported) {
  request_.preset = "";
  request_.dims = {{"batch", 1}, {"M", 2}};  // K and N missing
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kUnsupported);
  EXPECT_FALSE(r.message.empty());
  EXPECT_TRUE(device_.log.empty());
}

TEST_F(ExecutorTest, UnknownPresetIsUnsupported) {
  request_.preset = "enormous";
  EXPECT_EQ(run().status, JobStatus::kUnsupported);
}

// ---- A/A ------------------------------------------------------------------------------------

TEST_F(ExecutorTest, AAModeTimesTheReferenceAgainstItself) {
  request_.config.aa = true;
  // A/A never asks the pack for the custom variant: it may be missing, wrong, or library-only.
  device_.variants[KB_VARIANT_CUSTOM].create = {KB_PACK_NOT_IMPLEMENTED, "no custom variant"};
  set_custom([](Call&) { return Status::internal("custom must not run in A/A"); });
  JobResult r = run();
  ASSERT_EQ(r.status, JobStatus::kOk) << r.message;
  EXPECT_TRUE(device_.logged("create custom").empty());
  EXPECT_TRUE(device_.logged("begin_trace").empty());
  EXPECT_TRUE(device_.logged("time custom").empty());
  EXPECT_EQ(device_.calls(Slot::kCustom), 0);
  EXPECT_EQ(r.correctness_trials, 0);
  // Both columns are the reference's samples, alternating A B B A.
  EXPECT_EQ(r.stop_reason, "converged");
  EXPECT_EQ(r.custom.samples_ms.size(), r.reference.samples_ms.size());
  EXPECT_EQ(device_.logged("time reference").size(), 4u * static_cast<size_t>(r.rounds));
  EXPECT_NEAR(r.custom.summary.median, 2.0, 0.02);
  EXPECT_NEAR(r.speedup.speedup, 1.0, 0.01);
  EXPECT_LE(r.speedup.ci_low, 1.0);
  EXPECT_GE(r.speedup.ci_high, 1.0);
}

// The whole timing loop (rounds, stopping rule, interval) as a measurement: over many seeded jobs
// its 95% interval holds the true speedup about 95% of the time.
TEST_F(ExecutorTest, IntervalCoversTheTrueSpeedupInAbout95PercentOfJobs) {
  request_.config.correctness_trials = 1;
  const int jobs = 200;
  int covered = 0, aa_covered = 0;
  for (int seed = 0; seed < jobs; ++seed) {
    fake::Device device;
    device.rng.seed(1000 + static_cast<uint64_t>(seed));
    JobResult r = execute_job(device, request_);
    covered += r.speedup.ci_low <= 2.0 && 2.0 <= r.speedup.ci_high;

    fake::Device aa_device;
    aa_device.rng.seed(5000 + static_cast<uint64_t>(seed));
    JobRequest aa = request_;
    aa.config.aa = true;
    JobResult a = execute_job(aa_device, aa);
    aa_covered += a.speedup.ci_low <= 1.0 && 1.0 <= a.speedup.ci_high;
  }
  EXPECT_GE(covered, jobs * 90 / 100);
  EXPECT_LE(covered, jobs * 99 / 100);
  EXPECT_GE(aa_covered, jobs * 90 / 100);
  EXPECT_LE(aa_covered, jobs * 99 / 100);
}

}  // namespace
}  // namespace kb
