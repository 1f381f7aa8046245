// Row-major fp32 GEMMs through cuBLAS in strict fp32 (CUBLAS_DEFAULT_MATH: no TF32), as
// torch.bmm / torch.matmul / F.linear run them with allow_tf32 = False.
//
// All matrices are row-major, as PyTorch stores them; the wrapper maps them onto cuBLAS's
// column-major convention (C^T = B^T A^T) so callers never transpose by hand.
//
// Thread safety: uses the calling thread's cuBLAS handle (library_handles.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace kb {

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool transpose_a = false;  // A is stored (k, m) and used as its transpose
  bool transpose_b = false;  // B is stored (n, k) and used as its transpose
};

// C (m, n) = alpha * op(A) (m, k) @ op(B) (k, n) + beta * C, for `batch` matrices spaced by the
// given strides (in elements). Leading dimensions are those of the stored row-major matrices.
Status gemm_strided_batched(const GemmShape& shape, float alpha, const float* a, int64_t lda,
                            int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b,
                            float beta, float* c, int64_t ldc, int64_t stride_c, int64_t batch,
                            cudaStream_t stream);

// The single-matrix form.
Status gemm(const GemmShape& shape, float alpha, const float* a, int64_t lda, const float* b,
            int64_t ldb, float beta, float* c, int64_t ldc, cudaStream_t stream);

}  // namespace kb
