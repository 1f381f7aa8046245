// Per-thread, per-device cuDNN and cuBLAS handles, and the libraries' error statuses.
#include "kernels/eager/library_handles.h"

#include <cstdio>
#include <map>

#include "common/cuda/cuda_check.h"

namespace kb {
namespace {

// The handles of one host thread, by device. Destroyed when the thread exits: thread_local
// destructors run before the CUDA runtime's own teardown at process exit, so the context is still
// alive here.
class ThreadHandles {
 public:
  ThreadHandles() = default;
  ThreadHandles(const ThreadHandles&) = delete;
  ThreadHandles& operator=(const ThreadHandles&) = delete;
  ~ThreadHandles() {
    for (const auto& [device, handle] : cudnn_) {
      if (cudnnDestroy(handle) != CUDNN_STATUS_SUCCESS)
        std::fprintf(stderr, "kbfleet: cudnnDestroy failed on device %d\n", device);
    }
    for (const auto& [device, handle] : cublas_) {
      if (cublasDestroy(handle) != CUBLAS_STATUS_SUCCESS)
        std::fprintf(stderr, "kbfleet: cublasDestroy failed on device %d\n", device);
    }
  }

  std::map<int, cudnnHandle_t>& cudnn() { return cudnn_; }
  std::map<int, cublasHandle_t>& cublas() { return cublas_; }

 private:
  std::map<int, cudnnHandle_t> cudnn_;
  std::map<int, cublasHandle_t> cublas_;
};

thread_local ThreadHandles t_handles;

Result<int> current_device() {
  int device = 0;
  Status s = cuda_status(cudaGetDevice(&device), "cudaGetDevice(&device)", __FILE__, __LINE__);
  if (!s.is_ok()) return s;
  return device;
}

Status create_cudnn(cudnnHandle_t* handle) {
  KB_CUDNN_TRY(cudnnCreate(handle));
  return Status::ok();
}

Status create_cublas(cublasHandle_t* handle) {
  KB_CUBLAS_TRY(cublasCreate(handle));
  // PyTorch with allow_tf32 = False: fp32 GEMMs stay fp32 (no TF32 tensor cores).
  Status s = cublas_status(cublasSetMathMode(*handle, CUBLAS_DEFAULT_MATH),
                           "cublasSetMathMode(*handle, CUBLAS_DEFAULT_MATH)", __FILE__, __LINE__);
  if (!s.is_ok()) {
    cublasDestroy(*handle);  // best effort: the math-mode failure is the error to report
    return s;
  }
  return Status::ok();
}

}  // namespace

Result<cudnnHandle_t> cudnn_handle() {
  Result<int> device = current_device();
  if (!device.is_ok()) return device.status();
  auto& handles = t_handles.cudnn();
  auto it = handles.find(device.value());
  if (it != handles.end()) return it->second;
  cudnnHandle_t handle = nullptr;
  KB_TRY(create_cudnn(&handle));
  handles.emplace(device.value(), handle);
  return handle;
}

Result<cublasHandle_t> cublas_handle() {
  Result<int> device = current_device();
  if (!device.is_ok()) return device.status();
  auto& handles = t_handles.cublas();
  auto it = handles.find(device.value());
  if (it != handles.end()) return it->second;
  cublasHandle_t handle = nullptr;
  KB_TRY(create_cublas(&handle));
  handles.emplace(device.value(), handle);
  return handle;
}

Status cudnn_status(cudnnStatus_t status, const char* expr, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return Status::ok();
  // cuDNN 9 keeps a per-thread detail message for the last failure; it names the bad parameter.
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof(detail));
  std::string message = std::string(expr) + " failed at " + file + ":" + std::to_string(line) +
                        ": " + cudnnGetErrorString(status);
  if (detail[0] != '\0') message += std::string(" (") + detail + ")";
  // "This configuration is not supported" is an expected outcome for a spec shape, not a bug.
  if (CUDNN_STATUS_CATEGORY(status) == CUDNN_STATUS_NOT_SUPPORTED)
    return Status::failed_precondition(message);
  return Status::internal(message);
}

void cudnn_warn(cudnnStatus_t status, const char* expr, const char* file, int line) {
  const Status s = cudnn_status(status, expr, file, line);
  if (!s.is_ok()) std::fprintf(stderr, "kbfleet: %s\n", s.message().c_str());
}

Status cublas_status(cublasStatus_t status, const char* expr, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::ok();
  std::string message = std::string(expr) + " failed at " + file + ":" + std::to_string(line) +
                        ": " + cublasGetStatusString(status);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) return Status::failed_precondition(message);
  return Status::internal(message);
}

}  // namespace kb
