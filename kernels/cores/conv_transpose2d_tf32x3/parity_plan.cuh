// The sub-pixel ("parity") form of a 2-D transposed convolution as one implicit GEMM per output
// phase class, and every index map of the 3xTF32 kernel in parity_gemm.cuh. Included by the
// custom.cu of L2_091 and L2_093 (through parity_gemm.cuh); the GEMM these maps form is emulated
// on the host against the definition by tests/host_cuda/parity_gemm2d_test.cu.
//
// Math, per axis (stride s, padding p, dilation d, kernel K): write o + p = q*s + r (phase
// r < s). Output o receives tap t from input i = (o + p - t*d) / s when s divides it; the tap
// with t*d = j*s + r lands on phase r at input i = q - j. With at most kTaps offsets j per axis
// (J = floor((K - 1) d / s) + 1 <= 2), output (n, co, q_h*s_h + r_h - p_h, q_w*s_w + r_w - p_w) is
//   b[co] + sum_{ci, jh, jw} x[n, ci, q_h - jh, q_w - jw] * w[ci, co, tap_h(r_h, jh), tap_w(r_w,
//   jw)]
// with inputs outside x and missing taps (weight 0) contributing nothing. So
//   A (M x K): m = (n, q_h, q_w) over every q that reaches the output in some phase,
//              k = (ci, jh, jw) = 4 ci + 2 jh + jw; the SAME A for every phase class;
//   B_c (K x C_out): one per class c = (r_h, r_w), packed per call (weights are call inputs).
// Positions (q, r) that fall outside the output (the q range is the union over phases) are
// computed and not stored: at the full presets 1.6% (L2_091) and 0% (L2_093) extra work.
//
// Tiles: CTA tile 128 (m) x 128 (n) x 32 (k = 8 channels x 4 taps), 8 warps as 2 (m) x 4 (n),
// warp tile 64 x 32. Shared layouts (floats; every map below is checked by static_asserts):
//   A stage [32 k][128 m]: 16-byte chunks XOR-swizzled by k; a thread's MMA rows of one k are the
//     8 consecutive m 64 warp_m + 8 g + (2 mt + h) (m-tile mt, row half h): two LDS.128;
//   B stage [32 k][128 n]: the L1_003 layout (logical column g of n-tile nt = physical 4 g + nt);
//   C tile  [128 n][128 m] after the main loop, chunks swizzled by n, for the epilogue.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace kb::custom::parity_gemm {

constexpr int kTaps = 2;                                  // offsets j per axis and phase (J)
constexpr int kMaxStride = 4;                             // phases per axis the tap tables hold
constexpr int kTile = 128;                                // CTA tile, both m and n
constexpr int kBK = 32;                                   // k per pipeline stage
constexpr int kChannelsPerStage = kBK / (kTaps * kTaps);  // 8
constexpr int kThreads = 256;
constexpr int kWarpsM = 2;
constexpr int kWarpsN = 4;
constexpr int kWarpTileM = kTile / kWarpsM;           // 64
constexpr int kWarpTileN = kTile / kWarpsN;           // 32
constexpr int kACopies = kTile * kBK / kThreads;      // 16 four-byte copies per thread and stage
constexpr int kBCopies = kBK * kTile / 4 / kThreads;  // 4 sixteen-byte copies
static_assert(kWarpsM * kWarpsN * 32 == kThreads, "one warp per warp tile");
static_assert(kThreads == 2 * kTile && kACopies == 2 * kChannelsPerStage,
              "A copies: thread tid owns row m = tid % 128, tap column jw = tid / 128, both jh");

// ---- the plan (host-built, passed to the kernels by value) ----

struct AxisPlan {
  int stride = 1, pad = 0, in = 1, out = 1;
  int q_lo = 0, q_count = 1;        // q in [q_lo, q_lo + q_count) reaches the output
  int tap[kMaxStride][kTaps] = {};  // kernel index of (phase r, offset j), -1: no such tap
};

struct ParityPlan {
  AxisPlan h, w;
  int batch = 0, c_in = 0, c_out = 0, k_h = 0, k_w = 0;
  int classes = 0;  // s_h * s_w
  int k_tiles = 0;  // ceil(C_in / 8); packed B has k_tiles * 32 rows per class
  int n_tiles = 0;  // ceil(C_out / 128); packed B rows are n_tiles * 128 wide
  int m_total = 0;  // batch * q_count_h * q_count_w
  int m_tiles = 0;
  __host__ __device__ int k_pad() const { return k_tiles * kBK; }
  __host__ __device__ int n_pad() const { return n_tiles * kTile; }
  __host__ __device__ int64_t in_plane() const { return int64_t{h.in} * w.in; }
  __host__ __device__ int64_t out_plane() const { return int64_t{h.out} * w.out; }
  __host__ __device__ int64_t blocks() const { return int64_t{m_tiles} * n_tiles * classes; }
};

// What one CTA computes: class (r_h, r_w), channels n0.., pixels m0..; blockIdx runs class
// fastest so that the 4 classes of a tile (complementary halves of the same output sectors, the
// same A) are resident together.
struct Tile {
  int cls, rh, rw, n0, m0;
};
__host__ __device__ inline Tile tile_of(const ParityPlan& p, int block) {
  Tile t;
  t.cls = block % p.classes;
  const int rest = block / p.classes;
  t.n0 = rest % p.n_tiles * kTile;
  t.m0 = rest / p.n_tiles * kTile;
  t.rh = t.cls / p.w.stride;
  t.rw = t.cls % p.w.stride;
  return t;
}

struct Pixel {
  int n, qh, qw;  // q in absolute units (input index of offset j = 0)
};
__host__ __device__ inline Pixel pixel_of(const ParityPlan& p, int m) {
  const int per_image = p.h.q_count * p.w.q_count;
  const int rest = m % per_image;
  return {m / per_image, p.h.q_lo + rest / p.w.q_count, p.w.q_lo + rest % p.w.q_count};
}

// ---- packed B: b[cls][k][n], k = 4 ci + 2 jh + jw, zero past C_in, C_out and missing taps ----

// The weight index (w: (C_in, C_out, K_h, K_w)) of packed element (cls, k, n), or -1 for a zero.
__host__ __device__ inline int64_t packed_weight_source(const ParityPlan& p, int cls, int k,
                                                        int n) {
  const int ci = k / (kTaps * kTaps), jh = k / kTaps % kTaps, jw = k % kTaps;
  const int th = p.h.tap[cls / p.w.stride][jh], tw = p.w.tap[cls % p.w.stride][jw];
  if (ci >= p.c_in || n >= p.c_out || th < 0 || tw < 0) return -1;
  return ((int64_t{ci} * p.c_out + n) * p.k_h + th) * p.k_w + tw;
}

// ---- A copies: thread tid copies (k = tid / 128 + 2 j, m = tid % 128), j < 16, per stage ----

struct ASource {
  int64_t image;   // x index of (n, 0, 0, 0) of the thread's pixel
  int off[kTaps];  // ih * W + iw of offset jh (jw = tid / 128 fixed)
  uint32_t ok;     // bit jh: the pixel is in M and (ih, iw) inside x
};
__host__ __device__ inline ASource a_source(const ParityPlan& p, const Tile& t, int tid) {
  const int m = t.m0 + tid % kTile, jw = tid / kTile;
  ASource s{0, {0, 0}, 0u};
  if (m >= p.m_total) return s;
  const Pixel px = pixel_of(p, m);
  s.image = int64_t{px.n} * p.c_in * p.in_plane();
  const int iw = px.qw - jw;
  for (int jh = 0; jh < kTaps; ++jh) {
    const int ih = px.qh - jh;
    if (ih < 0 || ih >= p.h.in || iw < 0 || iw >= p.w.in) continue;
    s.off[jh] = ih * p.w.in + iw;
    s.ok |= 1u << jh;
  }
  return s;
}
// Copy j of k-tile kt: channel 8 kt + j / 2, offset jh = j % 2. The x index, or -1 (zero fill).
__host__ __device__ inline int64_t a_copy_source(const ParityPlan& p, const ASource& s, int kt,
                                                 int j) {
  const int ci = kt * kChannelsPerStage + j / 2;
  if (!((s.ok >> (j % 2)) & 1u) || ci >= p.c_in) return -1;
  return s.image + ci * p.in_plane() + s.off[j % 2];
}

// ---- shared-memory layouts ----

// A(k, m): chunk (m / 4) ^ swz(t), t = (k / 2) % 4 the MMA's lane-in-quad: {0, 1, 4, 5}.
__host__ __device__ constexpr int quad_swizzle(int t) {
  return (t & 1) | ((t & 2) << 1);
}
__host__ __device__ constexpr int a_smem_index(int k, int m) {
  return k * kTile + (m ^ (4 * quad_swizzle((k >> 1) & 3)));
}
// B(k, n), as L1_003: chunk (n / 4) ^ 2 ((k / 2) % 4).
__host__ __device__ constexpr int b_smem_index(int k, int n) {
  return k * kTile + (((n >> 2) ^ (((k >> 1) & 3) << 1)) << 2) + (n & 3);
}
// C(n, m) after the main loop: chunk (m / 4) ^ swz((n / 8) % 4).
__host__ __device__ constexpr int c_smem_index(int n, int m) {
  return n * kTile + (m ^ (4 * quad_swizzle((n >> 3) & 3)));
}

// Fragments (lane: g = lane / 4, t = lane % 4). For k8 step s, the MMA's logical k = t and t + 4
// are physical k = 8 s + 2 t + i (i = 0, 1). A: the float4 v (0, 1) at physical k holds rows
// 64 warp_m + 8 g + 4 v + c, c < 4, i.e. m-tile 2 v + c / 2, row half c % 2.
__host__ __device__ constexpr int a_frag_index(int warp_m, int lane, int s, int i, int v) {
  return a_smem_index(8 * s + 2 * (lane & 3) + i, warp_m * kWarpTileM + 8 * (lane >> 2) + 4 * v);
}
// B: the float4 at physical k holds columns 32 warp_n + 4 g + nt, component nt = n-tile nt.
__host__ __device__ constexpr int b_frag_index(int warp_n, int lane, int s, int i) {
  return b_smem_index(8 * s + 2 * (lane & 3) + i, warp_n * kWarpTileN + 4 * (lane >> 2));
}
// Accumulator c_e (e = 2 h + e1) of (m-tile mt, n-tile nt): row 64 warp_m + 8 g + 2 mt + h,
// column 32 warp_n + 8 t + 4 e1 + nt.
__host__ __device__ constexpr int acc_row(int warp_m, int lane, int mt, int h) {
  return warp_m * kWarpTileM + 8 * (lane >> 2) + 2 * mt + h;
}
__host__ __device__ constexpr int acc_col(int warp_n, int lane, int nt, int e1) {
  return warp_n * kWarpTileN + 8 * (lane & 3) + 4 * e1 + nt;
}
__host__ __device__ constexpr int a_copy_smem(int tid, int j) {
  return a_smem_index(tid / kTile + 2 * j, tid % kTile);
}
__host__ __device__ constexpr int b_copy_row(int tid, int j) {
  return tid / 32 + 8 * j;
}
__host__ __device__ constexpr int b_copy_col(int tid) {
  return (tid % 32) * 4;
}

// The per-thread base + constant forms the kernel uses.
__host__ __device__ constexpr int a_frag_fast(int base, int s, int i, int v) {
  return (base ^ (4 * v)) + (8 * s + i) * kTile;
}
__host__ __device__ constexpr int b_frag_fast(int base, int s, int i) {
  return base + (8 * s + i) * kTile;
}
// Copy j of thread tid from its copy 0: k rises by 2 j, the swizzle of k / 2 = j flips m's chunk.
__host__ __device__ constexpr int a_copy_fast(int base, int j) {
  return (base ^ (4 * quad_swizzle(j & 3))) + 2 * j * kTile;
}

// ---- compile-time checks of the maps ----

// Each group of 8 lanes of a 16-byte shared access must touch 8 distinct 16-byte bank groups.
template <class Index>
constexpr bool quarter_warps_conflict_free(Index index) {
  for (int q = 0; q < 4; ++q) {
    unsigned seen = 0;
    for (int l = 8 * q; l < 8 * q + 8; ++l) seen |= 1u << ((index(l) / 4) % 8);
    if (seen != 0xffu) return false;
  }
  return true;
}
constexpr bool maps_ok() {
  for (int w = 0; w < 4; ++w)
    for (int s = 0; s < kBK / 8; ++s)
      for (int i = 0; i < 2; ++i) {
        for (int v = 0; v < 2 && w < kWarpsM; ++v) {
          const auto a = [&](int lane) { return a_frag_index(w, lane, s, i, v); };
          if (!quarter_warps_conflict_free(a)) return false;
          for (int lane = 0; lane < 32; ++lane)
            if (a_frag_fast(a_frag_index(w, lane, 0, 0, 0), s, i, v) != a(lane)) return false;
        }
        const auto b = [&](int lane) { return b_frag_index(w, lane, s, i); };
        if (!quarter_warps_conflict_free(b)) return false;
        for (int lane = 0; lane < 32; ++lane)
          if (b_frag_fast(b_frag_index(w, lane, 0, 0), s, i) != b(lane)) return false;
      }
  for (int tid = 0; tid < kThreads; ++tid)
    for (int j = 0; j < kACopies; ++j)
      if (a_copy_fast(a_copy_smem(tid, 0), j) != a_copy_smem(tid, j)) return false;
  for (int wm = 0; wm < kWarpsM; ++wm)  // C tile stores: float4 of rows 4 v.. at one column
    for (int wn = 0; wn < kWarpsN; ++wn)
      for (int nt = 0; nt < 4; ++nt)
        for (int v = 0; v < 2; ++v) {
          const auto c = [&](int lane) {
            return c_smem_index(acc_col(wn, lane, nt, 0), acc_row(wm, lane, 2 * v, 0));
          };
          if (!quarter_warps_conflict_free(c)) return false;
        }
  return true;
}
static_assert(maps_ok(), "fragment and C-tile accesses must be conflict-free and match fast forms");
static_assert(a_smem_index(5, 37) / kTile == 5 && c_smem_index(9, 70) / kTile == 9,
              "swizzles stay within their row");

}  // namespace kb::custom::parity_gemm
