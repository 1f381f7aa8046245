// `kb-executor --lint`: the problem lint (common/problem_lint.h) with the device's reference slot
// as the reference, so that `kb problems lint --device cuda` measures the trusted reference pack
// on the GPU at the full preset while `kb` itself links no CUDA.
//
// The lint's statistics stay in common/problem_lint.cpp; this only produces the outputs: each
// call uploads the host tensors the lint made to input set 0, runs the reference slot and reads
// the output back as double.
//
// Thread safety: one thread (the device's).
#pragma once

#include <string>

#include "common/problem_lint.h"
#include "executor/execution_device.h"

namespace kb {

// Creates the reference slot for `problem` and runs the lint at `seeds` seeds on it.
Result<LintReport> lint_reference(ExecutionDevice& device, const ProblemInstance& problem,
                                  const std::string& spec_yaml, int seeds);

}  // namespace kb
