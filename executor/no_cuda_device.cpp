// make_cuda_device and describe_cuda_device for builds without a CUDA toolkit.
#include "executor/device_identity.h"
#include "executor/execution_device.h"

namespace kb {

Result<std::unique_ptr<ExecutionDevice>> make_cuda_device(const KernelPack&, const KernelPack&,
                                                          int) {
  return Status::failed_precondition("this build of kbfleet has no CUDA support");
}

Result<nlohmann::json> describe_cuda_device(int) {
  return Status::failed_precondition("this build of kbfleet has no CUDA support");
}

}  // namespace kb
