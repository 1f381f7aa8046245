// kernels/cores/conv_transpose_gather/gather.cuh, the row gather's plan (plan_row_gather) at
// L1_081's column taps (K_w, s_w, d_w) = (3, 5, 2): the block it chooses (the narrow 64-thread one
// exactly when row_threads' rule says), channel blocks that cover every channel once, and shared
// memory that matches the kernel's layout (ws, xs, z). Then small layers replayed on the host as
// row_gather_kernel indexes them, thread by thread of either block size (the weights in
// prepare_row_weights_kernel's layout, shared memory and y starting as NaN), against the golden
// model's transposed convolution: small-integer data, so every fp32 sum is exact.
// The replay restates the kernel's index arithmetic (device code cannot run here): a change to
// the kernel's layout must be made in both.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cores/conv_transpose_gather/gather.cuh"
#include "tests/host_cuda/transposed_layer.h"

namespace kb::custom::gather {
namespace {

using namespace host_test;  // transposed_layer.h: Layer, geometry, name, golden, ...
using Taps = ColumnTaps<3, 5, 2>;
using Tile = RowThreadTile;

constexpr int64_t kMaxSmem = 227 * 1024;  // an H100's opt-in shared memory per block

// ConvTranspose2d(c_in, c_out, (k_h, 3), stride (s_h, 5), padding (pad_h, pad_w), dilation
// (d_h, 2), groups) on x (batch, c_in, h, w).
Layer row_layer(int64_t batch, int64_t c_in, int64_t c_out, int64_t h, int64_t w, int64_t k_h = 3,
                int64_t s_h = 5, int64_t d_h = 2, int64_t pad_h = 1, int64_t pad_w = 1,
                int64_t groups = 1) {
  Layer l;
  l.rank = 2, l.batch = batch, l.c_in = c_in, l.c_out = c_out, l.groups = groups;
  l.in[1] = h, l.in[2] = w;
  l.kernel[1] = k_h, l.kernel[2] = 3;
  l.stride[1] = s_h, l.stride[2] = 5;
  l.dilation[1] = d_h, l.dilation[2] = 2;
  l.padding[1] = pad_h, l.padding[2] = pad_w;
  return l;
}

RowGatherPlan planned(const Layer& l, int64_t max_smem = kMaxSmem) {
  const Result<RowGatherPlan> plan = plan_row_gather<3, 5, 2, Tile>(geometry(l), max_smem);
  EXPECT_TRUE(plan.is_ok()) << name(l) << ": " << plan.status().message();
  return plan.is_ok() ? plan.value() : RowGatherPlan{};
}

// A random L1_081-style layer (column taps fixed, row taps free, one or two groups of up to max_c
// channels each side) with an output of at least one row of up to max_hw input rows; input rows
// of up to 30 columns, a third of them up to 160.
Layer random_layer(std::mt19937& rng, int64_t max_c, int64_t max_hw) {
  const auto pick = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const int64_t groups = pick(1, 3) == 3 ? 2 : 1;
  const int64_t k_h = pick(1, 4), s_h = pick(1, 6), d_h = pick(1, 3), h = pick(1, max_hw);
  const int64_t pad_h = std::min(pick(0, 2), ((h - 1) * s_h + d_h * (k_h - 1)) / 2);
  return row_layer(pick(1, 3), groups * pick(1, max_c), groups * pick(1, max_c), h,
                   pick(1, pick(0, 2) == 0 ? 160 : 30), k_h, s_h, d_h, pad_h, pick(0, 2), groups);
}

// The rule, as the brief to the plan states it: 64 threads (2 channel sets of 4) for at most 8
// channels a group whose row one warp spans at 2 positions a thread; else 256.
int expected_threads(const RowGatherParams& p) {
  return p.cout_g <= 8 && p.q_count <= kWarp * Tile::kQs ? 64 : 256;
}

// ws (row taps x cin_g x K_w x co_block), xs (row taps x cin_g x x_len, to 16 bytes), z (pass_co
// rows of z_stride): the kernel's carve-up of dynamic shared memory.
struct SmemLayout {
  int64_t xs, z, floats;
};
SmemLayout smem_layout(const RowGatherPlan& plan) {
  const RowGatherParams& p = plan.params;
  const int64_t pass_co = plan.threads / p.q_threads * Tile::kCos;
  const int64_t xs = int64_t{p.row_taps} * p.cin_g * 3 * p.co_block;
  const int64_t z = xs + (int64_t{p.row_taps} * p.cin_g * p.x_len + 3) / 4 * 4;
  return {xs, z, z + pass_co * p.z_stride};
}

void expect_consistent(const Layer& l, const RowGatherPlan& plan) {
  const RowGatherParams& p = plan.params;
  const std::string at = name(l);
  EXPECT_EQ(plan.threads, expected_threads(p)) << at;
  // q_threads: the fewest warps' worth (a power of two) that span the row, at most the block.
  EXPECT_EQ(plan.threads % p.q_threads, 0) << at;
  EXPECT_GE(p.q_threads, kWarp) << at;
  EXPECT_TRUE(p.q_threads * Tile::kQs >= p.q_count || p.q_threads == plan.threads) << at;
  EXPECT_TRUE(p.q_threads == kWarp || p.q_threads / 2 * Tile::kQs < p.q_count) << at;
  const int pass_co = plan.threads / p.q_threads * Tile::kCos;
  if (plan.threads == kRowNarrowThreads) EXPECT_EQ(p.co_block, 8) << at;
  // Whole passes of 16-byte weight rows, and no pass that is only padding.
  EXPECT_EQ(p.co_block % pass_co, 0) << at;
  EXPECT_EQ(p.co_block % 4, 0) << at;
  EXPECT_LT(p.co_block - pass_co, std::min(p.cout_g, kRowMaxCoBlock)) << at;
  EXPECT_EQ(p.co_pad, p.co_block * p.co_blocks_per_group) << at;
  // Every channel of a group in exactly one block, every block with a channel.
  std::vector<int> seen(static_cast<size_t>(p.cout_g), 0);
  for (int cb = 0; cb < p.co_blocks_per_group; ++cb) {
    const int co0 = cb * p.co_block, count = std::min(p.co_block, p.cout_g - co0);
    EXPECT_GT(count, 0) << at << " block " << cb;
    for (int c = co0; c < co0 + count; ++c) ++seen[static_cast<size_t>(c)];
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), p.cout_g) << at;
  EXPECT_EQ(plan.grid.x, static_cast<unsigned>(p.groups * p.co_blocks_per_group)) << at;
  EXPECT_EQ(plan.grid.y, static_cast<unsigned>(p.out_h)) << at;
  EXPECT_EQ(plan.grid.z, static_cast<unsigned>(l.batch)) << at;
  EXPECT_EQ(plan.smem_bytes, static_cast<size_t>(smem_layout(plan).floats) * sizeof(float)) << at;
  EXPECT_EQ(plan.weight_floats, int64_t{p.groups} * p.k_h * p.cin_g * 3 * p.co_pad) << at;
  // z rows hold every computed column (margins, 16-byte shift of up to 3) within z_stride.
  const int64_t last = int64_t{p.q_min + p.q_count - 1} * 5 - p.pad_w + 4;
  EXPECT_GE(int64_t{p.q_min} * 5 - p.pad_w + kZMargin<5>, 0) << at;
  EXPECT_LT(kZMargin<5> + 3 + last, p.z_stride) << at;
}

TEST(RowGatherPlan, NarrowBlockExactlyForFewChannelsAndOneWarpOfPositions) {
  std::mt19937 rng(20261206);
  int narrow = 0, wide = 0;
  for (int i = 0; i < 3000; ++i) {
    const Layer l = random_layer(rng, i % 2 == 0 ? 8 : 72, 40);  // half with few channels
    const RowGatherPlan plan = planned(l, int64_t{1} << 30);     // the rule, not the device's limit
    if (HasFailure()) return;
    expect_consistent(l, plan);
    ++(plan.threads == kRowNarrowThreads ? narrow : wide);
  }
  EXPECT_GT(narrow, 300);  // both sides of the rule drawn
  EXPECT_GT(wide, 300);
}

// The measured shapes (the brief's H100 table): the two misses and the other few-channel ones
// take the narrow block; C_out 12 and the full preset keep the 256-thread plan they had.
TEST(RowGatherPlan, TheMeasuredShapesTakeTheBlockTheRuleGives) {
  const RowGatherPlan few_out = planned(row_layer(10, 25, 7, 47, 25));
  EXPECT_EQ(few_out.threads, 64);
  EXPECT_EQ(few_out.params.q_count, 25);
  EXPECT_EQ(few_out.params.co_block, 8);
  EXPECT_EQ(few_out.smem_bytes, 9264u);  // 600 ws + 628 xs + 8 x 136 z floats
  const RowGatherPlan four_out = planned(row_layer(16, 8, 4, 64, 64));
  EXPECT_EQ(four_out.threads, 64);
  EXPECT_EQ(four_out.params.q_count, 64);
  EXPECT_EQ(four_out.smem_bytes, 13440u);  // 192 ws + 512 xs + 8 x 332 z floats
  EXPECT_EQ(planned(row_layer(3, 64, 3, 30, 50)).threads, 64);
  EXPECT_EQ(planned(row_layer(4, 16, 8, 32, 32)).threads, 64);
  const RowGatherPlan twelve = planned(row_layer(16, 32, 12, 64, 128));
  EXPECT_EQ(twelve.threads, 256);
  EXPECT_EQ(twelve.params.q_threads, 64);
  EXPECT_EQ(twelve.params.co_block, 16);
  const RowGatherPlan full = planned(row_layer(16, 32, 64, 64, 128));
  EXPECT_EQ(full.threads, 256);
  EXPECT_EQ(full.params.co_block, 64);
  EXPECT_EQ(full.smem_bytes, 4u * (32 * 3 * 64 + 32 * 128 + 16 * 652));
}

// y as row_gather_kernel<3, 5, 2, RowThreadTile, plan.threads> computes it: the prepared weights,
// then per block its row taps, staging, and per pass each thread's sums into z and the warps'
// copy of z to the output rows. Reads and writes of shared memory are bounds-checked.
class RowReplay {
 public:
  RowReplay(const RowGatherPlan& plan, const ConvTransposeGeometry& g, const std::vector<float>& x,
            const std::vector<float>& w)
      : plan_(plan), p_(plan.params), g_(g), x_(x), wp_(prepared(w)) {}

  std::vector<float> run() {
    y_.assign(static_cast<size_t>(g_.output_numel()), std::numeric_limits<float>::quiet_NaN());
    const dim3 grid = plan_.grid;
    for (int n = 0; n < static_cast<int>(grid.z); ++n)
      for (int oh = 0; oh < static_cast<int>(grid.y); ++oh)
        for (int cb = 0; cb < static_cast<int>(grid.x); ++cb) block(cb, oh, n);
    return y_;
  }
  bool out_of_bounds() const { return out_of_bounds_; }

 private:
  struct Slot {
    int th, ih;
  };

  // prepare_row_weights_kernel: wp[group][th][ci][t][co] = w[group cin_g + ci, co, th, t].
  std::vector<float> prepared(const std::vector<float>& w) const {
    std::vector<float> wp(static_cast<size_t>(plan_.weight_floats), 0.f);
    for (int64_t e = 0; e < plan_.weight_floats; ++e) {
      int64_t r = e;
      const int co = static_cast<int>(r % p_.co_pad);
      r /= p_.co_pad;
      const int t = static_cast<int>(r % 3);
      r /= 3;
      const int ci = static_cast<int>(r % p_.cin_g);
      r /= p_.cin_g;
      const int th = static_cast<int>(r % p_.k_h);
      const int64_t group = r / p_.k_h;
      if (co < p_.cout_g)
        wp[static_cast<size_t>(e)] = w[static_cast<size_t>(
            ((group * p_.cin_g + ci) * p_.cout_g + co) * (p_.k_h * 3) + th * 3 + t)];
    }
    return wp;
  }

  float& smem(int64_t i) {
    if (i < 0 || i >= static_cast<int64_t>(smem_.size())) {
      out_of_bounds_ = true;
      return scratch_;
    }
    return smem_[static_cast<size_t>(i)];
  }

  void block(int cb, int oh, int n) {
    const int group = cb / p_.co_blocks_per_group;
    const int co0 = cb % p_.co_blocks_per_group * p_.co_block;
    const int co_count = std::min(p_.co_block, p_.cout_g - co0);
    const int64_t plane = int64_t{p_.out_h} * p_.out_w;
    const int64_t co = int64_t{n} * p_.groups * p_.cout_g + group * p_.cout_g + co0;
    float* out = y_.data() + (co * p_.out_h + oh) * p_.out_w;
    std::vector<Slot> slots;  // for_each_row_tap
    const int u = oh + p_.pad_h, q = u / p_.stride_h, r = u - q * p_.stride_h;
    for (int i = 0; i < p_.tap_count[r]; ++i) {
      const int ih = q - p_.tap_back[r][i];
      if (ih >= 0 && ih < p_.in_h) slots.push_back({p_.tap_th[r][i], ih});
    }
    if (slots.empty()) {  // store_zero_rows
      for (int c = 0; c < co_count; ++c) std::fill_n(out + c * plane, p_.out_w, 0.f);
      return;
    }
    smem_.assign(plan_.smem_bytes / sizeof(float), std::numeric_limits<float>::quiet_NaN());
    const SmemLayout s = smem_layout(plan_);
    for (size_t slot = 0; slot < slots.size(); ++slot)
      stage(static_cast<int>(slot), slots[slot], n, group, co0);
    const int pass_co = plan_.threads / p_.q_threads * Tile::kCos;
    for (int pass = 0; pass < co_count; pass += pass_co) {
      for (int t = 0; t < plan_.threads; ++t)
        compute(t, static_cast<int>(slots.size()), pass, out, plane, s);
      for (int row = 0; row < pass_co && pass + row < co_count; ++row) {  // store_pass
        float* dst = out + (pass + row) * plane;
        const int64_t src = s.z + row * p_.z_stride + kZMargin<5> + phase(dst);
        for (int o = 0; o < p_.out_w; ++o) dst[o] = smem(src + o);
      }
    }
  }

  // stage_slot: xs[slot][ci][k] = x[n, c0 + ci, ih, q_min - kMaxOffset + k] (0 outside x), and
  // ws[slot][ci][t][co] = wp[group][th][ci][t][co0 + co].
  void stage(int slot, Slot sl, int n, int group, int co0) {
    const int iw0 = p_.q_min - Taps::kMaxOffset;
    const int64_t c_first = int64_t{n} * p_.groups * p_.cin_g + int64_t{group} * p_.cin_g;
    const int64_t xs = smem_layout(plan_).xs;
    for (int ci = 0; ci < p_.cin_g; ++ci)
      for (int k = 0; k < p_.x_len; ++k) {
        const int iw = iw0 + k;
        smem(xs + (slot * p_.cin_g + ci) * p_.x_len + k) =
            iw >= 0 && iw < p_.in_w
                ? x_[static_cast<size_t>(((c_first + ci) * p_.in_h + sl.ih) * p_.in_w + iw)]
                : 0.f;
      }
    const int rows = p_.cin_g * 3;
    const int64_t src = (int64_t{group} * p_.k_h + sl.th) * rows * p_.co_pad + co0;
    for (int row = 0; row < rows; ++row)
      for (int c = 0; c < p_.co_block; ++c)
        smem((slot * rows + row) * p_.co_block + c) =
            wp_[static_cast<size_t>(src + row * p_.co_pad + c)];
  }

  static int phase(const float* ptr) {
    return static_cast<int>((reinterpret_cast<uintptr_t>(ptr) >> 2) & 3);
  }

  // compute_pass and accumulate for thread t.
  void compute(int t, int slots, int pass, const float* out, int64_t plane, const SmemLayout& s) {
    constexpr int kQ = Tile::kQs, kCo = Tile::kCos;
    const int tq = t % p_.q_threads, cs = t / p_.q_threads, co_l0 = pass + cs * kCo;
    int shift[kCo];
    for (int c = 0; c < kCo; ++c)
      shift[c] = (phase(out) + (co_l0 + c) * static_cast<int>(plane & 3)) & 3;
    const int64_t zc = s.z + int64_t{cs} * kCo * p_.z_stride;
    for (int q0 = tq; q0 < p_.q_count; q0 += kQ * p_.q_threads) {
      int qi[kQ];
      for (int j = 0; j < kQ; ++j) qi[j] = std::min(q0 + j * p_.q_threads, p_.q_count - 1);
      float acc[kQ][5][kCo] = {};
      for (int row = 0; row < slots * p_.cin_g; ++row) {
        const int64_t xr = s.xs + row * p_.x_len + Taps::kMaxOffset;
        const int64_t wr = int64_t{row} * 3 * p_.co_block + co_l0;
        for (int tap = 0; tap < 3; ++tap)
          for (int j = 0; j < kQ; ++j)
            for (int c = 0; c < kCo; ++c) {
              float& a = acc[j][Taps::phase(tap)][c];
              a = std::fma(smem(xr + qi[j] - Taps::offset(tap)), smem(wr + tap * p_.co_block + c),
                           a);
            }
      }
      for (int j = 0; j < kQ; ++j) {
        if (q0 + j * p_.q_threads >= p_.q_count) break;
        const int ow0 = (p_.q_min + qi[j]) * 5 - p_.pad_w + kZMargin<5>;
        for (int r = 0; r < 5; ++r)
          for (int c = 0; c < kCo; ++c)
            smem(zc + c * p_.z_stride + shift[c] + ow0 + r) = acc[j][r][c];
      }
    }
  }

  const RowGatherPlan& plan_;
  const RowGatherParams& p_;
  const ConvTransposeGeometry& g_;
  const std::vector<float>& x_;
  const std::vector<float> wp_;
  std::vector<float> y_, smem_;
  float scratch_ = 0.f;
  bool out_of_bounds_ = false;
};

// Integer data in [-3, 3]: every partial sum is exact in fp32.
std::vector<float> small_integers(std::mt19937& rng, int64_t n) {
  std::uniform_int_distribution<int> pick(-3, 3);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& e : v) e = static_cast<float>(pick(rng));
  return v;
}

// Replays layer l's plan and checks every output against the golden model; returns the plan.
RowGatherPlan expect_golden(const Layer& l, std::mt19937& rng) {
  const ConvTransposeGeometry g = geometry(l);
  const RowGatherPlan plan = planned(l);
  if (plan.threads == 0 || plan.params.q_threads == 0) return plan;
  const std::vector<float> x = small_integers(rng, l.batch * l.c_in * l.in[1] * l.in[2]);
  const std::vector<float> w = small_integers(rng, l.c_in * l.c_out / l.groups * l.kernel[1] * 3);
  const std::vector<double> want = golden(l, x, w);
  RowReplay replay(plan, g, x, w);
  const std::vector<float> got = replay.run();
  EXPECT_FALSE(replay.out_of_bounds()) << name(l) << ": shared memory outside the plan's bytes";
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (static_cast<double>(got[i]) != want[i] && ++bad <= 3) {
      ADD_FAILURE() << name(l) << " at " << plan.threads << " threads: y[" << i << "] = " << got[i]
                    << ", golden " << want[i];
    }
  }
  EXPECT_EQ(bad, 0) << name(l);
  return plan;
}

TEST(RowGatherPlan, ReplayedSmallLayersMatchTheGoldenModelAtBothBlockSizes) {
  std::mt19937 rng(81);
  int narrow = 0, wide = 0;
  for (int i = 0; i < 80; ++i) {
    const Layer l = random_layer(rng, 20, 5);
    ++(expect_golden(l, rng).threads == kRowNarrowThreads ? narrow : wide);
  }
  EXPECT_GT(narrow, 10);
  EXPECT_GT(wide, 10);
  // The presets' shapes at batch 1: few_out (C_out 7) and four_out (a row of exactly 64
  // positions, one warp's two), narrow; C_out 12, wide.
  EXPECT_EQ(expect_golden(row_layer(1, 25, 7, 3, 25), rng).threads, 64);
  EXPECT_EQ(expect_golden(row_layer(1, 8, 4, 3, 64), rng).threads, 64);
  EXPECT_EQ(expect_golden(row_layer(1, 8, 4, 2, 65), rng).threads, 256);
  EXPECT_EQ(expect_golden(row_layer(1, 6, 12, 2, 40), rng).threads, 256);
}

}  // namespace
}  // namespace kb::custom::gather
