// cuDNN and cuBLAS handles and their single error check.
//
// One handle of each library per host thread and device, created on first use and kept for the
// thread's life (creating a cuDNN handle costs tens of milliseconds; PyTorch caches them the same
// way). Callers set the stream on the handle before each call (cudnnSetStream / cublasSetStream).
// The cuBLAS handle is in CUBLAS_DEFAULT_MATH mode, which never uses TF32 for fp32 GEMMs.
//
// KB_CUDNN_TRY / KB_CUBLAS_TRY: inside a function returning kb::Status, return a Status naming the
// expression, file, line and the library's message on failure. KB_CUDNN_WARN (destructors and
// cleanup): logs such a failure to stderr and goes on.
//
// Thread safety: the handles belong to the calling thread.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>

#include <string>

#include "common/status.h"

namespace kb {

Result<cudnnHandle_t> cudnn_handle();
Result<cublasHandle_t> cublas_handle();

Status cudnn_status(cudnnStatus_t status, const char* expr, const char* file, int line);
Status cublas_status(cublasStatus_t status, const char* expr, const char* file, int line);
void cudnn_warn(cudnnStatus_t status, const char* expr, const char* file, int line);

}  // namespace kb

#define KB_CUDNN_TRY(expr)                                                               \
  do {                                                                                   \
    ::kb::Status kb_lib_status_ = ::kb::cudnn_status((expr), #expr, __FILE__, __LINE__); \
    if (!kb_lib_status_.is_ok()) return kb_lib_status_;                                  \
  } while (0)

#define KB_CUBLAS_TRY(expr)                                                               \
  do {                                                                                    \
    ::kb::Status kb_lib_status_ = ::kb::cublas_status((expr), #expr, __FILE__, __LINE__); \
    if (!kb_lib_status_.is_ok()) return kb_lib_status_;                                   \
  } while (0)

#define KB_CUDNN_WARN(expr) ::kb::cudnn_warn((expr), #expr, __FILE__, __LINE__)
