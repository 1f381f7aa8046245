// Bad variant (e), L1_003: the whole "custom" call is one cuBLAS strided-batched SGEMM (what the
// reference does) and no kernel of its own. Correct numbers; expected verdict: no_custom_kernel.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/eager/cublas_gemm.h"
#include "kernels/implementation.h"

namespace kb::bad::cublas_only {

class CublasOnly final : public Implementation {
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
    // C: (batch, M, N) = A: (batch, M, K) @ B: (batch, K, N)
    return gemm_strided_batched(shape_, 1.0f, args.inputs[a_].data, k, m * k, args.inputs[b_].data,
                                n, k * n, 0.0f, args.output.data, n, m * n, batch_, stream);
  }

 private:
  size_t a_ = 0, b_ = 0;
  int64_t batch_ = 0;
  GemmShape shape_;
};

}  // namespace kb::bad::cublas_only

KB_REGISTER_IMPLEMENTATION(L1_003, custom, kb::bad::cublas_only::CublasOnly)
