// kernels/cores/tf32x3/gemm128.cuh (the 128 x 128 x 32 tile of L1_003, L3_025 and the conv2d
// cores), run on the host: one CTA tile emulated through the tile's own maps, with the
// m16n8k8 fragment layout of the PTX ISA. Global A and B go to the shared stages by the copy
// slots (vector and scalar paths), the warps' fragments are read by the fragment maps, each
// warp's MMAs are formed from its 32 lanes' fragments, and C leaves by the store maps; the result
// must be A x B exactly (small integers, so every sum is exact), with nothing stored twice.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "kernels/cores/tf32x3/gemm128.cuh"

namespace kb::custom::gemm128 {
namespace {

struct Stages {
  std::vector<double> a, b;  // [stage][kStageFloatsA], [stage][kStageFloatsB]
};

// A (m x k) and B (k x n) row-major, values small integers; the tile at (0, 0).
Stages stage(const std::vector<double>& a, const std::vector<double>& b, int m, int n, int k,
             bool vector_path, std::vector<int>& a_writes, std::vector<int>& b_writes) {
  const int stages = (k + kBK - 1) / kBK;
  Stages s{std::vector<double>(static_cast<size_t>(stages) * kStageFloatsA, -1e300),
           std::vector<double>(static_cast<size_t>(stages) * kStageFloatsB, -1e300)};
  a_writes.assign(s.a.size(), 0);
  b_writes.assign(s.b.size(), 0);
  const auto at_a = [&](int row, int col) {
    return row < m && col < k ? a[static_cast<size_t>(row) * k + col] : 0.0;  // zero fill
  };
  const auto at_b = [&](int row, int col) {
    return row < k && col < n ? b[static_cast<size_t>(row) * n + col] : 0.0;
  };
  for (int st = 0; st < stages; ++st) {
    const int k0 = st * kBK;
    double* sa = s.a.data() + static_cast<size_t>(st) * kStageFloatsA;
    double* sb = s.b.data() + static_cast<size_t>(st) * kStageFloatsB;
    int* wa = a_writes.data() + static_cast<size_t>(st) * kStageFloatsA;
    int* wb = b_writes.data() + static_cast<size_t>(st) * kStageFloatsB;
    for (int tid = 0; tid < kThreads; ++tid) {
      if (vector_path) {
        for (int j = 0; j < 4; ++j) {
          const CopySlot ca = a_copy_vec(tid, j), cb = b_copy_vec(tid, j);
          for (int e = 0; e < 4; ++e) {
            sa[ca.smem + e] = at_a(ca.row, k0 + ca.col + e), ++wa[ca.smem + e];
            sb[cb.smem + e] = at_b(k0 + cb.row, cb.col + e), ++wb[cb.smem + e];
          }
        }
      } else {
        for (int j = 0; j < 16; ++j) {
          const CopySlot ca = a_copy_scalar(tid, j), cb = b_copy_scalar(tid, j);
          sa[ca.smem] = at_a(ca.row, k0 + ca.col), ++wa[ca.smem];
          sb[cb.smem] = at_b(k0 + cb.row, cb.col), ++wb[cb.smem];
        }
      }
    }
  }
  return s;
}

// The tile's C (kBM x kBN) through the fragment and store maps; stores[] counts per element.
std::vector<double> tile(const Stages& s, int stages, std::vector<int>& stores) {
  std::vector<double> c(static_cast<size_t>(kBM) * kBN, 0.0);
  stores.assign(c.size(), 0);
  for (int warp = 0; warp < kThreads / 32; ++warp) {
    const int warp_m = warp % kWarpsM, warp_n = warp / kWarpsM;  // as warp_pos()
    // acc[lane][mt][nt][e]: the m16n8 accumulators c0..c3 of each lane
    std::vector<std::array<double, 4>> acc(32 * kMmaTilesM * kMmaTilesN, {0, 0, 0, 0});
    for (int st = 0; st < stages; ++st) {
      const double* sa = s.a.data() + static_cast<size_t>(st) * kStageFloatsA;
      const double* sb = s.b.data() + static_cast<size_t>(st) * kStageFloatsB;
      for (int ks = 0; ks < kKSteps; ++ks)
        for (int mt = 0; mt < kMmaTilesM; ++mt)
          for (int nt = 0; nt < kMmaTilesN; ++nt) {
            // The m16n8k8 operands as the warp's lanes hold them: a0 (g, t), a1 (g + 8, t),
            // a2 (g, t + 4), a3 (g + 8, t + 4); b0 (k t, n g), b1 (k t + 4, n g).
            double a_tile[16][8], b_tile[8][8];
            for (int lane = 0; lane < 32; ++lane) {
              const int g = lane / 4, t = lane % 4;
              const int lo = a_frag_index(warp_m, lane, ks, mt, 0);
              const int hi = a_frag_index(warp_m, lane, ks, mt, 1);
              a_tile[g][t] = sa[lo], a_tile[g][t + 4] = sa[lo + 1];
              a_tile[g + 8][t] = sa[hi], a_tile[g + 8][t + 4] = sa[hi + 1];
              b_tile[t][g] = sb[b_frag_index(warp_n, lane, ks, 0) + nt];
              b_tile[t + 4][g] = sb[b_frag_index(warp_n, lane, ks, 1) + nt];
            }
            for (int lane = 0; lane < 32; ++lane) {
              const int g = lane / 4, t = lane % 4;
              std::array<double, 4>& d = acc[(lane * kMmaTilesM + mt) * kMmaTilesN + nt];
              for (int kk = 0; kk < 8; ++kk) {
                d[0] += a_tile[g][kk] * b_tile[kk][2 * t];  // c0 (g, 2t), c1 (g, 2t + 1)
                d[1] += a_tile[g][kk] * b_tile[kk][2 * t + 1];
                d[2] += a_tile[g + 8][kk] * b_tile[kk][2 * t];  // c2, c3: row g + 8
                d[3] += a_tile[g + 8][kk] * b_tile[kk][2 * t + 1];
              }
            }
          }
    }
    // The store: vec 0 of row half h holds c_{2h} of n-tiles 0..3, vec 1 holds c_{2h + 1}.
    for (int lane = 0; lane < 32; ++lane)
      for (int mt = 0; mt < kMmaTilesM; ++mt)
        for (int half = 0; half < 2; ++half)
          for (int vec = 0; vec < 2; ++vec)
            for (int nt = 0; nt < kMmaTilesN; ++nt) {
              const size_t at = static_cast<size_t>(c_row(warp_m, lane, mt, half)) * kBN +
                                c_col(warp_n, lane, vec) + nt;
              c[at] = acc[(lane * kMmaTilesM + mt) * kMmaTilesN + nt][2 * half + vec];
              ++stores[at];
            }
  }
  return c;
}

void check(int m, int n, int k, bool vector_path) {
  std::vector<double> a(static_cast<size_t>(m) * k), b(static_cast<size_t>(k) * n);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<double>(static_cast<int>(i * 7 % 13) - 6);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = static_cast<double>(static_cast<int>(i * 5 % 11) - 5);
  std::vector<int> a_writes, b_writes, stores;
  const int stages = (k + kBK - 1) / kBK;
  const Stages s = stage(a, b, m, n, k, vector_path, a_writes, b_writes);
  for (int w : a_writes) ASSERT_EQ(w, 1) << "every A stage element written once";
  for (int w : b_writes) ASSERT_EQ(w, 1) << "every B stage element written once";
  const std::vector<double> c = tile(s, stages, stores);
  for (int row = 0; row < kBM; ++row)
    for (int col = 0; col < kBN; ++col) {
      const size_t at = static_cast<size_t>(row) * kBN + col;
      ASSERT_EQ(stores[at], 1) << "C(" << row << ", " << col << ") stored " << stores[at];
      double want = 0.0;
      if (row < m && col < n)
        for (int kk = 0; kk < k; ++kk)
          want += a[static_cast<size_t>(row) * k + kk] * b[static_cast<size_t>(kk) * n + col];
      ASSERT_EQ(c[at], want) << "C(" << row << ", " << col << ") m " << m << " n " << n << " k "
                             << k << (vector_path ? " vector" : " scalar");
    }
}

TEST(Gemm128Maps, AFullTileIsAxB) {
  check(kBM, kBN, 2 * kBK, true);
  check(kBM, kBN, 2 * kBK, false);
}

TEST(Gemm128Maps, APartialTileIsAxBWithTheRestZero) {
  check(100, 90, 40, true);  // the vector path's shapes have K, N % 4 == 0
  check(77, 61, 45, false);
}

}  // namespace
}  // namespace kb::custom::gemm128
