// The problem lint's statistics: how strong a problem's correctness check is, measured on its
// reference. One implementation for both places it runs: `kb problems lint` on the CPU (the
// golden model) and `kb-executor --lint` (the trusted reference pack on the GPU, at the full
// preset); neither links CUDA here, the caller supplies the reference as a function on host
// tensors.
//
// For one problem instance, the reference runs on the spec's inputs at a few seeds, and the lint
// reports
//   - the share of outputs within atol of zero, the output range and the per-seed std;
//   - which inputs and parameters change the output (robust-kbench's sensitivity filter): each
//     tensor alone is redrawn (a constant-initialized parameter gets non-trivial values) and the
//     output compared with the tolerance, so "insensitive" means a kernel that ignores it passes;
//   - whether an all-zero output, a constant output, the reference rounded to TF32 or to fp16,
//     or the reference computed from TF32-rounded operands would pass the tolerance
//     (KernelBench issue #165: zeros pass allclose on several problems);
// and turns what it finds into findings with a severity.
//
// The report travels between the executor and `kb` as JSON (to_json / lint_report_from_json).
// Renderings for a terminal and for docs/problem-quality.md are cli/problem_lint_report.h's.
//
// Thread safety: pure functions of their arguments (and of what `reference` does).
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "common/host_tensor.h"
#include "common/problem_spec.h"
#include "common/status.h"

namespace kb {

enum class Severity { kInfo, kLow, kMedium, kHigh };
const char* severity_name(Severity severity);

struct LintFinding {
  Severity severity = Severity::kInfo;
  std::string message;
};

// Would this stand-in for the output pass the problem's tolerance at every seed?
struct CheatResult {
  std::string name;        // "zeros", "constant", "tf32 output", "fp16 output", "tf32 operands"
  double worst_ratio = 0;  // max over elements and seeds of |c - r| / (atol + rtol |r|)
  bool passes() const { return worst_ratio <= 1; }
};

struct Sensitivity {
  std::string tensor;
  bool is_param = false;
  bool constant_init = false;  // ones/zeros: the same values at every seed
  double changed_share = 0;    // outputs outside the tolerance after redrawing this tensor alone
};

struct LintReport {
  std::string id;
  Dims dims;
  int seeds = 0;
  int64_t elements = 0;
  double near_zero_share = 0;  // |y| <= atol, over all seeds
  double min = 0, max = 0;
  double seed_std_min = 0;  // the smallest per-seed std (one-element output: across seeds)
  std::vector<CheatResult> cheats;
  std::vector<Sensitivity> sensitivity;
  std::vector<LintFinding> findings;
  Severity worst() const;
};

// The reference's output for these inputs and parameters: doubles (the golden model) or the fp32
// values a device reads back, which the lint reads as doubles (exactly) without a widened copy.
// A reference that cannot run (a device error) throws; lint_problem lets it through to its
// caller.
using ReferenceOutput = std::variant<HostTensor<double>, HostTensor<float>>;
using ReferenceFn = std::function<ReferenceOutput(const ProblemInstance&, const TensorSet&)>;

// `seeds` >= 2: the constant stand-in is the first seed's mean, so one seed would let it match a
// one-element output exactly. Calls `reference` seeds + (inputs + parameters) + 1 times, from
// the calling thread; the loops over the elements run on parallel_threads() threads
// (common/parallel_for.h), and the report is the same bit for bit at every thread count.
LintReport lint_problem(const ProblemInstance& problem, const ReferenceFn& reference, int seeds);

// Rounds to the nearest TF32 (10 mantissa bits, fp32 range) / fp16 (10 bits, fp16 range) value.
float round_to_tf32(float value);
float round_to_fp16(float value);

// Every field, findings included; read back exactly (doubles as JSON numbers, infinity as null
// would lose it, so non-finite values are written as strings).
nlohmann::json to_json(const LintReport& report);
Result<LintReport> lint_report_from_json(const nlohmann::json& json);

}  // namespace kb
