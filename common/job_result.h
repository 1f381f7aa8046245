// The result of one job (one problem on one device): verdict, errors, timing, environment.
// Produced by the executor, written as JSON (to_json / from_json) by kb-executor, read by the
// worker, the local runner and the coordinator.
//
// Thread safety: plain values.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common/statistics.h"

namespace kb {

enum class JobStatus {
  kOk,
  kMismatch,          // custom differs from reference beyond atol + rtol*|ref|
  kNonFinite,         // custom non-finite where the reference is finite
  kInputMutated,      // custom wrote into an input or parameter
  kNoCustomKernel,    // custom launched no kernel of its own (only cuDNN/cuBLAS or nothing)
  kForeignStream,     // custom did work on a stream other than the job's, or after its call ended
  kLibraryDominated,  // library kernels (cuDNN, cuBLAS, our eager ops) carry most of the custom's
                      // GPU time
  kImplausible,       // custom median below the hard physical floor, or far below its traced work
  kFragile,  // robustness trial: custom error far above the reference's against the golden model
  kRuntimeError,    // a CUDA/cuDNN/cuBLAS error, or the pack reported one
  kNotImplemented,  // the pack has no custom variant for this problem
  kUnsupported,     // the variant cannot handle these shapes
  kCrashed,         // the executor process died (set by the supervisor)
  kTimeout,         // the executor process ran past its deadline (set by the supervisor)
};

// The fleet's verification policy (docs/verification.md): a job with fewer correctness trials,
// or without the launch trace, is `unverified`; the coordinator refuses runs that ask for it.
inline constexpr int kMinVerifiedTrials = 3;
// The least share of timing rounds a verified job traces (kb-executor --trace-fraction).
inline constexpr double kMinTraceFraction = 0.25;

std::string to_string(JobStatus status);
// kRuntimeError for an unknown name.
JobStatus job_status_from_string(const std::string& name);

struct ErrorStats {
  double max_abs_error = 0;
  double max_rel_error = 0;
  int64_t mismatches = 0;
  int64_t first_mismatch_index = -1;
  int64_t non_finite = 0;  // custom non-finite where the reference is finite
};

// One robustness trial (executor/robustness_trials.h): reference and custom on moved inputs or
// parameters, each against the golden model. Errors are maxima over the output; an "excess" is
// max |v - golden| / (atol + rtol |golden|), so > 1 is outside the spec's tolerance. Infinite
// (a non-finite output where the golden model is finite) is written as null in JSON.
struct RobustnessTrial {
  std::string kind;    // "shift", "scale", "centered", "random_affine"
  std::string preset;  // where it ran (executor/robustness_trials.h's RobustnessShape): the
                       // job's own preset or dims when cheap, else the spec's `robust`, else
                       // `small`
  double ref_err = 0, custom_err = 0;
  double ref_excess = 0, custom_excess = 0;
  std::string verdict;  // "pass", "fragile", "ill_conditioned", "marginal"
  std::string note;     // e.g. "ill-conditioned for shift: ..."
};

struct VariantTiming {
  std::vector<double> samples_ms;
  SampleSummary summary;
};

struct JobResult {
  // A result that carries only its job's identity and why it failed (no trials, no timing):
  // what a supervisor, a session or the executor itself reports when the job could not run.
  static JobResult failure(std::string problem_id, std::string preset, std::string device_kind,
                           JobStatus status, std::string message);

  std::string problem_id;
  std::string preset;
  nlohmann::json dims;
  std::string device_kind;  // "cuda" or "cpu"
  JobStatus status = JobStatus::kOk;
  std::string message;

  int correctness_trials = 0;
  ErrorStats errors;  // worst over the trials and the post-timing check
  std::vector<std::string> custom_kernels;  // kernel names launched by the custom call
  std::vector<RobustnessTrial> robustness;  // after timing; empty when none ran
  std::string robustness_note;              // why none ran, when that is not obvious

  VariantTiming reference, custom;
  int rounds = 0;
  std::string stop_reason;
  SpeedupEstimate speedup;

  double flops = 0, min_bytes = 0;
  double custom_tflops = 0, custom_gbps = 0;
  // The fp32 roofline (fp32 FMA peak, measured copy bandwidth): a goal, which tensor cores beat.
  double floor_ms = 0, custom_over_floor = 0, reference_over_floor = 0;
  // The hard physical floor (common/physical_floor.h: nominal peak DRAM bandwidth, 3xTF32
  // tensor-core math): a custom median below it is `implausible`. 0: no floor (CPU device).
  double hard_floor_ms = 0, custom_over_hard_floor = 0;

  // Whether the job ran under the fleet's verification policy (>= 3 correctness trials, launch
  // trace on); `kb bench` labels other results `unverified`, and the fleet refuses such jobs.
  bool verified = true;
  std::string unverified_reason;
  int traced_rounds = 0;  // timing rounds run under the launch trace (their samples may be discarded)

  nlohmann::json environment;  // GPU, clocks, versions, pack
  nlohmann::json overhead_ms;  // spawn, init, pack load, generation, ...
};

nlohmann::json to_json(const JobResult& r);
JobResult job_result_from_json(const nlohmann::json& j);

}  // namespace kb
