// L1_003 reference: torch.bmm(A, B) as PyTorch eager runs it with allow_tf32 = False: one cuBLAS
// strided-batched SGEMM in strict fp32.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/device/cublas_gemm.h"
#include "kernels/implementation.h"

namespace kb::ref::L1_003 {

class Reference final : public Implementation {
 public:
  Status setup(const ProblemInstance& p, cudaStream_t) override {
    a_ = input_index(p, "A");
    b_ = input_index(p, "B");
    const Shape& a = p.shape_of("A");  // (batch, M, K)
    const Shape& b = p.shape_of("B");  // (batch, K, N)
    batch_ = a[0];
    shape_.m = a[1];
    shape_.n = b[2];
    shape_.k = a[2];
    return Status::ok();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const int64_t m = shape_.m, n = shape_.n, k = shape_.k;
    // C: (batch, M, N) = A: (batch, M, K) @ B: (batch, K, N), all dense row-major
    return gemm_strided_batched(shape_, 1.0f, args.inputs[a_].data, /*lda=*/k, m * k,
                                args.inputs[b_].data, /*ldb=*/n, k * n, 0.0f, args.output.data,
                                /*ldc=*/n, m * n, batch_, stream);
  }

 private:
  size_t a_ = 0, b_ = 0;
  int64_t batch_ = 0;
  GemmShape shape_;
};

}  // namespace kb::ref::L1_003

KB_REGISTER_IMPLEMENTATION(L1_003, reference, kb::ref::L1_003::Reference)
