// The row-major cuBLAS wrappers (kernels/eager/cublas_gemm.h) against a double-precision loop:
// every combination of transposes, leading dimensions wider than the rows, alpha and beta,
// batched and single, odd sizes.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "kernels/eager/cublas_gemm.h"
#include "tests/gpu/gpu_compare.h"

namespace kb {
namespace {

using test::all_close;
using test::download;
using test::GpuTensor;
using test::random_tensor;
using test::upload;

struct GemmCase {
  GemmShape shape;
  int64_t batch;
  float alpha, beta;
  int64_t pad;  // extra columns in every stored row (leading dimension = columns + pad)
};

// Stored (rows, cols) of op(X) for X of logical (r, c) = op's input, row-major with padding.
struct Stored {
  int64_t rows, cols, ld;
  int64_t size() const { return rows * ld; }
};

Stored stored_a(const GemmCase& c) {
  const GemmShape& s = c.shape;
  return s.transpose_a ? Stored{s.k, s.m, s.m + c.pad} : Stored{s.m, s.k, s.k + c.pad};
}
Stored stored_b(const GemmCase& c) {
  const GemmShape& s = c.shape;
  return s.transpose_b ? Stored{s.n, s.k, s.k + c.pad} : Stored{s.k, s.n, s.n + c.pad};
}

// C = alpha op(A) op(B) + beta C, in double, on the stored fp32 values.
HostTensor<double> golden(const GemmCase& c, const HostTensor<float>& a, const HostTensor<float>& b,
                          const HostTensor<float>& c0) {
  const GemmShape& s = c.shape;
  const Stored sa = stored_a(c), sb = stored_b(c);
  const int64_t ldc = s.n + c.pad;
  HostTensor<double> out(c0.shape);
  for (int64_t i = 0; i < c0.numel(); ++i) out.data[i] = c0.data[i];
  for (int64_t p = 0; p < c.batch; ++p) {
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < s.k; ++k) {
          const double av = s.transpose_a ? a.data[p * sa.size() + k * sa.ld + i]
                                          : a.data[p * sa.size() + i * sa.ld + k];
          const double bv = s.transpose_b ? b.data[p * sb.size() + j * sb.ld + k]
                                          : b.data[p * sb.size() + k * sb.ld + j];
          acc += av * bv;
        }
        double& cv = out.data[p * s.m * ldc + i * ldc + j];
        cv = c.alpha * acc + c.beta * cv;
      }
    }
  }
  return out;
}

TEST(CublasGemm, RowMajorMatchesGolden) {
  std::mt19937 rng(5);
  std::vector<GemmCase> cases;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      cases.push_back({{17, 19, 23, ta, tb}, 3, 1.0f, 0.0f, 0});
      cases.push_back({{9, 33, 5, ta, tb}, 2, 0.5f, 1.0f, 3});   // accumulate, padded rows
      cases.push_back({{31, 1, 64, ta, tb}, 1, 1.0f, 0.0f, 0});  // a matrix-vector shape
    }
  }
  for (const GemmCase& c : cases) {
    const Stored sa = stored_a(c), sb = stored_b(c);
    const int64_t ldc = c.shape.n + c.pad;
    const HostTensor<float> a = random_tensor({c.batch * sa.size()}, rng);
    const HostTensor<float> b = random_tensor({c.batch * sb.size()}, rng);
    const HostTensor<float> c0 = random_tensor({c.batch * c.shape.m * ldc}, rng);
    GpuTensor ga(a.shape), gb(b.shape), gc(c0.shape);
    upload(a, ga.view);
    upload(b, gb.view);
    upload(c0, gc.view);
    const Status s =
        c.batch == 1 ? gemm(c.shape, c.alpha, ga.view.data, sa.ld, gb.view.data, sb.ld, c.beta,
                            gc.view.data, ldc, nullptr)
                     : gemm_strided_batched(c.shape, c.alpha, ga.view.data, sa.ld, sa.size(),
                                            gb.view.data, sb.ld, sb.size(), c.beta, gc.view.data,
                                            ldc, c.shape.m * ldc, c.batch, nullptr);
    ASSERT_TRUE(s.is_ok()) << s.message();
    EXPECT_TRUE(all_close(download(gc.view), golden(c, a, b, c0)))
        << "m " << c.shape.m << " n " << c.shape.n << " k " << c.shape.k << " transpose_a "
        << c.shape.transpose_a << " transpose_b " << c.shape.transpose_b << " batch " << c.batch
        << " alpha " << c.alpha << " beta " << c.beta << " pad " << c.pad;
  }
}

TEST(CublasGemm, RejectsSizesBeyondInt) {
  const GemmShape shape{int64_t{1} << 32, 1, 1, false, false};
  EXPECT_EQ(gemm(shape, 1.0f, nullptr, 1, nullptr, 1, 0.0f, nullptr, 1, nullptr).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kb
