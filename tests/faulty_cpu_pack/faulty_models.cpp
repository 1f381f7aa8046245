// The models of the faulty CPU pack (see CMakeLists.txt here): three problems whose `cpu_fp32`
// ("custom" on the CPU device) variant misbehaves on purpose, for the fleet's fault tests.
//   L1_098: the custom variant segfaults            -> the job's result is `crashed`
//   L1_003: the custom variant never returns        -> the job's result is `timeout`
//   L2_093: the custom variant equals the reference -> `ok` (the control)
// The "golden" side of these models is an all-zeros tensor of the output's shape: this pack tests
// the worker's handling of dying and hanging children, not numerics.
#include <signal.h>
#include <unistd.h>

#include "kernels/cpu_model.h"

namespace kb::faulty {
namespace {

template <typename T>
HostTensor<T> zeros(const ProblemInstance& p, const TensorSet&) {
  return HostTensor<T>(p.output_shape());
}

HostTensor<float> segfaults(const ProblemInstance&, const TensorSet&) {
  ::raise(SIGSEGV);
  return {};
}

HostTensor<float> hangs(const ProblemInstance&, const TensorSet&) {
  for (;;) ::pause();
}

[[maybe_unused]] const bool kRegistered =
    register_cpu_model(CpuModel{"L1_098", &zeros<double>, &segfaults}) &&
    register_cpu_model(CpuModel{"L1_003", &zeros<double>, &hangs}) &&
    register_cpu_model(CpuModel{"L2_093", &zeros<double>, &zeros<float>});

}  // namespace
}  // namespace kb::faulty
