// The job-deadline rule, both halves in one place (coordinator and worker).
//
// The coordinator leases a job for `lease_budget` and sends the budget as the JOB's deadline_ms.
// The worker gives its kb-executor child `child_timeout_s(deadline_ms)`, 5 s less, so that a job
// that runs too long ends as a `timeout` result from the worker rather than as a lost lease and a
// retry.
//
// Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace kb {

// The lease deadline for one attempt: max(60 s, 3 x predicted + 2 x time cap + 30 s). With
// job_timeout_s > 0 (the submitter's limit per job) the budget is that limit plus 10 s.
inline std::chrono::milliseconds lease_budget(double predicted_ms, double time_cap_s,
                                              double job_timeout_s = 0) {
  using std::chrono::milliseconds;
  if (job_timeout_s > 0) return milliseconds(static_cast<int64_t>(job_timeout_s * 1000) + 10'000);
  const double ms = 3 * predicted_ms + time_cap_s * 2 * 1000 + 30'000;
  return std::max(milliseconds(60'000), milliseconds(static_cast<int64_t>(ms)));
}

// What the worker's child may take for a JOB with this deadline_ms: the budget less 5 s, at least
// 10 s; 600 s when the JOB carries no deadline (deadline_ms <= 0).
inline double child_timeout_s(int64_t deadline_ms) {
  constexpr double kDeadlineMarginS = 5.0, kMinChildTimeoutS = 10.0, kNoDeadlineTimeoutS = 600.0;
  if (deadline_ms <= 0) return kNoDeadlineTimeoutS;
  return std::max(kMinChildTimeoutS, static_cast<double>(deadline_ms) / 1000.0 - kDeadlineMarginS);
}

}  // namespace kb
