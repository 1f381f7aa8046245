// A smooth function on [0, kLast / kInvStep] as a table of cubics in global memory (L1-resident:
// (kLast + 1) x 16 bytes), evaluated with one 16-byte load and 3 FFMA and no MUFU operation.
// The table is made on the host by cubic_table::fit (fit.h), which also evaluates it in the same
// fp32 steps for tests.
//
// Index without a conversion instruction: t = r kInvStep + 1.5 * 2^23 rounds r kInvStep to the
// nearest integer i in t's low mantissa bits (exact for r kInvStep < 2^22), and t - 1.5 * 2^23 is
// i as a float, so x = r - i / kInvStep (exact: kInvStep is a power of 2) lies in [-h/2, h/2].
// Precondition: r in [0, kEnd] (callers clamp; NaN must not reach it).
//
// Thread safety: a read-only view; the table outlives the kernels that read it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace kb::custom::cubic_table {

template <int kInvStep, int kLast>
struct Table {
  static_assert(kInvStep > 0 && (kInvStep & (kInvStep - 1)) == 0, "the step is 1 / a power of 2");
  static_assert(int64_t{kLast} < (int64_t{1} << 22), "r kInvStep must stay below 2^22");
  static constexpr int kSteps = kInvStep, kLastSegment = kLast;  // fit()'s inv_step and last
  static constexpr int kSegments = kLast + 1;
  static constexpr float kEnd = static_cast<float>(kLast) / kInvStep;

  const float4* segments;  // [kSegments] (c0, c1, c2, c3) in x = r - i / kInvStep

  __device__ __forceinline__ float operator()(float r) const {
    const float t = fmaf(r, static_cast<float>(kInvStep), 12582912.0f);
    const float4 c = __ldg(segments + (__float_as_int(t) - 0x4B400000));
    const float x = fmaf(t - 12582912.0f, -1.0f / kInvStep, r);
    return fmaf(fmaf(fmaf(c.w, x, c.z), x, c.y), x, c.x);
  }
};

}  // namespace kb::custom::cubic_table
