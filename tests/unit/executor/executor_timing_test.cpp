// The timing phase's checks (executor_timing.cpp) against the fake device: fresh contents for
// every timed pair, a check after every timed custom call, the launch trace of every round, the
// hard floor and the policy label. Each trick of docs/verification.md that the executor (rather
// than the GPU) must catch has its test here; the custom variant plays the trick in a lambda.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/executor/executor_fixture.h"

namespace kb {
namespace {

using fake::Call;

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

// ---- Fresh contents ---------------------------------------------------------------------------

// Each trial key generated once, but for a B A pair's contents made again before its reference
// (the same key, right after).
void expect_each_key_new(const std::vector<GeneratorKey>& generated) {
  std::set<uint32_t> trials;
  for (size_t i = 0; i < generated.size(); ++i) {
    const uint32_t trial = generated[i].trial;
    const bool again = i > 0 && generated[i - 1].trial == trial;
    EXPECT_TRUE(trials.insert(trial).second || again) << trial;
  }
}

TEST_F(ExecutorTest, EveryTimedCustomCallSeesContentsNoOtherCallSaw) {
  JobResult r = run();
  ASSERT_EQ(r.status, JobStatus::kOk) << r.message;
  expect_each_key_new(device_.generated);
  // Between two timed custom calls the contents are regenerated; each is timed with the
  // reference on the same contents (a key's generations), inside the same pair (A B or B A).
  std::string last_generate;
  int customs_since_generate = 0, references_since_generate = 0;
  for (const std::string& e : device_.log) {
    if (starts_with(e, "generate") && e != last_generate) {
      if (!last_generate.empty()) {
        EXPECT_EQ(customs_since_generate, references_since_generate) << "before " << e;
      }
      last_generate = e;
      customs_since_generate = references_since_generate = 0;
    }
    customs_since_generate += starts_with(e, "time custom");
    references_since_generate += starts_with(e, "time reference");
    EXPECT_LE(customs_since_generate, 1) << "two timed custom calls on one set of contents";
  }
}

TEST_F(ExecutorTest, APairIsCheckedAroundItsCustomCall) {
  ASSERT_EQ(run().status, JobStatus::kOk);
  auto first = std::find(device_.log.begin(), device_.log.end(), "generate 0 trial 1001");
  ASSERT_NE(first, device_.log.end());
  // A B: the reference's answer goes to the private copy, then the custom is judged against it.
  const std::vector<std::string> ab(first, first + 11);
  EXPECT_EQ(ab, (std::vector<std::string>{"generate 0 trial 1001", "hash 0", "time reference 0",
                                          "stash", "poison custom", "hash output reference",
                                          "time custom 0", "hash 0", "hash output reference",
                                          "generate 0 trial 1002", "hash 0"}));
  // B A, in the same input set on new contents: no answer anywhere (the reference slot
  // poisoned), the reference runs after the checks, on the contents made again.
  const std::vector<std::string> ba(first + 9, first + 19);
  EXPECT_EQ(ba, (std::vector<std::string>{"generate 0 trial 1002", "hash 0", "poison reference",
                                          "poison custom", "hash output reference", "time custom 0",
                                          "hash 0", "hash output reference",
                                          "generate 0 trial 1002", "time reference 0"}));
}

// Trick 1: an output memo keyed on the inputs' addresses. Fixed timing data would hit it; fresh
// contents make every hit a wrong answer.
TEST_F(ExecutorTest, AMemoKeyedOnInputAddressesIsCaughtInTheFirstTimedRound) {
  std::map<int, std::vector<float>> memo;
  set_custom([&memo](Call& c) {
    if (c.index >= 5 && memo.count(c.set)) {  // honest during the trials
      c.output = memo[c.set];
      return Status::ok();
    }
    Status s = fake::bmm(c);
    memo[c.set] = c.output;
    return s;
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kMismatch);
  EXPECT_TRUE(starts_with(r.message, "timed round 0: ")) << r.message;
}

// Trick 1 with sampled values in the key: on fresh contents it never hits, so it gains nothing.
TEST_F(ExecutorTest, AMemoKeyedOnSampledValuesNeverHitsATimedCall) {
  std::map<std::vector<float>, std::vector<float>> memo;
  int timed_hits = 0;
  set_custom([&](Call& c) {
    const std::vector<float> key = {static_cast<float>(c.set), c.inputs[0].data[0],
                                    c.inputs[1].data[7]};
    if (auto it = memo.find(key); it != memo.end()) {
      timed_hits += c.index >= kFirstTimedCall;
      c.output = it->second;
      return Status::ok();
    }
    Status s = fake::bmm(c);
    memo[key] = c.output;
    return s;
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kOk) << r.message;
  EXPECT_EQ(timed_hits, 0);
}

// Trick 2: skipping the work when the inputs sit where they did in the previous call.
TEST_F(ExecutorTest, SkippingWhenTheInputsHaveNotMovedIsCaught) {
  device_.input_sets = 1;  // every call on the same addresses
  int previous_set = -1;
  set_custom([&previous_set](Call& c) {
    const bool same = c.index >= 5 && c.set == previous_set;
    previous_set = c.set;
    return same ? Status::ok() : fake::bmm(c);
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kNonFinite);  // the poison was left in place
  EXPECT_TRUE(starts_with(r.message, "timed round 0: ")) << r.message;
}

TEST_F(ExecutorTest, AnOutputLeftFromAPreviousCallIsCaught) {
  set_custom([](Call& c) {
    return c.index % 2 == 1 && c.index >= kFirstTimedCall ? Status::ok() : fake::bmm(c);
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kNonFinite);
  EXPECT_TRUE(starts_with(r.message, "timed round 0: ")) << r.message;  // pair B A of round 0
  EXPECT_EQ(r.errors.non_finite, kOutputs);
}

// Trick 4: zeroing the inputs during timing (both variants would then be timed on zeros).
TEST_F(ExecutorTest, ZeroingTheInputsDuringTimingIsInputMutated) {
  set_custom([](Call& c) {
    Status s = fake::bmm(c);
    if (c.index >= kFirstTimedCall + 6)
      std::fill(c.inputs[0].data.begin(), c.inputs[0].data.end(), 0.f);
    return s;
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kInputMutated);
  EXPECT_EQ(r.message, "timed round 3: the custom call changed its inputs or parameters");
}

// Trick 4 beyond the hash: the inputs rewritten so that the hash does not change (here the fake's
// hash is blind), in the B A pairs only, where the reference runs after the custom. The contents
// are made again before that reference, which then disagrees with the custom's answer.
TEST_F(ExecutorTest, ACustomThatRewritesItsInputsBeyondTheHashFailsInBAPairs) {
  device_.blind_input_hash = true;
  set_custom([](Call& c) {
    const bool pair_ba = c.index >= kFirstTimedCall && (c.index - kFirstTimedCall) % 2 == 1;
    if (pair_ba) std::fill(c.inputs[0].data.begin(), c.inputs[0].data.end(), 0.f);
    return fake::bmm(c);
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kMismatch) << r.message;
  EXPECT_TRUE(starts_with(r.message, "timed round 0: ")) << r.message;
}

// Trick 4 during warm-up: the timed calls run on regenerated contents, never the zeros.
TEST_F(ExecutorTest, ZeroingTheInputsDuringWarmUpReachesNoTimedCall) {
  int timed_on_zeros = 0;
  auto all_zero = [](const std::vector<float>& v) {
    return std::all_of(v.begin(), v.end(), [](float x) { return x == 0; });
  };
  set_custom([&](Call& c) {
    timed_on_zeros += c.index >= kFirstTimedCall && all_zero(c.inputs[0].data);
    Status s = fake::bmm(c);
    if (c.index >= 5 && c.index < kFirstTimedCall)
      std::fill(c.inputs[0].data.begin(), c.inputs[0].data.end(), 0.f);
    return s;
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kOk) << r.message;
  EXPECT_EQ(timed_on_zeros, 0);
}

// Trick 5: writing into the reference's output.
TEST_F(ExecutorTest, WritingIntoTheReferenceOutputIsCaught) {
  set_custom([](Call& c) {
    Status s = fake::bmm(c);
    if (c.index >= kFirstTimedCall + 2) c.reference_output[0] = 0.f;
    return s;
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kInputMutated);
  EXPECT_EQ(r.message, "timed round 1: the custom call wrote into the reference's output buffer");
}

// Trick 5: copying the reference's answer. When the reference ran first its answer is in the
// private copy and its slot holds NaN; when it runs second there is no answer yet.
TEST_F(ExecutorTest, CopyingTheReferenceOutputIsCaught) {
  set_custom([](Call& c) {
    if (c.index < kFirstTimedCall) return fake::bmm(c);
    c.output = c.reference_output;
    return Status::ok();
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kNonFinite);
  EXPECT_TRUE(starts_with(r.message, "timed round 0: ")) << r.message;
}

TEST_F(ExecutorTest, NoTimedCustomCallFindsAnAnswerInTheReferenceSlot) {
  int answers_seen = 0;
  set_custom([&answers_seen](Call& c) {
    const bool answer = std::any_of(c.reference_output.begin(), c.reference_output.end(),
                                    [](float v) { return std::isfinite(v); });
    answers_seen += c.index >= kFirstTimedCall && answer;
    return fake::bmm(c);
  });
  ASSERT_EQ(run().status, JobStatus::kOk);
  EXPECT_EQ(answers_seen, 0);
}

// ---- Launch accounting ----------------------------------------------------------------------

// Trick 3: honest while the trials are traced, then work on a side stream, unjoined.
TEST_F(ExecutorTest, ASideStreamInATimedRoundIsForeignStream) {
  device_.trace_call = [](Slot slot, int index) {
    CallTrace t = fake::honest_trace(slot, index);
    if (slot == Slot::kCustom && index == kFirstTimedCall + 9) {
      t.foreign = {
          "kernel kb::bmm_kernel on stream 0 (legacy default; job stream 7), ending 0.2 ms after "
          "the call"};
    }
    return t;
  };
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kForeignStream);
  EXPECT_TRUE(starts_with(r.message, "timed round 4: 1 activities of the custom call"))
      << r.message;
  EXPECT_NE(r.message.find("legacy default"), std::string::npos);
}

// Trick 3: a host thread that launches later, outside any call.
TEST_F(ExecutorTest, ALaunchFromAnotherHostThreadIsForeignStream) {
  device_.stray = [](int trace) {
    // Traces 0..4 are the trials'; trace 5 + r is timed round r's.
    return trace == 5 + 6 ? std::vector<std::string>{"kernel kb::bmm_kernel on stream 7, launched by another host "
                                                     "thread (cudaLaunchKernel)"}
                          : std::vector<std::string>{};
  };
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kForeignStream);
  EXPECT_TRUE(
      starts_with(r.message, "timed round 6: 1 activities launched outside the executor's calls"))
      << r.message;
}

// A host thread the variant left behind queues the real work on the job stream just after run()
// returns: behind the stop event, ahead of the checks. The CUDA device judges the output as it
// stood at the stop event and reports work still queued after it (TimedCall::late_work), traced
// round or not: the job fails at the first such call.
TEST_F(ExecutorTest, WorkQueuedAfterATimedCustomCallReturnedIsForeignStream) {
  request_.config.trace_fraction = 0.25;
  device_.late_work_from = 5;  // the third round's B A pair
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kForeignStream);
  EXPECT_TRUE(starts_with(r.message,
                          "timed round 2: work reached the job stream after the custom "
                          "call returned"))
      << r.message;
  EXPECT_EQ(device_.logged("time custom").size(), 6u);
}

// Work queued behind a reference's timed call (a left-behind thread slowing the calls that follow)
// fails the job the same way.
TEST_F(ExecutorTest, WorkQueuedAfterATimedReferenceCallReturnedIsForeignStream) {
  device_.late_work_slot = Slot::kReference;
  device_.late_work_from = 3;  // the second round's B A pair
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kForeignStream);
  EXPECT_TRUE(starts_with(r.message,
                          "timed round 1: work reached the job stream after the "
                          "reference call returned"))
      << r.message;
}

CallTrace mostly_library(Slot slot, int index) {
  CallTrace t = fake::honest_trace(slot, index);
  t.library_kernels = 3;
  t.own_gpu_ms = 0.2;
  t.total_gpu_ms = 1.0;
  return t;
}

// Trick 6: library kernels do the work beside a trivial kernel of our own.
TEST_F(ExecutorTest, OwnKernelsBelowHalfTheGpuTimeIsLibraryDominated) {
  device_.trace_call = mostly_library;
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kLibraryDominated);
  EXPECT_EQ(
      r.message,
      "correctness trial 0: own kernels carry 20.0% of the custom call's 1.000 ms of GPU time "
      "(minimum 50%)");
}

TEST_F(ExecutorTest, LibraryDominatedOnlyWhenTimedIsCaughtInItsRound) {
  device_.trace_call = [](Slot slot, int index) {
    return index >= kFirstTimedCall + 4 ? mostly_library(slot, index)
                                        : fake::honest_trace(slot, index);
  };
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kLibraryDominated);
  EXPECT_TRUE(starts_with(r.message, "timed round 2: ")) << r.message;
}

TEST_F(ExecutorTest, TheSpecCanLowerTheOwnKernelShare) {
  auto spec = std::make_shared<ProblemSpec>(*spec_);
  spec->verification.own_kernel_share_min = 0.1;
  request_.spec = spec;
  device_.trace_call = mostly_library;
  EXPECT_EQ(run().status, JobStatus::kOk);
}

// --trace-fraction 0.25 (the default): a random quarter of the rounds is traced and their samples
// discarded.
TEST_F(ExecutorTest, ARandomFractionOfRoundsIsTracedAndTheirSamplesDiscarded) {
  request_.config.trace_fraction = ExecutorConfig{}.trace_fraction;
  ASSERT_EQ(request_.config.trace_fraction, 0.25);
  JobResult r = run();
  ASSERT_EQ(r.status, JobStatus::kOk) << r.message;
  EXPECT_GE(r.traced_rounds, 1);
  EXPECT_LT(r.traced_rounds, r.rounds);
  EXPECT_EQ(device_.logged("begin_trace").size(), 5u + static_cast<size_t>(r.traced_rounds));
  EXPECT_EQ(device_.logged("time custom").size(),
            2u * static_cast<size_t>(r.rounds + r.traced_rounds));
  EXPECT_EQ(r.custom.samples_ms.size(), 2u * static_cast<size_t>(r.rounds));
}

TEST_F(ExecutorTest, AFractionTracedJobStillCatchesAForeignStream) {
  request_.config.trace_fraction = 0.25;
  device_.trace_call = [](Slot slot, int index) {
    CallTrace t = fake::honest_trace(slot, index);
    if (index >= kFirstTimedCall) t.foreign = {"kernel kb::bmm_kernel on stream 13 (job stream 7)"};
    return t;
  };
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kForeignStream);
  EXPECT_TRUE(starts_with(r.message, "timed round ")) << r.message;
}

// ---- The timing gate's void samples -----------------------------------------------------------

// A call that waits on its own stream behind the CUDA device's timing gate returns a void sample
// (its time holds the gate's timeout), and the whole round is taken again on contents no call saw:
// a second run on the same contents could reuse what the first left. (The gate's first version
// timed the call again inside run_timed, on the same contents and over its own output: L2_093's
// memo_by_sampled_values bad variant then timed a copy and was library_dominated.)
TEST_F(ExecutorTest, AVoidSampleTakesItsRoundAgainOnFreshContents) {
  device_.void_samples = 1;  // round 0's first call
  JobResult r = run();
  ASSERT_EQ(r.status, JobStatus::kOk) << r.message;
  const size_t rounds = static_cast<size_t>(r.rounds);
  EXPECT_EQ(r.custom.samples_ms.size(), 2u * rounds);
  EXPECT_EQ(device_.logged("time custom").size(), 2u * (rounds + 1));  // round 0 twice
  EXPECT_EQ(device_.logged("begin_trace").size(), 5u + rounds + 1);
  EXPECT_EQ(r.traced_rounds, r.rounds);
  expect_each_key_new(device_.generated);
}

// The void round's wall time (on the GPU, the gate's 1 s timeout) does not count against the time
// cap: a job with a 0.2 s cap whose void round takes 0.3 s still times for ~0.2 s.
TEST_F(ExecutorTest, AVoidRoundIsOutsideTheTimeCap) {
  request_.config.stopping.time_cap_s = 0.2;
  request_.config.stopping.min_rounds = 1000;
  device_.void_samples = 1;
  set_custom([](Call& c) {
    if (c.index == kFirstTimedCall) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return fake::bmm(c);
  });
  JobResult r = run();
  ASSERT_EQ(r.status, JobStatus::kOk) << r.message;
  EXPECT_GT(r.rounds, 2) << "the void round's 0.3 s ended the job at its second round";
}

TEST_F(ExecutorTest, AVoidSampleInARoundTakenAgainIsARuntimeError) {
  device_.void_samples = std::numeric_limits<int>::max();
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kRuntimeError);
  EXPECT_EQ(r.message, "timed round 0: the device voided the samples of a round taken again");
}

// The host's time issuing each call, which the gate keeps out of the samples, is reported per
// variant as the median of the samples that were not void.
TEST_F(ExecutorTest, TheHostIssueTimeIsReportedPerVariant) {
  device_.variants[KB_VARIANT_REFERENCE].host_ms = 0.01;
  device_.variants[KB_VARIANT_CUSTOM].host_ms = 0.5;
  device_.void_samples = 1;
  JobResult r = run();
  ASSERT_EQ(r.status, JobStatus::kOk) << r.message;
  const nlohmann::json& issue = r.environment.at("host_issue_ms");
  EXPECT_DOUBLE_EQ(issue.at("reference").get<double>(), 0.01);
  EXPECT_DOUBLE_EQ(issue.at("custom").get<double>(), 0.5);
}

// ---- First failure, floor, policy -------------------------------------------------------------

TEST_F(ExecutorTest, TheFirstFailureEndsTheJobAndNamesItsRound) {
  set_custom([](Call& c) {
    Status s = fake::bmm(c);
    if (c.index >= kFirstTimedCall + 2 * 7) c.output[11] += 1.0f;
    if (c.index >= kFirstTimedCall + 2 * 8) c.inputs[0].data[0] = 0.f;  // never reached
    return s;
  });
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kMismatch);
  EXPECT_EQ(r.message, "timed round 7: 1 of 969 outputs outside tolerance; first at index 11");
  EXPECT_EQ(r.errors.first_mismatch_index, 11);
  EXPECT_EQ(device_.calls(Slot::kCustom), kFirstTimedCall + 2 * 7 + 1);
  EXPECT_EQ(r.rounds, 7);
}

TEST_F(ExecutorTest, BelowTheHardFloorIsImplausible) {
  device_.variants[KB_VARIANT_CUSTOM].ms = 1e-6;  // the floor of L1_003 small here is ~9e-5 ms
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kImplausible);
  EXPECT_TRUE(starts_with(r.message, "the custom median ")) << r.message;
  EXPECT_NE(r.message.find("below the hard physical floor"), std::string::npos);
  EXPECT_LT(r.custom_over_hard_floor, 1.0);
}

TEST_F(ExecutorTest, NoHardFloorOnADeviceWithoutOne) {
  device_.floor = {};
  device_.variants[KB_VARIANT_CUSTOM].ms = 1e-6;
  device_.trace_call = [](Slot slot, int index) {
    CallTrace t = fake::honest_trace(slot, index);
    t.own_gpu_ms = t.total_gpu_ms = t.busy_ms = 1e-6;  // what it takes when traced, too
    return t;
  };
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kOk) << r.message;
  EXPECT_EQ(r.hard_floor_ms, 0);
}

// A custom that plays fair when traced (its work keeps the GPU busy 1 ms) and does a fraction of
// the work when not (0.3 ms): its timed median is under half of its traced busy time. The traced
// rounds' samples are discarded; their activity timestamps are what the trace's callbacks do not
// stretch.
TEST_F(ExecutorTest, ACustomThatWorksLessWhenUntracedIsImplausible) {
  request_.config.trace_fraction = 0.25;
  device_.variants[KB_VARIANT_CUSTOM].ms = 0.3;
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kImplausible);
  EXPECT_TRUE(starts_with(r.message, "the custom median 0.")) << r.message;
  EXPECT_NE(
      r.message.find("under 50% of the 1 ms its work kept the GPU busy in traced timed calls"),
      std::string::npos)
      << r.message;
  // Honest at 0.6 ms (events span more than the kernels' own time): ok.
  device_.variants[KB_VARIANT_CUSTOM].ms = 0.6;
  EXPECT_EQ(run().status, JobStatus::kOk);
}

TEST_F(ExecutorTest, FewerThanThreeTrialsIsUnverified) {
  request_.config.correctness_trials = 2;
  JobResult r = run();
  EXPECT_EQ(r.status, JobStatus::kOk) << r.message;
  EXPECT_FALSE(r.verified);
  EXPECT_EQ(r.unverified_reason, "2 correctness trials (the fleet requires >= 3)");
  EXPECT_FALSE(to_json(r)["verified"].get<bool>());
}

TEST_F(ExecutorTest, ThreeTrialsWithTheTraceIsVerified) {
  request_.config.correctness_trials = 3;
  EXPECT_TRUE(run().verified);
}

}  // namespace
}  // namespace kb
