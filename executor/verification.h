// Output verification: the custom output against the reference output, elementwise,
// |c - r| <= atol + rtol * |r|. A non-finite custom value where the reference is finite fails
// (non_finite); where the reference is itself non-finite, the custom value must be the same
// (NaN for NaN, the same infinity).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "common/job_result.h"
#include "common/problem_spec.h"

namespace kb {

ErrorStats compare_outputs(const float* reference, const float* custom, int64_t n,
                           const Tolerance& tolerance);

// Folds one comparison into the worst seen so far (first mismatch index: the earliest trial's).
void merge_errors(ErrorStats& worst, const ErrorStats& next);

// kNonFinite, kMismatch or kOk.
JobStatus verdict_of(const ErrorStats& errors);

}  // namespace kb
