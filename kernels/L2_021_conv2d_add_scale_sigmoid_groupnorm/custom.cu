// L2_021 custom: GroupNorm(sigmoid((conv2d(x) + conv.bias + bias[c]) * scale[c])).
//   x: (N, C_in, H, W), w: (C_out, C_in, 3, 3), conv.bias, gamma, beta: (C_out), bias, scale:
//   (C_out, 1, 1); out: (N, C_out, H - 2, W - 2), fp32 NCHW (full preset: x (128, 8, 256, 256)
//   -> out (128, 32, 254, 254), GroupNorm(8, 32), eps 1e-5). With g the sigmoid output, per
//   (n, group of C_out / G channels): out = (g - mean) / sqrt(var + eps) gamma[c] + beta[c],
//   mean and biased var over the group's channels x (H - 2) x (W - 2) values.
//
// Cost (full preset, docs/problems.md#l2_021): 19.0 G MAC -> t_fp32 0.57 ms (strict FFMA); x
// 268 MB + out 1.06 GB -> t_mem 0.31 ms. Floor 0.62 ms. Reference 6.7-6.8 ms, best strict-fp32
// peer 3.55 ms (torch.compile, docs/baselines.md), goal <= 1.00 ms (1.6 x the floor).
//
// Design. On Hopper, where the conv fits it (3x3 unit conv, C_in <= 8, 16 < C_out <= 32, W' >=
// 96, groups of >= 3 channels: the full preset), the wgmma path (wgmma_rows.cuh) computes the conv
// twice on the tensor cores: a statistics pass, the fold, and a store pass that writes the
// normalized output once; the second conv costs less than the pre-norm tensor's DRAM round trip.
// Elsewhere the conv is computed once and its output re-read: a second pass of the FMA or mma.sync
// kernels (~0.6 ms at the full preset) would cost more than the round trip. Those are three
// launches (kernels/cores/group_norm_pipeline/pipeline.cuh): conv_kernel writes the sigmoid output
// into `out` and per-task group sums to its own partials slot; a one-warp-per-(n, group) fold makes
// coef[n][o]; normalize_flat_kernel rescales `out` in place as float4s, persistent blocks, last
// float4 first (the last samples are still in L2 when the conv launch ends); normalize_kernel
// (tasks of 16 K elements) where the plane or `out` is not 16-byte aligned. The conv launch is one
// of two kernels:
//  - tensor path (3x3 unit conv, C_out >= 16, W' >= 48, not on the wgmma path): the conv3d
//    3xTF32 tile (kernels/cores/conv3d_direct/tf32x3_tile.cuh, D = 1, 32-channel blocks) with
//    TensorEpilogue, which stores g and writes per-(n, row, column tile, channel) sums; the fold
//    reads them with width cpg. 3xTF32 is ~fp32 per product (that header); the sums and sigmoid
//    are as below.
//  - FMA tile (other unit convs that keep 1/16 of a block busy): conv_kernel, S tasks below.
// S task (n, two output rows): stage 4 input rows of all C_in channels (16-byte loads, all issued
// before the first store, when W % 4 == 0) and the weights in shared memory; each thread computes
// 2 rows x 4 channels x 8 columns (64 FFMA accumulators, 30 shared loads per 576 FFMA), then t =
// (acc + bias) * scale, g = 1 / (1 + expf(-t)), written with 8-byte stores; per-channel sums of
// g - pilot and (g - pilot)^2 (fp32 per thread and warp, pilot = a warp-uniform value of the
// channel), turned into raw sums in double once per warp (shared atomics), go to
// partials[n][task][group]. The conv bias starts the accumulator: the same math, one rounding of
// a different order (|err| ~1e-7, ~15x after GroupNorm: << 1e-4). N task (n, channel, part of
// the plane): (g - mean) * rstd * gamma + beta, float4 when aligned.
// Fallback: other geometries (kernel != 3x3, stride/padding/dilation, too wide for shared
// memory, or too narrow to keep 1/16 of a block busy) and a misaligned `out` run group_kernel
// when a group, its sample's input and weights fit in 48 KB of shared memory (one launch, a
// block per (n, group); a 3x3 unit conv a thread per pixel and quad of channels:
// group_unit_values), else the generic kernels in place: the conv, parallel statistics
// (pipeline.cuh), the fold, the normalize. The conv is the narrow kernel (narrow.cuh) for a 3x3
// unit conv whose band of one input row and chunk of one quad's weights fit in 48 KB, else one
// thread per output element (any geometry: int64 index math and bounds checks per tap).
// Narrow: a block per (sample, band of ~256 output pixels, chunk of
// quads) stages the band's input rows (one contiguous run per channel) with each pixel's three
// kw taps side by side, and the chunk's weights; lanes run over the band's flat pixels, 4
// channels each: 18 shared loads per 36 FFMA, coalesced stores, at any Wo. The shape sweep's
// N 123, C_in 8, C_out 32, 211 x 7 (Wo 5) ran the per-output conv 3.7x slower than the reference
// (688 against 184 us; N 68, C_in 9, 165 x 9: 472 against 140): predicted ~45-55 us there (conv
// ~20-28 us, shared-load and issue bound; statistics ~6, fold ~3, normalize ~10 from L2) and
// ~30-40 us at the second; measured (H100, session 39, `kb bench L2_021 --dims ...`,
// /work/.device/3) 78 us against the reference's 190 and 60 against 109. g is bit for bit the
// per-output kernel's.
//
// Group kernel's unit loop (session 54): the shape sweep (seed 54, H100) measured N 108, C_in 6,
// C_out 32, 133 x 5 at 0.46x the reference (126 us against 58) on group_kernel, whose thread per
// output walked conv_at's int64 loops with bounds checks and re-read each staged input value
// per channel (57 registers: 4 blocks an SM, 864 blocks). For a 3x3 unit conv a thread now
// takes a pixel and 4 channels at a time (taps unrolled, 32-bit indices, weights broadcast, 32
// registers) and stages with 4 loads in flight; g is bit for bit the same. H100 (`kb bench
// L2_021 --dims ...`, /work/.device/6; main / this / the narrow conv's path, x the reference):
// 0.46 / 2.09 / 1.59 there; N 99, C_in 3, C_out 8, 61 x 9 1.27 / 2.13 / 1.42; N 64, C_in 4,
// C_out 32, 50 x 30 0.48 / 2.18 / 1.68; N 200, C_in 2, C_out 16, 30 x 30 0.88 / 2.34 / 1.93; N
// 16, C_in 3, C_out 24, 50 x 40 0.61 / 2.21 / 1.60; N 128, C_in 8, C_out 8, 30 x 12 0.74 / 1.43
// / 1.52; N 40, C_in 12, C_out 64, 20 x 14 0.44 / 2.03 / 1.41; the `group` preset 1.33 / 3.23.
//
// Files: wgmma_rows.cuh (the wgmma path), fma_tile.cuh (S tasks), normalize.cuh (N tasks and the
// flat stream), generic.cuh (the fallback kernels), narrow.cuh (their conv for narrow images),
// geometry.cuh (what they share), activation.cuh;
// this file holds the mma.sync tile's epilogue and the host side (paths, workspace, launches).
//
// Predicted / measured (H200, full preset): see the ladder; v2 (this code) predicted 1.3-1.45 ms,
// measured 2.40 ms (docs/kernels.md) and 2.433 ms in docs/bench-h200-2026-12-02b.json (17
// TFLOP/s, 3.9x the floor, 2.4x the goal): the pre-norm tensor makes a DRAM round trip (2.1 GB)
// and the conv runs at 17 TFLOP/s.
//
// Accuracy. Error sources: the fp32 FMA conv (no TF32: it fails 7.5x here), the sigmoid rounded
// as the reference rounds it (fp32 add, mul, accurate expf, IEEE division; the ex2/rcp pair with
// -log2(e) folded into the scale cost 4x the tolerance on the odd fixture's one-channel groups,
// v1; the wgmma path alone takes approximate sigmoids, over groups of >= 3 x 96 values: the
// statistics the pair, the stored values ex2.approx with the rounded division, activation.cuh), the
// group statistics, and the normalize (v * scale + shift in fp32, coefficients from double).
// GroupNorm divides the upstream error by the group std, as small as 0.067 here
// (~15x, docs/problems.md#l2_021). The pilot (__expf, __fdividef) is only the shift point: the sums
// about it are exact in form.
// Accuracy of the statistics: fp32 sums of g and g^2 (before) lose 2 log10(mean/std) digits, all
// of them when the sigmoid saturates (inputs in [100, 101): g ~ 1, std << 1). About a pilot
// near the data the fp32 sums carry only their own rounding (~1e-7 of n std^2), and the raw
// sums rebuilt in double (sum g = s1 + n p, sum g^2 = s2 + 2 p s1 + n p^2) lose those digits in
// double instead. Where the group std is far below sqrt(eps) (saturated groups) the fp32 sigmoid
// itself (1 - g rounded) dominates, for the reference as much: tests/gpu/robustness_test.cu
// measures both against the golden model.
// Measured max |err| 3.9e-5 (2026-11-30) and 9.1e-6 (bench 2026-12-02b) vs 1e-4 + 1e-4 |r|
// allowed. Robustness trials (small preset, seed 7, vs the golden model; C_out 16 x Wo 17 keeps
// < 1/4 of a block busy, so the generic path ran; its narrow conv now gives the same g): shift
// (x + 100) 0.024x the tolerance (reference 0.024x), scale (x 1000) 0.080x (0.081x), centered
// 0.032x (0.044x), random_affine (gamma, beta) 0.049x (0.043x). On the tensor path (the robust
// preset, N 2 x 8 -> 32 x 11 x 71, kernelbench22 in docs/bench-h200-2026-12-02-s8.json): shift
// 0.057x (0.042x), centered 0.030x (0.030x), random_affine 0.024x (0.015x), and scale 1.35x
// (0.69x): `marginal`, the MMA's truncating accumulation at the magnitude of the cancelling partial
// sums (tf32x3_tile.cuh), divided by a small group std. The FMA tile matched the reference there
// (0.685x).
//
// Ladder (H200, full preset; fp32 floor 0.62 ms):
//   v1 one-launch ticket pipeline, S (conv) and N (normalize) tasks interleaved, lag 3 phases
//      predicted 0.75-0.9 ms -> measured 2.862. Why, from the code: an S task is ~40x an N task,
//      so 3 phases put the last S(n) ticket only ~0.97 grid of S tasks ahead of the first N(n)
//      ticket: N(n) blocks (128 per sample, half the grid) spin on stragglers; each S task stages
//      33 scalar loads per thread with 64-bit div/mod, ~8 dependent L2/DRAM round trips, before
//      any FFMA; an N task keeps only 4 float4 loads per thread in flight; 2 blocks/SM (127 regs)
//      hide none of it.
//   v2 three launches: conv (16-byte staging, one round trip) ~0.72 ms of issue -> ~0.80;
//      coefficient fold ~5 us; normalize in place 2.1 GB -> ~0.55 ms: predicted 1.3-1.45 ms ->
//      measured 2.40 ms (docs/kernels.md)
//   v3 (session 8) the conv on the tensor cores: the conv3d 3xTF32 tile at D = 1 with a fragment
//      epilogue (sigmoid, pre-norm store, row sums). Predicted ~1.1-1.2 ms (MMAs ~0.35 ms, the
//      epilogue's ~25 instructions per output ~0.2 ms, normalize ~0.5 ms) -> measured 2.45 ms
//      (kb bench L2_021 --time-cap 3 --seed 7; 2.40 for v2 on the same machine). ncu source
//      counters: 3,270 warp instructions per (tile, warp) where the model had ~1,700: the patch
//      staging (4-byte copies, ~515), register moves packing float2 A pairs into MMA operands (26
//      per k step) and the epilogue (~1,200: expf + IEEE division ~23 per output). The tile now
//      stages by 16-byte copies and keeps big / small in separate arrays: 2,818 per (tile, warp),
//      **2.115 ms** (L1_054 0.948 -> 0.82 ms, L1_060 2.90 -> 2.43 ms from the same tile change);
//      with a block per (sample, group) folding the 66 MB of partials, 2.064 ms (kernelbench22).
//   v4 (session 17) the normalize pass as one persistent float4 stream (normalize_flat_kernel):
//      the task kernel's 16,384 blocks of 16 K elements each ran 4 rounds of 4 float4 loads per
//      thread and ended (session 12's ncu: 644 us, DRAM 67%). Predicted -0.1 ms (2.1 GB at ~4 TB/s)
//      -> measured 2.078-2.085 -> **1.951-1.953 ms** (kb bench L2_021 --time-cap 2 --seed 7, two
//      runs each against the session-16 pack, same call; the task kernel in the same build 2.078).
//   v5 (session 24) the sigmoid's division as the IEEE division's own fast path, without its
//      branch to the slow path (activation.cuh; bit-identical for arguments above -87): the
//      epilogue's BSSY / BRA / BSYNC were ~8% of its instructions: 1.95 -> 1.80 ms on this path.
//   v6 (session 24) the wgmma path (wgmma_rows.cuh): the conv twice on Hopper's tensor cores,
//      statistics then normalized stores, no pre-norm round trip. Predicted ~0.7 ms (tensor
//      ~0.3 ms per pass, epilogue under it) -> measured 1.77 ms with two lockstep warpgroups per
//      CTA, 1.55 ms with 4 independent warpgroups and staged stores (statistics 0.63 ms, store
//      0.91 ms under ncu; kb bench L2_021 --time-cap 2 --seed 7, docs/kernels.md).
//   v7 (sessions 25-27) the store pass's copy-out with each thread's column fixed and its channel
//      stepped by one add (staging.h), and a warpgroup's items walked with carries, not two
//      divisions each (item_walk.h). Predicted 1.25-1.35 ms -> measured **1.378-1.388 ms**
//      against 1.542-1.544 (session 27, device call 4, kb bench L2_021 --time-cap 2 --seed 7,
//      three rounds alternating with the v6 pack); ncu: store pass 900 -> 732 us, 474 M -> 297 M
//      warp instructions, now 8.7 cycles per issued instruction; statistics pass 626 us.
//   next (for <= 1.0): both passes are latency-bound at 16 warps per SM (7.8 and 8.7 cycles per
//      issued instruction): the statistics pass's per-row epilogue (more independent values per
//      warp in flight), then the store pass's wait on its staged rows.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <optional>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/activation.cuh"
#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/fma_tile.cuh"
#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/generic.cuh"
#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/geometry.cuh"
#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/narrow.cuh"
#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/normalize.cuh"
#include "kernels/L2_021_conv2d_add_scale_sigmoid_groupnorm/wgmma_rows.cuh"
#include "kernels/cores/conv3d_direct/tf32x3_tile.cuh"
#include "kernels/cores/group_norm_pipeline/pipeline.cuh"
#include "kernels/implementation.h"

namespace kb::custom::L2_021 {

namespace sp = kb::gn_pipeline;
namespace tc = kb::custom::conv3d_direct::tf32;

// ---- Tensor-core path: the conv3d 3xTF32 tile (D = 1) with a statistics epilogue ----

constexpr int kTensorChannels = 32;  // the tile's channel block (two warps of 16 across it)

// The 3xTF32 tile's fragment epilogue: the sigmoid output stored pre-norm, and per (sample, output
// row, column tile, channel) the sums of g and g^2 over the row's columns in the tile, into
// partials[((n H' + h) col_tiles + column tile) C_out + co]: every slot written once per run,
// folded by coefficients_kernel (width cpg). A lane sums its 8 values of a channel about a
// warp-uniform pilot (the channel's first output in the row) in fp32, the 8 lanes of the channel
// combine by shuffles, and the raw sums are formed in double: sum g = s1 + n p, sum g^2 = s2 + 2 p
// s1 + n p^2.
struct TensorEpilogue {
  static constexpr bool kFragment = true;
  const float* b_conv;  // (C_out)
  const float* bias;    // (C_out)
  const float* scale;   // (C_out)
  double2* partials;

  template <int kNT>
  __device__ void fragment(const tc::Params& p, const tc::WarpFragment& f,
                           const float (&acc)[4][kNT][4]) const {
    const int cols = min(tc::kTileCols, p.out_w - f.tile.w0);  // columns of the row in range
    const int64_t slot =
        (int64_t{f.tile.n} * p.out_h + f.h) * p.col_tiles + f.tile.w0 / tc::kTileCols;
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int co = f.co + 8 * nt + 2 * f.t + e;
        const bool ok = co < p.cout;
        const int c = ok ? co : 0;
        const float bc = b_conv[c], bi = bias[c], sc = scale[c];
        float v[2][4];
#pragma unroll
        for (int half = 0; half < 2; ++half)
#pragma unroll
          for (int j = 0; j < 4; ++j)
            v[half][j] = activation(acc[j][nt][2 * half + e] + bc, bi, sc);
        const float pilot = __shfl_sync(0xffffffffu, v[0][0], f.t);  // lane t: column 0
        float s1 = 0.0f, s2 = 0.0f;
#pragma unroll
        for (int half = 0; half < 2; ++half)
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const float d = 32 * half + 4 * f.g + j < cols ? v[half][j] - pilot : 0.0f;
            s1 += d;
            s2 = fmaf(d, d, s2);
          }
#pragma unroll
        for (int m = 4; m < kWarp; m <<= 1) {  // the 8 lanes of the channel (lane bits 2-4: g)
          s1 += __shfl_xor_sync(0xffffffffu, s1, m);
          s2 += __shfl_xor_sync(0xffffffffu, s2, m);
        }
        if (!ok) continue;
        tc::store_quad<false>(p, f, co, 0, v[0]);  // normalize reads the last ones from L2
        tc::store_quad<false>(p, f, co, 1, v[1]);
        if (f.g == 0) {
          const double pd = pilot, d1 = s1, n = cols;
          partials[slot * p.cout + co] =
              make_double2(fma(n, pd, d1), fma(n * pd, pd, fma(2.0 * pd, d1, double{s2})));
        }
      }
  }
};

// ---- Host side ----

class ConvSigmoidGroupNorm final : public Implementation {
 public:
  ~ConvSigmoidGroupNorm() override { KB_CUDA_WARN(cudaFree(workspace_)); }

  Status setup(const ProblemInstance& p, cudaStream_t) override {
    x_ = input_index(p, "x");
    w_ = param_index(p, "conv.weight");
    b_conv_ = param_index(p, "conv.bias");
    bias_ = param_index(p, "bias");
    scale_ = param_index(p, "scale");
    gamma_ = param_index(p, "group_norm.weight");
    beta_ = param_index(p, "group_norm.bias");
    const Shape& xs = p.shape_of("x");            // (N, C_in, H, W)
    const Shape& ws = p.shape_of("conv.weight");  // (C_out, C_in, kH, kW)
    const Shape& os = p.output_shape();           // (N, C_out, Ho, Wo)
    if ((p.has_attr("conv", "groups") && p.int_attr("conv", "groups") != 1) || ws[1] != xs[1])
      return Status::failed_precondition("L2_021 custom: needs a conv with groups 1");
    g_ = Geometry{};
    g_.batch = xs[0], g_.c_in = xs[1], g_.c_out = os[1], g_.h = xs[2], g_.w = xs[3];
    g_.ho = os[2], g_.wo = os[3];
    g_.groups = p.int_attr("group_norm", "num_groups");
    g_.cpg = g_.c_out / g_.groups;
    g_.eps = static_cast<float>(p.number("group_norm", "eps"));
    cv_.kh = ws[2], cv_.kw = ws[3];
    bool unit = cv_.kh == 3 && cv_.kw == 3;  // 3x3, stride 1, padding 0, dilation 1
    for (int a = 0; a < 2; ++a) {
      cv_.stride[a] = attr_or(p, "stride", a, 1);
      cv_.pad[a] = attr_or(p, "padding", a, 0);
      cv_.dil[a] = attr_or(p, "dilation", a, 1);
      unit = unit && cv_.stride[a] == 1 && cv_.pad[a] == 0 && cv_.dil[a] == 1;
    }
    unit_ = unit;
    g_.quads = (g_.c_out + kQuad - 1) / kQuad;
    g_.col_groups = (g_.wo + kCols - 1) / kCols;
    g_.col_groups_pad = (g_.col_groups + kWarp - 1) / kWarp * kWarp;
    g_.row_pad = kCols * g_.col_groups + kCols;  // the last column group reads 2 past its 8
    g_.parts = (g_.plane() + kPartTarget - 1) / kPartTarget;
    g_.part_len = (g_.plane() + g_.parts - 1) / g_.parts;
    g_.part_len = (g_.part_len + 3) / 4 * 4;
    g_.s_tasks = (g_.ho + kTileRows - 1) / kTileRows;
    smem_ = smem_bytes(g_);
    // A conv task's block maps quads x col_groups_pad slots to its 256 threads; narrow images
    // with few channels leave most of them idle (C_out 8, Wo 9: 4 working threads of 256, 3.6x
    // slower than the reference in the shape sweep). Below 1/16 of the block the generic kernels
    // are faster (N 4, C_in 8, C_out 8, 30 x 30, 8 of 256: 31 against 36 us); above it the tile
    // (N 53, C_in 2, C_out 8, 91 x 229, 58 of 256: 190 us against the generic path's 462 and
    // the reference's 408; N 8, C_in 3, C_out 8, 64 x 64, 16 of 256: 33 against 37; session 22).
    // Those thresholds were measured against the per-output conv. Below them (and for a
    // misaligned `out`) group_kernel runs where a group fits, else the generic statistics after
    // the narrow conv where its plan fits (setup_narrow), else after the per-output conv. H100,
    // session 39 (`kb bench L2_021 --dims ...`, main / this / reference us, /work/.device/3):
    // 688 / 78 / 190 at N 123, C_in 8, C_out 32, 211 x 7, 473 / 60 / 109 at N 68, C_in 9, 165 x
    // 9, 295 / 66 / 125 at N 16, C_in 64, C_out 64, 20 x 12 (all on the per-output conv before).
    const int64_t slots = g_.quads * g_.col_groups_pad;
    const double busy = static_cast<double>(g_.quads * g_.col_groups) /
                        static_cast<double>((slots + kThreads - 1) / kThreads * kThreads);
    KB_ASSIGN_OR_RETURN(const int sms, cuda::sm_count());
    const std::optional<NarrowPlan> narrow_plan =
        unit ? plan_narrow(g_, sms) : std::optional<NarrowPlan>();
    const bool narrow_fits = narrow_plan.has_value();
    fast_ =
        unit && smem_ <= 100 * 1024 && (busy >= kFastMinBusy || (busy >= 1.0 / 16 && !narrow_fits));
    rows_taken_ = false;
    if (unit) KB_TRY(rows_.setup({g_.batch, g_.c_in, g_.c_out, g_.h, g_.w, g_.cpg}, &rows_taken_));
    if (!rows_taken_) KB_TRY(setup_tensor(unit));
    int64_t parts = g_.s_tasks;
    if (rows_taken_) parts = std::max(parts, rows_.parts() * g_.cpg);
    if (tensor_) parts = std::max(parts, g_.ho * tensor_->params.col_tiles * g_.c_out / g_.groups);
    if (fast_) {
      KB_CUDA_TRY(cudaFuncSetAttribute(conv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(smem_)));
      KB_ASSIGN_OR_RETURN(
          conv_blocks_, sp::persistent_blocks(reinterpret_cast<const void*>(conv_kernel), kThreads,
                                              smem_, g_.batch * g_.s_tasks));
    }
    if (!fast_) {
      // Blocks for at least half the SMs: at N 5 x 8 groups (40 blocks) the generic path was
      // faster (25 against 28 us).
      small_groups_ = !tensor_ && group_smem_floats(g_, cv_) <= kGroupMaxSmemFloats &&
                      g_.batch * g_.groups >= sms / 2 && g_.batch * g_.groups < 0x7fffffff;
      generic_parts_ = sp::group_partial_parts(g_.batch, g_.groups, g_.cpg * g_.plane(), sms);
    }
    narrow_.reset();
    if (narrow_fits && !rows_taken_ && !tensor_ && !small_groups_)
      KB_TRY(setup_narrow(*narrow_plan));
    KB_ASSIGN_OR_RETURN(
        flat_blocks_,
        sp::persistent_blocks(reinterpret_cast<const void*>(normalize_flat_kernel), kThreads, 0,
                              (g_.batch * g_.c_out * g_.plane() / 4 + kThreads - 1) / kThreads));
    parts = std::max(parts, generic_parts_);  // the generic path also serves a misaligned output
    // workspace: partials [N * parts * groups] double2 | coef [N * C_out] float2
    partials_count_ = g_.batch * parts * g_.groups;
    const size_t bytes = sizeof(double2) * partials_count_ + sizeof(float2) * g_.batch * g_.c_out;
    KB_CUDA_TRY(cudaMalloc(&workspace_, bytes));
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    // Every workspace slot a launch reads was written earlier in this run: no zeroing.
    auto* partials = static_cast<double2*>(workspace_);
    auto* coef = reinterpret_cast<float2*>(partials + partials_count_);
    const Buffers b{args.inputs[x_].data,
                    args.params[w_].data,
                    args.params[b_conv_].data,
                    args.params[bias_].data,
                    args.params[scale_].data,
                    args.params[gamma_].data,
                    args.params[beta_].data,
                    args.output.data,
                    partials,
                    coef};
    if (rows_taken_) {
      rows::Args a{};
      a.x = b.x, a.w = b.w, a.b_conv = b.b_conv, a.bias = b.bias, a.scale = b.scale;
      a.partials = partials, a.coef = coef, a.out = b.out;
      KB_TRY(rows_.run_statistics(a, stream));
      sp::launch_coefficients(partials, g_.batch, rows_.parts(), g_.groups, g_.cpg,
                              static_cast<double>(g_.cpg * g_.plane()), b.gamma, b.beta, g_.eps,
                              coef, stream, g_.cpg);
      KB_CUDA_TRY(cudaGetLastError());
      return rows_.run_store(a, stream);
    }
    if (tensor_) {
      tc::Params p = tensor_->params;
      p.x = b.x, p.w = b.w, p.y = b.out;
      const TensorEpilogue epilogue{b.b_conv, b.bias, b.scale, partials};
      tc::conv3d_tf32x3_kernel<1, 3, 3, kTensorChannels, TensorEpilogue>
          <<<tensor_->launch.grid, tc::kThreads, tensor_->launch.smem, stream>>>(p, epilogue);
      KB_CUDA_TRY(cudaGetLastError());
      sp::launch_coefficients(partials, g_.batch, g_.ho * p.col_tiles, g_.groups, g_.cpg,
                              static_cast<double>(g_.cpg * g_.plane()), b.gamma, b.beta, g_.eps,
                              coef, stream, g_.cpg);
      KB_CUDA_TRY(cudaGetLastError());
      launch_normalize(b, stream);
      KB_CUDA_TRY(cudaGetLastError());
      return Status::ok();
    }
    const bool aligned = reinterpret_cast<uintptr_t>(args.output.data) % 8 == 0;
    if (fast_ && aligned) {
      conv_kernel<<<conv_blocks_, kThreads, smem_, stream>>>(b, g_);
      KB_CUDA_TRY(cudaGetLastError());
      sp::launch_coefficients(partials, g_.batch, g_.s_tasks, g_.groups, g_.cpg,
                              static_cast<double>(g_.cpg * g_.plane()), b.gamma, b.beta, g_.eps,
                              coef, stream);
      KB_CUDA_TRY(cudaGetLastError());
      launch_normalize(b, stream);
      KB_CUDA_TRY(cudaGetLastError());
      return Status::ok();
    }
    if (small_groups_) {
      if (g_.batch * g_.groups == 0) return Status::ok();  // no output elements
      const auto kernel = unit_ ? group_kernel<true> : group_kernel<false>;
      kernel<<<static_cast<unsigned>(g_.batch * g_.groups), kThreads,
               sizeof(float) * group_smem_floats(g_, cv_), stream>>>(b, g_, cv_);
      KB_CUDA_TRY(cudaGetLastError());
      return Status::ok();
    }
    const int64_t total = g_.batch * g_.c_out * g_.plane();
    const auto blocks =
        static_cast<unsigned>(std::clamp<int64_t>((total + kThreads - 1) / kThreads, 1, 65536));
    if (narrow_) {
      narrow_conv_kernel<<<dim3(narrow_->blocks, static_cast<unsigned>(narrow_->plan.chunks)),
                           kThreads, narrow_->plan.smem, stream>>>(b, g_, narrow_->plan);
    } else {
      generic_activation_kernel<<<blocks, kThreads, 0, stream>>>(b, g_, cv_);
    }
    KB_CUDA_TRY(cudaGetLastError());
    const int64_t group_len = g_.cpg * g_.plane();
    sp::launch_group_partials(b.out, g_.batch, g_.groups, group_len, generic_parts_, partials,
                              stream);
    KB_CUDA_TRY(cudaGetLastError());
    sp::launch_coefficients(partials, g_.batch, generic_parts_, g_.groups, g_.cpg,
                            static_cast<double>(group_len), b.gamma, b.beta, g_.eps, coef, stream);
    KB_CUDA_TRY(cudaGetLastError());
    generic_normalize_kernel<<<blocks, kThreads, 0, stream>>>(b, g_);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

 private:
  static constexpr int64_t kPartTarget = 16384;  // elements of one N task
  // The FMA tile from this share of its block busy where the narrow conv's plan fits (from 1/16
  // where it does not): the mixed-regime sweep's N 80, C_in 8, C_out 32, 107 x 23 (Wo 21, 24 of
  // 256 threads busy) ran the tile at 376 us against the reference's 168-260. H100, session 39
  // (`kb bench L2_021 --dims ...`, tile / narrow conv / reference us, /work/.device/4): 381 / 100
  // / 168 there, 31 / 19 / 38 at N 4, C_in 6, C_out 32, 15 x 17, 169 / 115 / 439 at N 53, C_in 2,
  // C_out 8, 93 x 231 (58 of 256 busy), 28 / 19 / 35 at N 8, C_in 3, C_out 8, 66 x 66, 104 / 58 /
  // 71 at N 30, C_in 16, C_out 32, 40 x 40, 142 / 50 / 89 at N 64, C_in 8, C_out 16, 64 x 34.
  static constexpr double kFastMinBusy = 0.25;

  // The tensor-core path: 3x3, stride 1, no padding (unit), at least 16 channels (a 32-channel
  // block) and rows of at least 48 columns (64-column tiles), and the patch fits in shared memory.
  // Narrower shapes keep the FMA tile or the generic kernels.
  Status setup_tensor(bool unit) {
    tensor_.reset();
    if (!unit || g_.c_out < 16 || g_.wo < 48) return Status::ok();
    const int64_t limit = int64_t{1} << 30;  // the tile's sizes are int
    if (g_.batch >= limit || g_.c_in * 9 >= limit || g_.c_out >= limit || g_.h >= limit ||
        g_.w >= limit) {
      return Status::ok();
    }
    tc::Params p = {};
    p.batch = static_cast<int>(g_.batch), p.cin = static_cast<int>(g_.c_in);
    p.cout = static_cast<int>(g_.c_out);
    p.in_d = 1, p.in_h = static_cast<int>(g_.h), p.in_w = static_cast<int>(g_.w);
    p.out_d = 1, p.out_h = static_cast<int>(g_.ho), p.out_w = static_cast<int>(g_.wo);
    tc::derive_params<1, 3, 3>(p);
    KB_ASSIGN_OR_RETURN(const std::optional<tc::Launch> launch,
                        (tc::plan_launch<1, 3, 3, kTensorChannels, TensorEpilogue>(p)));
    if (launch) tensor_ = TensorPlan{p, *launch};
    return Status::ok();
  }

  // The narrow conv (narrow.cuh) in place of the per-output conv on the generic path, where its
  // plan fits: persistent blocks over (n, band) per chunk of quads, all resident at once.
  Status setup_narrow(const NarrowPlan& plan) {
    KB_ASSIGN_OR_RETURN(const int64_t resident,
                        cuda::resident_blocks(reinterpret_cast<const void*>(narrow_conv_kernel),
                                              kThreads, plan.smem));
    const int64_t blocks =
        std::clamp<int64_t>(g_.batch * plan.bands, 1, std::max<int64_t>(1, resident / plan.chunks));
    narrow_ = NarrowLaunch{plan, static_cast<unsigned>(blocks)};
    return Status::ok();
  }

  // Normalizes `out` in place with coef: the flat float4 pass where the plane and `out` allow
  // (and its uint32 indices cannot wrap), else the task kernel (float4 or scalar per task).
  void launch_normalize(const Buffers& b, cudaStream_t stream) const {
    const int64_t total = g_.batch * g_.c_out * g_.plane();
    if (g_.plane() % 4 == 0 && reinterpret_cast<uintptr_t>(b.out) % 16 == 0 &&
        total / 4 < (int64_t{1} << 32) - int64_t{1} * kThreads * flat_blocks_ * 4) {
      normalize_flat_kernel<<<flat_blocks_, kThreads, 0, stream>>>(
          b, static_cast<uint32_t>(total / 4), static_cast<uint32_t>(g_.plane() / 4));
      return;
    }
    const int64_t tasks = g_.batch * g_.c_out * g_.parts;
    normalize_kernel<<<static_cast<unsigned>(std::clamp<int64_t>(tasks, 1, int64_t{1} << 20)),
                       kThreads, 0, stream>>>(b, g_);
  }

  struct TensorPlan {
    tc::Params params = {};  // sizes; tensors set per run
    tc::Launch launch = {};
  };

  struct NarrowLaunch {
    NarrowPlan plan = {};
    unsigned blocks = 1;  // gridDim.x
  };

  static int64_t attr_or(const ProblemInstance& p, const char* attr, int a, int64_t fill) {
    return p.has_attr("conv", attr) ? p.ints("conv", attr)[a] : fill;
  }

  size_t x_ = 0, w_ = 0, b_conv_ = 0, bias_ = 0, scale_ = 0, gamma_ = 0, beta_ = 0;
  Geometry g_{};
  ConvGeom cv_{};
  bool fast_ = false;
  bool unit_ = false;                 // the conv is 3x3, stride 1, no padding or dilation
  bool small_groups_ = false;         // group_kernel runs (instead of the generic path)
  rows::RowsConv rows_;               // the wgmma path's plan
  bool rows_taken_ = false;           // the wgmma path runs (wgmma_rows.cuh)
  std::optional<TensorPlan> tensor_;  // set when the tensor path runs
  // Set when the generic path's conv is the narrow kernel (narrow.cuh).
  std::optional<NarrowLaunch> narrow_;
  size_t smem_ = 0;
  int conv_blocks_ = 1;
  int flat_blocks_ = 1;        // resident blocks of normalize_flat_kernel
  int64_t generic_parts_ = 1;  // generic path: statistics blocks per (n, group)
  int64_t partials_count_ = 0;
  void* workspace_ = nullptr;  // partials, coefficients; owned
};

}  // namespace kb::custom::L2_021

KB_REGISTER_IMPLEMENTATION(L2_021, custom, kb::custom::L2_021::ConvSigmoidGroupNorm)
