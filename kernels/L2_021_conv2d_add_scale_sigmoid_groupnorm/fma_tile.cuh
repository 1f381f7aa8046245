// L2_021's FMA tile (custom.cu's design, "S task"): conv_kernel computes a sample's two output
// rows of all channels per task in fp32 FMA from shared memory, stores the sigmoid output and
// writes the task's group sums; custom.cu folds them and normalizes in place (normalize.cuh).
// Thread safety: stateless device code.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/activation.cuh"
#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/geometry.cuh"
#include "kernels/cores/block_reduce.cuh"

namespace kb::custom::L2_021 {

// ---- Fast path: shared memory ----

struct SmemLayout {  // dynamic shared memory, in this order
  double2* chan;     // [C_out] (sum g, sum g^2) of the current S task
  float4* w;         // [C_in][3][3][quads]: the quad's 4 output channels, zero past C_out
  float4* epi;       // [quads][3]: conv bias, bias, scale of the quad's channels
  float* x;          // [C_in][kInRows][row_pad]
};

__host__ __device__ inline size_t smem_bytes(const Geometry& g) {
  return sizeof(double2) * g.c_out + sizeof(float4) * (g.c_in * 9 + 3) * g.quads +
         sizeof(float) * g.c_in * kInRows * g.row_pad;
}

__device__ SmemLayout carve(unsigned char* base, const Geometry& g) {
  SmemLayout s;
  s.chan = reinterpret_cast<double2*>(base);
  s.w = reinterpret_cast<float4*>(s.chan + g.c_out);
  s.epi = s.w + g.c_in * 9 * g.quads;
  s.x = reinterpret_cast<float*>(s.epi + 3 * g.quads);
  return s;
}

__device__ void stage_parameters(const Buffers& b, const Geometry& g, const SmemLayout& s) {
  for (int64_t e = threadIdx.x; e < g.c_in * 9 * g.quads; e += kThreads) {
    const int64_t cq = e % g.quads, tap = (e / g.quads) % 9, c = e / (9 * g.quads);
    float v[kQuad];
    for (int r = 0; r < kQuad; ++r) {
      const int64_t o = kQuad * cq + r;
      v[r] = o < g.c_out ? b.w[(o * g.c_in + c) * 9 + tap] : 0.0f;
    }
    s.w[e] = make_float4(v[0], v[1], v[2], v[3]);
  }
  for (int64_t e = threadIdx.x; e < 3 * g.quads; e += kThreads) {
    const int64_t cq = e / 3, which = e % 3;
    const float* src = which == 0 ? b.b_conv : which == 1 ? b.bias : b.scale;
    float v[kQuad];
    for (int r = 0; r < kQuad; ++r) {
      const int64_t o = kQuad * cq + r;
      v[r] = o < g.c_out ? src[o] : 0.0f;
    }
    s.epi[cq * 3 + which] = make_float4(v[0], v[1], v[2], v[3]);
  }
}

// x rows r0 .. r0 + 3 of sample n into s.x, zero past H and W.
__device__ void stage_input(const Buffers& b, const Geometry& g, const SmemLayout& s, int64_t n,
                            int64_t r0) {
  const int64_t row_len = g.row_pad, total = g.c_in * kInRows * row_len;
  for (int64_t e = threadIdx.x; e < total; e += kThreads) {
    const int64_t col = e % row_len, r = (e / row_len) % kInRows, c = e / (row_len * kInRows);
    const bool ok = col < g.w && r0 + r < g.h;
    s.x[e] = ok ? __ldg(b.x + ((n * g.c_in + c) * g.h + r0 + r) * g.w + col) : 0.0f;
  }
}

constexpr int kStageBatch =
    9;  // float4 loads in flight per thread (full preset: 2112 = 9 x 256 - 192)

// stage_input with 16-byte loads (W % 4 == 0, x 16-byte aligned): one round trip of latency.
__device__ void stage_input_vec(const Buffers& b, const Geometry& g, const SmemLayout& s, int64_t n,
                                int64_t r0) {
  const int row4 = static_cast<int>(g.row_pad / 4), w4 = static_cast<int>(g.w / 4);
  const int total = static_cast<int>(g.c_in) * kInRows * row4;
  float4* dst = reinterpret_cast<float4*>(s.x);  // [C_in][kInRows][row4]
  for (int base = threadIdx.x; base < total; base += kThreads * kStageBatch) {
    float4 v[kStageBatch];
#pragma unroll
    for (int j = 0; j < kStageBatch; ++j) {
      const int e = base + j * kThreads, col4 = e % row4, cr = e / row4;  // cr = c * kInRows + r
      const int64_t row = r0 + cr % kInRows;
      const bool ok = e < total && col4 < w4 && row < g.h;
      v[j] = ok ? __ldg(reinterpret_cast<const float4*>(
                            b.x + ((n * g.c_in + cr / kInRows) * g.h + row) * g.w) +
                        col4)
                : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
#pragma unroll
    for (int j = 0; j < kStageBatch; ++j)
      if (base + j * kThreads < total) dst[base + j * kThreads] = v[j];
  }
}

// ---- Fast path: S task ----

__device__ __forceinline__ void load_row(const float* src, float (&v)[kCols + 2]) {
  const float4 a = *reinterpret_cast<const float4*>(src);
  const float4 c = *reinterpret_cast<const float4*>(src + 4);
  const float2 d = *reinterpret_cast<const float2*>(src + 8);
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = c.x, v[5] = c.y, v[6] = c.z, v[7] = c.w;
  v[8] = d.x, v[9] = d.y;
}

__device__ __forceinline__ float lane_of(const float4& v, int r) {
  return r == 0 ? v.x : r == 1 ? v.y : r == 2 ? v.z : v.w;
}

// acc[i][q][j] = conv of output row r0 + i, channel 4 cq + q, column 8 cg + j (no bias).
__device__ void conv_block(const Geometry& g, const SmemLayout& s, int cq, int cg,
                           float (&acc)[kTileRows][kQuad][kCols]) {
  const int quads = static_cast<int>(g.quads), row_pad = static_cast<int>(g.row_pad);
  const float4* wp = s.w + cq;         // [c][kh][kw] step quads
  const float* xp = s.x + kCols * cg;  // [c][r] step row_pad
#pragma unroll 1
  for (int c = 0; c < static_cast<int>(g.c_in); ++c, wp += 9 * quads, xp += kInRows * row_pad) {
#pragma unroll
    for (int r = 0; r < kInRows; ++r) {
      float v[kCols + 2];
      load_row(xp + r * row_pad, v);
#pragma unroll
      for (int kh = 0; kh < 3; ++kh) {
        const int i = r - kh;  // output row fed by input row r through kernel row kh
        if (i < 0 || i >= kTileRows) continue;
#pragma unroll
        for (int kw = 0; kw < 3; ++kw) {
          const float4 wq = wp[(kh * 3 + kw) * quads];
#pragma unroll
          for (int q = 0; q < kQuad; ++q)
#pragma unroll
            for (int j = 0; j < kCols; ++j)
              acc[i][q][j] = fmaf(lane_of(wq, q), v[j + kw], acc[i][q][j]);
        }
      }
    }
  }
}

// Sums of a warp into s.chan[o] (double, shared atomics); lane values must be warp-wide.
// s1, s2: a lane's sums of g - pilot and (g - pilot)^2 over n values (pilot warp-uniform); the
// raw sums of g and g^2 are formed in double from the warp's totals.
__device__ __forceinline__ void warp_sum_into(double2* dst, float s1, float s2, float n,
                                              float pilot) {
  const float3 t = cores::warp_sum(make_float3(s1, s2, n));  // (s1, s2, n) of the warp
  if (threadIdx.x % kWarp == 0) {
    const double p = pilot, d1 = t.x;
    atomicAdd(&dst->x, fma(t.z, p, d1));
    atomicAdd(&dst->y, fma(t.z * p, p, fma(2.0 * p, d1, static_cast<double>(t.y))));
  }
}

// A value near channel q's outputs, the same in every lane: lane 0's first output, by fast
// intrinsics (any value near the data serves; the sums about it are exact in form).
__device__ __forceinline__ float warp_pilot(float acc0, float conv_bias, float bias, float scale) {
  const float t = (acc0 + conv_bias + bias) * scale;
  return __shfl_sync(0xffffffffu, __fdividef(1.0f, 1.0f + __expf(-t)), 0);
}

// One thread slot: activation, pre-norm store and sums of its 2 x 4 x 8 outputs.
__device__ void slot_epilogue(const Buffers& b, const Geometry& g, const SmemLayout& s, int64_t n,
                              int64_t r0, int64_t cq, int64_t cg,
                              float (&acc)[kTileRows][kQuad][kCols]) {
  const float4 bc = s.epi[cq * 3], bi = s.epi[cq * 3 + 1], ns = s.epi[cq * 3 + 2];
  const int64_t col0 = kCols * cg;
  // cq is warp-uniform (col_groups_pad % 32 == 0). One group for the quad: fold it, one pilot.
  const int64_t o0 = kQuad * cq;
  const bool fold = o0 / g.cpg == (o0 + kQuad - 1) / g.cpg && o0 + kQuad <= g.c_out;
  float pilot[kQuad];
#pragma unroll
  for (int q = 0; q < kQuad; ++q) {  // constant indices only: acc stays in registers
    pilot[q] = warp_pilot(acc[0][q][0], lane_of(bc, q), lane_of(bi, q), lane_of(ns, q));
    if (fold) pilot[q] = pilot[0];
  }
  // In-range outputs of one channel of this slot (a channel past C_out is never summed).
  const int64_t rows_in = g.ho - r0 < kTileRows ? g.ho - r0 : kTileRows;
  const int64_t cols_in = g.wo - col0 < kCols ? (g.wo > col0 ? g.wo - col0 : 0) : kCols;
  const float count = static_cast<float>(rows_in * cols_in);
  float s1[kQuad], s2[kQuad];
#pragma unroll
  for (int q = 0; q < kQuad; ++q) {
    const int64_t o = kQuad * cq + q;
    s1[q] = s2[q] = 0.0f;
#pragma unroll
    for (int i = 0; i < kTileRows; ++i) {
      const bool row_ok = r0 + i < g.ho && o < g.c_out;
      float* dst = b.out + ((n * g.c_out + o) * g.ho + r0 + i) * g.wo + col0;
#pragma unroll
      for (int j = 0; j < kCols; j += 2) {
        const bool ok0 = row_ok && col0 + j < g.wo, ok1 = row_ok && col0 + j + 1 < g.wo;
        const float a0 = activation(acc[i][q][j] + lane_of(bc, q), lane_of(bi, q), lane_of(ns, q));
        const float a1 =
            activation(acc[i][q][j + 1] + lane_of(bc, q), lane_of(bi, q), lane_of(ns, q));
        if (g.wo % 2 == 0 && ok1) {  // rows start 8-byte aligned
          *reinterpret_cast<float2*>(dst + j) = make_float2(a0, a1);
        } else {
          if (ok0) dst[j] = a0;
          if (ok1) dst[j + 1] = a1;
        }
        const float v0 = ok0 ? a0 - pilot[q] : 0.0f, v1 = ok1 ? a1 - pilot[q] : 0.0f;
        s1[q] += v0 + v1;
        s2[q] = fmaf(v0, v0, fmaf(v1, v1, s2[q]));
      }
    }
  }
  if (fold) {
    warp_sum_into(&s.chan[o0], (s1[0] + s1[1]) + (s1[2] + s1[3]), (s2[0] + s2[1]) + (s2[2] + s2[3]),
                  kQuad * count, pilot[0]);
  } else {
#pragma unroll
    for (int q = 0; q < kQuad; ++q)
      if (o0 + q < g.c_out) warp_sum_into(&s.chan[o0 + q], s1[q], s2[q], count, pilot[q]);
  }
}

// Task `task` of sample n: pre-norm rows 2 task, 2 task + 1 into `out`, group sums to
// b.partials[n][task][*].
__device__ void stats_task(const Buffers& b, const Geometry& g, const SmemLayout& s, int64_t n,
                           int64_t task) {
  const int64_t r0 = task * kTileRows;
  if (g.w % 4 == 0 && reinterpret_cast<uintptr_t>(b.x) % 16 == 0) {
    stage_input_vec(b, g, s, n, r0);
  } else {
    stage_input(b, g, s, n, r0);
  }
  for (int64_t o = threadIdx.x; o < g.c_out; o += kThreads) s.chan[o] = make_double2(0.0, 0.0);
  __syncthreads();
  for (int64_t slot = threadIdx.x; slot < g.quads * g.col_groups_pad; slot += kThreads) {
    const int64_t cq = slot / g.col_groups_pad, cg = slot % g.col_groups_pad;
    float acc[kTileRows][kQuad][kCols] = {};
    // Padded slots (cg >= col_groups) compute any in-range tile and store nothing.
    conv_block(g, s, static_cast<int>(cq), static_cast<int>(cg < g.col_groups ? cg : 0), acc);
    slot_epilogue(b, g, s, n, r0, cq, cg < g.col_groups ? cg : g.wo, acc);
  }
  __syncthreads();
  // Group sums: a folded quad sits in its first channel's slot, so add every channel's slot.
  for (int64_t k = threadIdx.x; k < g.groups; k += kThreads) {
    double2 sum = make_double2(0.0, 0.0);
    for (int64_t o = k * g.cpg; o < (k + 1) * g.cpg; ++o) {
      sum.x += s.chan[o].x;
      sum.y += s.chan[o].y;
    }
    b.partials[(n * g.s_tasks + task) * g.groups + k] = sum;
  }
  __syncthreads();  // s.x and s.chan are rewritten by the next task
}

// Persistent: stages the weights once, then runs conv tasks (n, task) in grid-stride order.
__global__ void __launch_bounds__(kThreads, 2) conv_kernel(Buffers b, Geometry g) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const SmemLayout s = carve(smem_raw, g);
  stage_parameters(b, g, s);  // the first task's barrier orders it before any use
  for (int64_t t = blockIdx.x; t < g.batch * g.s_tasks; t += gridDim.x)
    stats_task(b, g, s, t / g.s_tasks, t % g.s_tasks);
}

}  // namespace kb::custom::L2_021
