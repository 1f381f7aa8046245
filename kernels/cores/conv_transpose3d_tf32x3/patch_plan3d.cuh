// The plan and every index map of the patch-staged 3-D transposed convolution in
// parity_gemm3d.cuh (L1_070, L1_073): host-built, passed to the kernels by value; all maps are
// __host__ __device__, checked on the host by tests/host_cuda/ct3d_patch_plan_test.cu.
//
// Math: the phases and classes of parity_axes.h (1 to 27 taps per class):
//   y[n, co, q*s + r - p] = sum_{tap in T_c, ci} x[n, ci, q - j(tap)] * w[ci, co, t(tap)]
// A CTA tile is (class, 8 kNT output channels, image n, a box of Bd x Bh x Bw q positions <= 512).
// Its input "patch" is the box grown by J - 1 on the low side of each axis (J = 1 + the largest
// j): pixel b of the box reads patch position b + (J - 1 - j) for tap j, so every tap is the
// same patch at a constant offset (tap_off), and x is read once per tile and chunk of 8 input
// channels instead of once per tap.
//
// Shared layouts, per stage (floats):
//   patch: plane c < 4 holds the chunk's channels (c, c + 4) of every patch position as a float4
//     (big[c], small[c], big[c + 4], small[c + 4]), planes kPlaneQuads float4 apart with
//     kPlaneQuads = 2 (mod 8): the 8 lanes (g = 2 i, 2 i + 1; t = 0..3) of a quarter warp read
//     planes t at two consecutive positions (box rows are even, so an even/odd pixel pair never
//     straddles a row) = 8 distinct 16-byte bank groups. One LDS.128 is a lane's A fragment
//     halves (a0, a2) or (a1, a3), big and small.
//   weights: [tap][n-tile][lane][4] = (big b0, big b1, small b0, small b1) of the m16n8k8 B
//     fragment (b0 = (k t, n g), b1 = (k t + 4, n g)), pre-split per call: one LDS.128 per n-tile.
// M rows: warp w owns tile pixels 64 w .. 64 w + 63 (m-tiles of 16, row g / g + 8 = pixel
// 16 mt + g / + 8), pixels in box order (w fastest); rows past the box compute and are not stored.
//
// Thread safety: plain data and pure functions.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "kernels/cores/conv_transpose3d_tf32x3/parity_axes.h"
#include "kernels/cores/conv_transpose_gather/gather.cuh"

namespace kb::custom::ct3d {

using ct3d_parity::kAxes;
using ct3d_parity::kMaxClasses;
using ct3d_parity::kMaxClassTaps;
using ct3d_parity::kMaxJ;
using ct3d_parity::kMaxStride;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMT = 4;                            // m16 tiles per warp
constexpr int kTileRows = kWarps * kMT * 16;      // 512 M rows per CTA
constexpr int kChunk = 8;                         // input channels per stage: one MMA k8 step
constexpr int kPlanes = kChunk / 2;               // float4 planes of channel pairs (c, c + 4)
constexpr int kSlots = 4;                         // patch positions per thread
constexpr int kMaxPatch = kSlots * kThreads;      // 1024
constexpr int kFragFloats = 32 * 4;               // one n-tile's B fragments (both parts)
constexpr int kCoordBits = 10;                    // packed (d, h, w) coordinates
constexpr int kMaxCoord = (1 << kCoordBits) - 1;  // 1023
constexpr uint32_t kNoCoord = 0xffffffffu;
constexpr int kStages = 2;
constexpr int kSmemLimit = 227 * 1024;
static_assert(kMaxPatch <= kMaxCoord + 1, "patch positions fit the packed coordinates");
static_assert(kTileRows <= kMaxCoord, "box sizes fit the packed coordinates");

struct Axis {  // ct3d_parity::ParityAxis's fields, then the patch's
  int stride = 1, pad = 0, in = 1, out = 1;
  int q_lo = 0, q_count = 1;          // q in [q_lo, q_lo + q_count) reaches the output
  int taps[kMaxStride] = {};          // taps of phase r
  int j[kMaxStride][kMaxJ] = {};      // input offset of tap i of phase r
  int t[kMaxStride][kMaxJ] = {};      // kernel index of tap i of phase r
  int span = 1;                       // J = 1 + the largest j
  int box = 1, tiles = 1, patch = 1;  // B, ceil(q_count / B), B + J - 1
};

struct Plan : ct3d_parity::ParityClasses<Axis> {
  int batch = 0, c_in = 0, c_out = 0, k[kAxes] = {1, 1, 1};
  int classes = 1, chunks = 1, n_tiles = 4, n_groups = 1;  // n-tiles of 8 per group (kNT)
  int box_count = 1, patch_count = 1, plane_quads = 2;
  int w_stage_floats = 0, stage_floats = 0, smem_bytes = 0;
  int tiles_total = 0;
  int tap_off[kMaxClasses][kMaxClassTaps] = {};  // patch offset (positions) of tap ti of class c
  int64_t w_offset[kMaxClasses] = {};  // split weights of class c: [ng][chunk][tap][nt][lane][4]
  int64_t w_floats = 0;

  // Floats of one (class, n-group, chunk) block of split weights.
  __host__ __device__ int w_block_floats(int cls) const {
    return class_taps(cls) * n_tiles * kFragFloats;
  }
};

__host__ __device__ constexpr uint32_t pack_coord(int d, int h, int w) {
  return static_cast<uint32_t>(d) | static_cast<uint32_t>(h) << kCoordBits |
         static_cast<uint32_t>(w) << (2 * kCoordBits);
}
__host__ __device__ constexpr int coord_of(uint32_t c, int a) {  // a: 0 d, 1 h, 2 w
  return static_cast<int>(c >> (a * kCoordBits)) & kMaxCoord;
}

// ---- tiles ----

struct Tile {
  int cls, ng, n, q0[kAxes];  // q0: the box's first q per axis
};
// Tile t: u = t / classes runs (n-group, n, box_d, box_h, box_w), w fastest; the class rotates
// with u so that a persistent CTA (tiles t, t + grid, ...) meets every class, whatever the grid.
__host__ __device__ inline Tile tile_of(const Plan& p, int t) {
  Tile r;
  int u = t / p.classes;
  r.cls = (t % p.classes + u % p.classes) % p.classes;
  for (int a = kAxes - 1; a >= 0; --a) {
    r.q0[a] = p.ax[a].q_lo + u % p.ax[a].tiles * p.ax[a].box;
    u /= p.ax[a].tiles;
  }
  r.n = u % p.batch;
  r.ng = u / p.batch;
  return r;
}

// Box coordinates of tile pixel m (M row), or kNoCoord past the box.
__host__ __device__ inline uint32_t pixel_coord(const Plan& p, int m) {
  if (m >= p.box_count) return kNoCoord;
  const int bw = p.ax[2].box, bh = p.ax[1].box;
  return pack_coord(m / (bh * bw), m / bw % bh, m % bw);
}
// Patch position of tile pixel m for a tap with j = J - 1 on every axis (tap offset 0). Rows past
// the box read position m & 1 (any valid position; the parity keeps the banks distinct).
__host__ __device__ inline int pixel_position(const Plan& p, int m) {
  const uint32_t c = pixel_coord(p, m);
  if (c == kNoCoord) return m & 1;
  return (coord_of(c, 0) * p.ax[1].patch + coord_of(c, 1)) * p.ax[2].patch + coord_of(c, 2);
}
// Patch coordinates of patch position pos, or kNoCoord past the patch.
__host__ __device__ inline uint32_t patch_coord(const Plan& p, int pos) {
  if (pos >= p.patch_count) return kNoCoord;
  const int pw = p.ax[2].patch, ph = p.ax[1].patch;
  return pack_coord(pos / (ph * pw), pos / pw % ph, pos % pw);
}

// ---- split weights: element f of the buffer -> (weight index or -1 for a zero, part) ----

struct WeightSource {
  int64_t index;  // into w (C_in, C_out, K_d, K_h, K_w), -1: zero
  int part;       // 0 big, 1 small
};
__host__ __device__ inline WeightSource weight_source(const Plan& p, int64_t f) {
  int cls = 0;
  while (cls + 1 < p.classes && f >= p.w_offset[cls + 1]) ++cls;
  const int64_t e = f - p.w_offset[cls];
  const int comp = static_cast<int>(e % 4), lane = static_cast<int>(e / 4 % 32);
  const int64_t frag = e / kFragFloats;  // ((ng * chunks + chunk) * taps + ti) * n_tiles + nt
  const int nt = static_cast<int>(frag % p.n_tiles);
  const int64_t rest = frag / p.n_tiles;
  const int taps = p.class_taps(cls);
  const int ti = static_cast<int>(rest % taps);
  const int chunk = static_cast<int>(rest / taps % p.chunks);
  const int ng = static_cast<int>(rest / taps / p.chunks);
  const int ci = chunk * kChunk + lane % 4 + 4 * (comp & 1);
  const int co = (ng * p.n_tiles + nt) * 8 + lane / 4;
  if (ci >= p.c_in || co >= p.c_out) return {-1, comp >> 1};
  int i[kAxes];
  p.tap_of(cls, ti, i);
  int64_t src = int64_t{ci} * p.c_out + co;
  for (int a = 0; a < kAxes; ++a) src = src * p.k[a] + p.ax[a].t[p.phase(cls, a)][i[a]];
  return {src, comp >> 1};
}

// ---- host planning ----

inline Status not_taken(const std::string& why) {
  return Status::failed_precondition("ct3d patch GEMM: " + why);
}

inline Result<Axis> plan_axis(const gather::ConvTransposeGeometry& g, int a) {
  Axis ax;
  const Status parity = ct3d_parity::fill_parity_axis_of(g, a, ax);
  if (!parity.is_ok()) return not_taken(parity.message());
  for (int r = 0; r < ax.stride; ++r)
    for (int i = 0; i < ax.taps[r]; ++i) ax.span = std::max(ax.span, ax.j[r][i] + 1);
  if (ax.span > kMaxCoord / 2) return not_taken("dilation too large for a patch");
  return ax;
}

// The smallest float4 plane stride >= positions that is 2 (mod 8) (see the layout above).
constexpr int plane_quads_for(int positions) {
  return positions + (10 - positions % 8) % 8;
}
static_assert(plane_quads_for(972) == 978 && plane_quads_for(2) == 2 && plane_quads_for(3) == 10,
              "2 mod 8, not below the position count");

inline int stage_floats_for(int patch, int w_stage_floats) {
  return 4 * kPlanes * plane_quads_for(patch) + w_stage_floats;
}

// Box per axis: the fewest tiles (each costs 512 M rows), then the smallest patch, with
// Bd Bh Bw <= 512, Bw even (bank rule above), patch <= kMaxPatch and two stages in shared memory.
inline Status choose_box(Plan& p) {
  Axis(&ax)[kAxes] = p.ax;
  int64_t best_tiles = -1;
  int best_patch = 0;
  const int w_cap = std::max(2, ax[2].q_count + ax[2].q_count % 2);
  for (int bw = 2; bw <= std::min(w_cap, kTileRows); bw += 2)
    for (int bh = 1; bh <= std::min(ax[1].q_count, kTileRows / bw); ++bh)
      for (int bd = 1; bd <= std::min(ax[0].q_count, kTileRows / (bw * bh)); ++bd) {
        const int pd = bd + ax[0].span - 1, ph = bh + ax[1].span - 1, pw = bw + ax[2].span - 1;
        if (pd > kMaxCoord || ph > kMaxCoord || pw > kMaxCoord) continue;
        const int64_t patch = int64_t{pd} * ph * pw;
        if (patch > kMaxPatch) continue;
        const int64_t smem =
            int64_t{kStages} * stage_floats_for(static_cast<int>(patch), p.w_stage_floats) * 4;
        if (smem > kSmemLimit) continue;
        const int64_t tiles = int64_t{(ax[0].q_count + bd - 1) / bd} *
                              ((ax[1].q_count + bh - 1) / bh) * ((ax[2].q_count + bw - 1) / bw);
        if (best_tiles < 0 || tiles < best_tiles || (tiles == best_tiles && patch < best_patch)) {
          best_tiles = tiles, best_patch = static_cast<int>(patch);
          ax[0].box = bd, ax[1].box = bh, ax[2].box = bw;
        }
      }
  if (best_tiles < 0) return not_taken("no box fits shared memory");
  p.box_count = 1, p.patch_count = 1;
  for (int a = 0; a < kAxes; ++a) {
    ax[a].tiles = (ax[a].q_count + ax[a].box - 1) / ax[a].box;
    ax[a].patch = ax[a].box + ax[a].span - 1;
    p.box_count *= ax[a].box;
    p.patch_count *= ax[a].patch;
  }
  p.plane_quads = plane_quads_for(p.patch_count);
  p.stage_floats = stage_floats_for(p.patch_count, p.w_stage_floats);
  p.smem_bytes = kStages * p.stage_floats * 4;
  return Status::ok();
}

// The plan for g with n-groups of 8 n_tiles channels, or failed_precondition saying why not.
inline Result<Plan> plan_patch_gemm(const gather::ConvTransposeGeometry& g, int n_tiles) {
  if (g.groups != 1) return not_taken("groups != 1");
  Plan p;
  KB_TRY(ct3d_parity::plan_parity_axes(g, plan_axis, p));
  constexpr int64_t kIntMax = 0x7fffffff;
  if (g.in_channels >= (1 << 20) || g.out_channels >= (1 << 20) || g.batch >= (1 << 20) ||
      p.in_plane() >= kIntMax || p.out_plane() >= kIntMax)
    return not_taken("sizes need wider indexing");
  p.batch = static_cast<int>(g.batch);
  p.c_in = static_cast<int>(g.in_channels), p.c_out = static_cast<int>(g.out_channels);
  p.chunks = (p.c_in + kChunk - 1) / kChunk;
  p.n_tiles = n_tiles;
  p.n_groups = (p.c_out + 8 * n_tiles - 1) / (8 * n_tiles);
  for (int c = 0; c < p.classes; ++c)
    p.w_stage_floats = std::max(p.w_stage_floats, p.w_block_floats(c));
  Status box = choose_box(p);
  if (!box.is_ok()) return box;
  const int64_t tiles =
      int64_t{p.n_groups} * p.batch * p.ax[0].tiles * p.ax[1].tiles * p.ax[2].tiles * p.classes;
  if (tiles >= kIntMax / kMaxClasses) return not_taken("too many tiles");
  p.tiles_total = static_cast<int>(tiles);
  for (int c = 0; c < p.classes; ++c) {
    for (int ti = 0; ti < p.class_taps(c); ++ti) {
      int i[kAxes];
      p.tap_of(c, ti, i);
      int off = 0;
      for (int a = 0; a < kAxes; ++a)
        off = off * p.ax[a].patch + p.ax[a].span - 1 - p.ax[a].j[p.phase(c, a)][i[a]];
      p.tap_off[c][ti] = off;
    }
    p.w_offset[c] = p.w_floats;
    p.w_floats += int64_t{p.n_groups} * p.chunks * p.w_block_floats(c);
  }
  return p;
}

}  // namespace kb::custom::ct3d
