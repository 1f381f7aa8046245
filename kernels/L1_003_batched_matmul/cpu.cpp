// L1_003 golden model: torch.bmm(A, B).
#include "kernels/cpu/ops.h"
#include "kernels/cpu_model.h"

namespace kb::cpu::L1_003 {

template <typename T>
HostTensor<T> forward(const ProblemInstance&, const TensorSet& t) {
  const auto a = cast<T>(t.get("A"));  // a: (batch, M, K)
  const auto b = cast<T>(t.get("B"));  // b: (batch, K, N)
  return bmm(a, b);                    // c: (batch, M, N)
}

}  // namespace kb::cpu::L1_003

KB_REGISTER_CPU_MODEL(L1_003)
