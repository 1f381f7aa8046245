// JobResult's JSON form: a full result survives the round trip, an unbounded interval is written as
// null and read back as infinity, and every status keeps its name.
#include "common/job_result.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace kb {
namespace {

JobResult full_result() {
  JobResult r;
  r.problem_id = "L2_017";
  r.preset = "small";
  r.dims = {{"N", 2}, {"C_in", 3}, {"H", 17}};
  r.device_kind = "cuda";
  r.status = JobStatus::kMismatch;
  r.message = "3 of 969 outputs outside tolerance; first at index 12";
  r.correctness_trials = 4;
  r.errors = {.max_abs_error = 0.125, .max_rel_error = 0.5, .mismatches = 3,
              .first_mismatch_index = 12, .non_finite = 1};
  r.custom_kernels = {"kb::conv_kernel<128>", "kb::norm_kernel"};
  r.reference.samples_ms = {2.0, 2.5, 1.5};
  r.reference.summary = summarize(r.reference.samples_ms);
  r.custom.samples_ms = {1.0, 1.25};
  r.custom.summary = summarize(r.custom.samples_ms);
  r.rounds = 11;
  r.stop_reason = "converged";
  r.speedup = {.speedup = 1.8, .ci_low = 1.75, .ci_high = 1.85, .relative_half_width = 0.028};
  r.flops = 1.5e9;
  r.min_bytes = 2.5e6;
  r.custom_tflops = 1.4;
  r.custom_gbps = 2.3;
  r.floor_ms = 0.01;
  r.custom_over_floor = 112.5;
  r.reference_over_floor = 200;
  r.hard_floor_ms = 0.004;
  r.custom_over_hard_floor = 281.25;
  r.verified = false;
  r.unverified_reason = "2 correctness trials (the fleet requires >= 3)";
  r.traced_rounds = 9;
  r.environment = {{"gpu", "H200"}, {"clocks", {{"sm_mhz_min", 1980}}}};
  r.overhead_ms = {{"spawn", 3.5}, {"job", 120.0}};
  r.robustness = {{"shift", "small", 2e-5, 3e-2, 0.2, 150, "fragile", ""},
                  {"scale", "small", 0.2, 0.25, 9, 11, "ill_conditioned", "ill-conditioned for scale: ..."}};
  r.robustness_note = "random_affine: no parameter initialized to ones or zeros";
  return r;
}

void expect_same(const SampleSummary& a, const SampleSummary& b) {
  EXPECT_EQ(a.count, b.count);
  EXPECT_DOUBLE_EQ(a.median, b.median);
  EXPECT_DOUBLE_EQ(a.mean, b.mean);
  EXPECT_DOUBLE_EQ(a.stddev, b.stddev);
  EXPECT_DOUBLE_EQ(a.min, b.min);
  EXPECT_DOUBLE_EQ(a.max, b.max);
}

TEST(JobResultJson, FullResultRoundTrips) {
  const JobResult r = full_result();
  // Through text, as kb-executor writes it and the worker reads it.
  const JobResult back = job_result_from_json(nlohmann::json::parse(to_json(r).dump()));

  EXPECT_EQ(back.problem_id, r.problem_id);
  EXPECT_EQ(back.preset, r.preset);
  EXPECT_EQ(back.dims, r.dims);
  EXPECT_EQ(back.device_kind, r.device_kind);
  EXPECT_EQ(back.status, r.status);
  EXPECT_EQ(back.message, r.message);
  EXPECT_EQ(back.correctness_trials, r.correctness_trials);
  EXPECT_DOUBLE_EQ(back.errors.max_abs_error, r.errors.max_abs_error);
  EXPECT_DOUBLE_EQ(back.errors.max_rel_error, r.errors.max_rel_error);
  EXPECT_EQ(back.errors.mismatches, r.errors.mismatches);
  EXPECT_EQ(back.errors.first_mismatch_index, r.errors.first_mismatch_index);
  EXPECT_EQ(back.errors.non_finite, r.errors.non_finite);
  EXPECT_EQ(back.custom_kernels, r.custom_kernels);
  EXPECT_EQ(back.reference.samples_ms, r.reference.samples_ms);
  expect_same(back.reference.summary, r.reference.summary);
  EXPECT_EQ(back.custom.samples_ms, r.custom.samples_ms);
  expect_same(back.custom.summary, r.custom.summary);
  EXPECT_EQ(back.rounds, r.rounds);
  EXPECT_EQ(back.stop_reason, r.stop_reason);
  EXPECT_DOUBLE_EQ(back.speedup.speedup, r.speedup.speedup);
  EXPECT_DOUBLE_EQ(back.speedup.ci_low, r.speedup.ci_low);
  EXPECT_DOUBLE_EQ(back.speedup.ci_high, r.speedup.ci_high);
  EXPECT_DOUBLE_EQ(back.speedup.relative_half_width, r.speedup.relative_half_width);
  EXPECT_DOUBLE_EQ(back.flops, r.flops);
  EXPECT_DOUBLE_EQ(back.min_bytes, r.min_bytes);
  EXPECT_DOUBLE_EQ(back.custom_tflops, r.custom_tflops);
  EXPECT_DOUBLE_EQ(back.custom_gbps, r.custom_gbps);
  EXPECT_DOUBLE_EQ(back.floor_ms, r.floor_ms);
  EXPECT_DOUBLE_EQ(back.custom_over_floor, r.custom_over_floor);
  EXPECT_DOUBLE_EQ(back.reference_over_floor, r.reference_over_floor);
  EXPECT_DOUBLE_EQ(back.hard_floor_ms, r.hard_floor_ms);
  EXPECT_DOUBLE_EQ(back.custom_over_hard_floor, r.custom_over_hard_floor);
  EXPECT_EQ(back.verified, r.verified);
  EXPECT_EQ(back.unverified_reason, r.unverified_reason);
  EXPECT_EQ(back.traced_rounds, r.traced_rounds);
  EXPECT_EQ(back.environment, r.environment);
  EXPECT_EQ(back.overhead_ms, r.overhead_ms);
  ASSERT_EQ(back.robustness.size(), 2u);
  EXPECT_EQ(back.robustness[1].kind, "scale");
  EXPECT_EQ(back.robustness[1].preset, "small");
  EXPECT_DOUBLE_EQ(back.robustness[0].custom_err, 3e-2);
  EXPECT_DOUBLE_EQ(back.robustness[1].ref_excess, 9);
  EXPECT_EQ(back.robustness[0].verdict, "fragile");
  EXPECT_EQ(back.robustness[1].note, r.robustness[1].note);
  EXPECT_EQ(back.robustness_note, r.robustness_note);
  // And nothing is lost that the field list above forgot.
  EXPECT_EQ(to_json(back), to_json(r));
}

TEST(JobResultJson, UnboundedIntervalIsNullAndComesBackInfinite) {
  JobResult r = full_result();
  r.speedup = {.speedup = 2.0, .ci_low = 0, .ci_high = INFINITY, .relative_half_width = INFINITY};
  const nlohmann::json j = to_json(r);
  EXPECT_TRUE(j["speedup"]["ci_high"].is_null());
  EXPECT_TRUE(j["speedup"]["relative_half_width"].is_null());
  // Must be valid JSON text (no "inf").
  const std::string text = j.dump();
  EXPECT_EQ(text.find("inf"), std::string::npos);

  const JobResult back = job_result_from_json(nlohmann::json::parse(text));
  EXPECT_DOUBLE_EQ(back.speedup.speedup, 2.0);
  EXPECT_EQ(back.speedup.ci_low, 0);
  EXPECT_TRUE(std::isinf(back.speedup.ci_high));
  EXPECT_GT(back.speedup.ci_high, 0);
  EXPECT_TRUE(std::isinf(back.speedup.relative_half_width));
}

TEST(JobResultJson, InfiniteRobustnessErrorsAreNull) {
  JobResult r = full_result();
  r.robustness[0].custom_err = r.robustness[0].custom_excess = INFINITY;
  const std::string text = to_json(r).dump();
  EXPECT_EQ(text.find("inf"), std::string::npos);
  const JobResult back = job_result_from_json(nlohmann::json::parse(text));
  EXPECT_TRUE(std::isinf(back.robustness[0].custom_err));
  EXPECT_TRUE(std::isinf(back.robustness[0].custom_excess));
  EXPECT_DOUBLE_EQ(back.robustness[0].ref_err, 2e-5);
}

TEST(JobResultJson, DefaultResultRoundTrips) {
  const JobResult r;
  const JobResult back = job_result_from_json(nlohmann::json::parse(to_json(r).dump()));
  EXPECT_EQ(back.status, JobStatus::kOk);
  EXPECT_EQ(back.errors.first_mismatch_index, -1);
  EXPECT_TRUE(back.reference.samples_ms.empty());
  EXPECT_EQ(to_json(back), to_json(r));
}

TEST(JobResultJson, MissingFieldsTakeTheirDefaults) {
  const JobResult back = job_result_from_json(nlohmann::json{{"problem_id", "L1_003"}, {"status", "timeout"}});
  EXPECT_EQ(back.problem_id, "L1_003");
  EXPECT_EQ(back.status, JobStatus::kTimeout);
  EXPECT_EQ(back.errors.first_mismatch_index, -1);
  EXPECT_EQ(back.rounds, 0);
  EXPECT_EQ(back.speedup.ci_high, 0);
}

TEST(JobStatusName, EveryStatusRoundTrips) {
  const JobStatus all[] = {
      JobStatus::kOk,           JobStatus::kMismatch,       JobStatus::kNonFinite,
      JobStatus::kInputMutated, JobStatus::kNoCustomKernel, JobStatus::kForeignStream,
      JobStatus::kRuntimeError, JobStatus::kNotImplemented, JobStatus::kUnsupported,
      JobStatus::kCrashed,      JobStatus::kTimeout,
  };
  for (JobStatus s : all) {
    const std::string name = to_string(s);
    EXPECT_EQ(job_status_from_string(name), s) << name;
    JobResult r;
    r.status = s;
    EXPECT_EQ(job_result_from_json(to_json(r)).status, s) << name;
  }
}

TEST(JobStatusName, NamesAreTheDocumentedOnes) {
  EXPECT_EQ(to_string(JobStatus::kOk), "ok");
  EXPECT_EQ(to_string(JobStatus::kNonFinite), "non_finite");
  EXPECT_EQ(to_string(JobStatus::kInputMutated), "input_mutated");
  EXPECT_EQ(to_string(JobStatus::kNoCustomKernel), "no_custom_kernel");
  EXPECT_EQ(to_string(JobStatus::kForeignStream), "foreign_stream");
  EXPECT_EQ(to_string(JobStatus::kNotImplemented), "not_implemented");
}

TEST(JobStatusName, UnknownNameIsRuntimeError) {
  EXPECT_EQ(job_status_from_string("exploded"), JobStatus::kRuntimeError);
  EXPECT_EQ(job_status_from_string(""), JobStatus::kRuntimeError);
  EXPECT_EQ(job_status_from_string("OK"), JobStatus::kRuntimeError);
}

}  // namespace
}  // namespace kb
