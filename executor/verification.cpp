#include "executor/verification.h"

#include <algorithm>
#include <cmath>

namespace kb {

ErrorStats compare_outputs(const float* reference, const float* custom, int64_t n,
                           const Tolerance& tolerance) {
  ErrorStats e;
  for (int64_t i = 0; i < n; ++i) {
    const double r = reference[i], c = custom[i];
    bool bad = false;
    if (!std::isfinite(r)) {
      bad = !(std::isnan(r) ? std::isnan(c) : c == r);
    } else if (!std::isfinite(c)) {
      ++e.non_finite;
      bad = true;
    } else {
      const double abs_err = std::fabs(c - r);
      e.max_abs_error = std::max(e.max_abs_error, abs_err);
      if (r != 0) e.max_rel_error = std::max(e.max_rel_error, abs_err / std::fabs(r));
      bad = abs_err > tolerance.atol + tolerance.rtol * std::fabs(r);
    }
    if (bad) {
      if (e.mismatches == 0) e.first_mismatch_index = i;
      ++e.mismatches;
    }
  }
  return e;
}

void merge_errors(ErrorStats& worst, const ErrorStats& next) {
  worst.max_abs_error = std::max(worst.max_abs_error, next.max_abs_error);
  worst.max_rel_error = std::max(worst.max_rel_error, next.max_rel_error);
  if (worst.mismatches == 0 && next.mismatches > 0)
    worst.first_mismatch_index = next.first_mismatch_index;
  worst.mismatches += next.mismatches;
  worst.non_finite += next.non_finite;
}

JobStatus verdict_of(const ErrorStats& errors) {
  if (errors.non_finite > 0) return JobStatus::kNonFinite;
  if (errors.mismatches > 0) return JobStatus::kMismatch;
  return JobStatus::kOk;
}

}  // namespace kb
