// Row-major SGEMMs on cuBLAS's column-major API: a row-major (r, c) matrix with leading dimension
// ld is, in memory, the column-major (c, r) matrix with the same ld. So row-major
// C (m, n) = op(A) @ op(B) is column-major C^T (n, m) = op(B)^T @ op(A)^T: cuBLAS gets B first,
// then A, with m and n swapped and each operand's transpose flag kept as given.
#include "kernels/eager/cublas_gemm.h"

#include <climits>
#include <string>

#include "kernels/eager/library_handles.h"

namespace kb {
namespace {

// cublasSgemm(StridedBatched) takes int sizes and leading dimensions, as PyTorch's bgemm does.
Status check_int_range(const GemmShape& shape, int64_t lda, int64_t ldb, int64_t ldc,
                       int64_t batch) {
  for (int64_t v : {shape.m, shape.n, shape.k, lda, ldb, ldc, batch}) {
    if (v < 0 || v > INT_MAX) {
      return Status::invalid_argument(
          "gemm: m=" + std::to_string(shape.m) + " n=" + std::to_string(shape.n) +
          " k=" + std::to_string(shape.k) + " lda=" + std::to_string(lda) +
          " ldb=" + std::to_string(ldb) + " ldc=" + std::to_string(ldc) +
          " batch=" + std::to_string(batch) + ": every value must lie in [0, INT_MAX]");
    }
  }
  return Status::ok();
}

cublasOperation_t op(bool transpose) {
  return transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
}

Result<cublasHandle_t> handle_on(cudaStream_t stream) {
  Result<cublasHandle_t> handle = cublas_handle();
  if (!handle.is_ok()) return handle;
  Status s = cublas_status(cublasSetStream(handle.value(), stream),
                           "cublasSetStream(handle, stream)", __FILE__, __LINE__);
  if (!s.is_ok()) return s;
  return handle;
}

}  // namespace

Status gemm_strided_batched(const GemmShape& shape, float alpha, const float* a, int64_t lda,
                            int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b,
                            float beta, float* c, int64_t ldc, int64_t stride_c, int64_t batch,
                            cudaStream_t stream) {
  KB_TRY(check_int_range(shape, lda, ldb, ldc, batch));
  if (shape.m == 0 || shape.n == 0 || batch == 0) return Status::ok();
  Result<cublasHandle_t> handle = handle_on(stream);
  if (!handle.is_ok()) return handle.status();
  KB_CUBLAS_TRY(cublasSgemmStridedBatched(
      handle.value(), op(shape.transpose_b), op(shape.transpose_a), static_cast<int>(shape.n),
      static_cast<int>(shape.m), static_cast<int>(shape.k), &alpha, b, static_cast<int>(ldb),
      stride_b, a, static_cast<int>(lda), stride_a, &beta, c, static_cast<int>(ldc), stride_c,
      static_cast<int>(batch)));
  return Status::ok();
}

Status gemm(const GemmShape& shape, float alpha, const float* a, int64_t lda, const float* b,
            int64_t ldb, float beta, float* c, int64_t ldc, cudaStream_t stream) {
  KB_TRY(check_int_range(shape, lda, ldb, ldc, 1));
  if (shape.m == 0 || shape.n == 0) return Status::ok();
  Result<cublasHandle_t> handle = handle_on(stream);
  if (!handle.is_ok()) return handle.status();
  // cublasSgemm, not a batch of one: the kernel PyTorch's torch.mm / F.linear reach for 2-D.
  KB_CUBLAS_TRY(cublasSgemm(handle.value(), op(shape.transpose_b), op(shape.transpose_a),
                            static_cast<int>(shape.n), static_cast<int>(shape.m),
                            static_cast<int>(shape.k), &alpha, b, static_cast<int>(ldb), a,
                            static_cast<int>(lda), &beta, c, static_cast<int>(ldc)));
  return Status::ok();
}

}  // namespace kb
