#include "executor/robustness_trials.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "common/shape_sweep.h"

namespace kb {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

// How one variant's element differs from the golden one: (|v - g|, |v - g| / allowed).
std::pair<double, double> element_error(float v, float g, const Tolerance& tol) {
  const double gv = g, vv = v;
  if (!std::isfinite(gv) || !std::isfinite(vv)) {
    const bool same = (std::isnan(gv) && std::isnan(vv)) || gv == vv;
    return same ? std::pair{0.0, 0.0} : std::pair{kInf, kInf};
  }
  const double diff = std::fabs(vv - gv), allowed = tol.atol + tol.rtol * std::fabs(gv);
  return {diff, allowed > 0 ? diff / allowed : (diff > 0 ? kInf : 0.0)};
}

struct TrialRun {
  std::vector<float> reference, custom, golden;
};

// Creates both device slots and the golden model at `inst`; an empty string when all three are
// ready, else why not.
std::string create_variants(ExecutionDevice& device, ExecutionDevice& golden,
                            const ProblemInstance& inst, const JobRequest& request) {
  for (Slot slot : {Slot::kReference, Slot::kCustom}) {
    CreateOutcome c = device.create(slot, device.pack_variant(slot), inst, request.spec_yaml);
    if (c.code != KB_PACK_OK)
      return (slot == Slot::kReference ? "reference: " : "custom: ") + c.message;
  }
  CreateOutcome g = golden.create(Slot::kReference, KB_VARIANT_CPU_GOLDEN, inst, request.spec_yaml);
  if (g.code != KB_PACK_OK) return "golden model: " + g.message;
  return "";
}

// Reference and custom on the device, for one trial's inputs; a failure here is the job's.
Status run_on_device(ExecutionDevice& device, const ProblemInstance& inst, GeneratorKey key,
                     TrialRun& out) {
  KB_TRY(device.generate(0, inst, key));
  KB_TRY(device.run(Slot::kReference, 0));
  KB_TRY(device.poison_output(Slot::kCustom));
  if (Status s = device.run(Slot::kCustom, 0); !s.is_ok())
    return Status::internal("custom: " + s.message());
  KB_TRY(device.synchronize());
  KB_ASSIGN_OR_RETURN(out.reference, device.read_output(Slot::kReference));
  KB_ASSIGN_OR_RETURN(out.custom, device.read_output(Slot::kCustom));
  return Status::ok();
}

// The golden model on the same inputs; a failure here is the harness's, not the job's.
Status run_golden(ExecutionDevice& golden, const ProblemInstance& inst, GeneratorKey key,
                  TrialRun& out) {
  KB_TRY(golden.generate(0, inst, key));
  KB_TRY(golden.run(Slot::kReference, 0));
  KB_ASSIGN_OR_RETURN(out.golden, golden.read_output(Slot::kReference));
  return Status::ok();
}

// `where`: the shape's label (RobustnessShape); `at`: the same for a message.
RobustnessTrial judge_trial(Distribution d, const std::string& where, const std::string& at,
                            const TrialRun& run, const Tolerance& tol) {
  const GoldenErrors ref = errors_against_golden(run.reference, run.golden, tol);
  const GoldenErrors custom = errors_against_golden(run.custom, run.golden, tol);
  RobustnessTrial t{to_string(d),
                    where,
                    ref.max_abs,
                    custom.max_abs,
                    ref.max_excess,
                    custom.max_excess,
                    judge_robustness(ref, custom),
                    ""};
  const std::string errors = "custom max error " + number(custom.max_abs) + " (" +
                             number(custom.max_excess) + "x the tolerance), reference " +
                             number(ref.max_abs) + " (" + number(ref.max_excess) + "x)";
  if (t.verdict == "ill_conditioned") t.note = "ill-conditioned for " + t.kind + ": " + errors;
  if (t.verdict == "marginal") t.note = "marginal for " + t.kind + ": " + errors;
  if (t.verdict == "fragile") t.note = "fragile under " + t.kind + " at " + at + ": " + errors;
  return t;
}

}  // namespace

std::string robustness_preset(const ProblemSpec& spec) {
  return spec.find_preset("robust") ? "robust" : "small";
}

RobustnessShape robustness_shape(const JobRequest& request) {
  const std::shared_ptr<const ProblemSpec>& spec = request.spec;
  Result<ProblemInstance> job = request.preset.empty()
                                    ? ProblemInstance::create(spec, request.dims)
                                    : ProblemInstance::create(spec, request.preset);
  if (!job.is_ok() || job->cost().flops > kRobustJobMaxFlops)
    return {robustness_preset(*spec), true, {}};
  if (!request.preset.empty()) return {request.preset, true, {}};
  return {dims_argument(*spec, job->dims()), false, job->dims()};
}

GoldenErrors errors_against_golden(const std::vector<float>& out, const std::vector<float>& golden,
                                   const Tolerance& tolerance) {
  GoldenErrors e;
  if (out.size() != golden.size()) return {kInf, kInf};
  for (size_t i = 0; i < out.size(); ++i) {
    const auto [abs_err, excess] = element_error(out[i], golden[i], tolerance);
    e.max_abs = std::max(e.max_abs, abs_err);
    e.max_excess = std::max(e.max_excess, excess);
  }
  return e;
}

std::string judge_robustness(const GoldenErrors& reference, const GoldenErrors& custom) {
  if (custom.max_excess <= 1) return "pass";
  if (custom.max_excess > kFragileFactor * reference.max_excess) return "fragile";
  return reference.max_excess > 1 ? "ill_conditioned" : "marginal";
}

std::vector<Distribution> robustness_kinds(const ProblemSpec& spec) {
  const bool has_affine = std::any_of(
      spec.params.begin(), spec.params.end(),
      [](const ParamDecl& p) { return p.init == ParamInit::kOnes || p.init == ParamInit::kZeros; });
  std::vector<Distribution> kinds;
  for (Distribution d : robustness_distributions()) {
    const bool skipped = std::find(spec.robustness_skip.begin(), spec.robustness_skip.end(), d) !=
                         spec.robustness_skip.end();
    if (!skipped && (d != Distribution::kRandomAffine || has_affine)) kinds.push_back(d);
  }
  return kinds;
}

void run_robustness_trials(ExecutionDevice& device, ExecutionDevice& golden,
                           const JobRequest& request, JobResult& result) {
  const std::vector<Distribution> kinds = robustness_kinds(*request.spec);
  if (kinds.empty())
    return (void)(result.robustness_note = "no robustness kind applies (robustness.skip)");
  const RobustnessShape where = robustness_shape(request);
  const std::string at = where.is_preset ? "the " + where.label + " preset" : where.label;
  Result<ProblemInstance> inst = where.is_preset
                                     ? ProblemInstance::create(request.spec, where.label)
                                     : ProblemInstance::create(request.spec, where.dims);
  if (!inst.is_ok()) return (void)(result.robustness_note = inst.status().message());
  if (std::string why = create_variants(device, golden, inst.value(), request); !why.empty()) {
    return (void)(result.robustness_note = "not run at " + at + ": " + why);
  }
  for (size_t k = 0; k < kinds.size(); ++k) {
    const GeneratorKey key{request.seed, kRobustTrialBase + static_cast<uint32_t>(k), kinds[k]};
    TrialRun run;
    if (Status s = run_on_device(device, inst.value(), key, run); !s.is_ok()) {
      result.status = JobStatus::kRuntimeError;
      result.message = "robustness trial " + to_string(kinds[k]) + ": " + s.message();
      return;
    }
    if (Status s = run_golden(golden, inst.value(), key, run); !s.is_ok()) {
      result.robustness_note = to_string(kinds[k]) + ": golden model: " + s.message();
      continue;
    }
    result.robustness.push_back(
        judge_trial(kinds[k], where.label, at, run, request.spec->tolerance));
    if (result.robustness.back().verdict == "fragile" && result.status == JobStatus::kOk) {
      result.status = JobStatus::kFragile;
      result.message = result.robustness.back().note;
    }
  }
}

void run_robustness_trials(ExecutionDevice& device, const JobRequest& request, JobResult& result) {
  if (result.status != JobStatus::kOk || request.config.aa) return;
  std::unique_ptr<ExecutionDevice> golden = device.make_golden_device();
  if (!golden)
    return (void)(result.robustness_note = "no golden model on a " + device.kind() + " device");
  run_robustness_trials(device, *golden, request, result);
}

}  // namespace kb
