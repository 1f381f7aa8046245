#include "worker/launch_tracer.h"

#include <cupti.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/device/cuda_check.h"

namespace kb {
namespace {

struct Activity {
  bool kernel = false;
  uint32_t stream_id = 0;
  std::string name;
};

std::mutex g_mutex;
std::vector<Activity> g_activities;

constexpr size_t kBufferBytes = 4 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_size) {
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(record);
      g_activities.push_back({true, k->streamId, k->name ? k->name : ""});
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      g_activities.push_back({false, reinterpret_cast<CUpti_ActivityMemcpy6*>(record)->streamId, "memcpy"});
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      g_activities.push_back({false, reinterpret_cast<CUpti_ActivityMemset4*>(record)->streamId, "memset"});
    }
  }
  std::free(buffer);
}

Status cupti_status(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return Status::ok();
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  return Status::internal(std::string(what) + ": " + (text ? text : "CUPTI error"));
}

const CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                     CUPTI_ACTIVITY_KIND_MEMSET};

}  // namespace

bool is_own_kernel_name(const char* name) {
  // The eager ops (kb::eager) are the references' building blocks: a custom variant that only
  // calls them has written nothing of its own.
  if (std::strstr(name, "N2kb5eager") != nullptr) return false;
  return std::strncmp(name, "_ZN2kb", 6) == 0 || std::strstr(name, "N2kb") != nullptr;
}

Status LaunchTracer::begin() {
  KB_CUDA_TRY(cudaDeviceSynchronize());  // nothing earlier may land in the window
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_activities.clear();
  }
  static bool registered = false;
  if (!registered) {
    if (Status s = cupti_status(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
                                "cuptiActivityRegisterCallbacks");
        !s.is_ok()) {
      return s;
    }
    registered = true;
  }
  for (CUpti_ActivityKind kind : kKinds) {
    if (Status s = cupti_status(cuptiActivityEnable(kind), "cuptiActivityEnable"); !s.is_ok()) return s;
  }
  return Status::ok();
}

Result<LaunchTrace> LaunchTracer::end(cudaStream_t job_stream) {
  KB_CUDA_TRY(cudaDeviceSynchronize());
  for (CUpti_ActivityKind kind : kKinds) cuptiActivityDisable(kind);
  if (Status s = cupti_status(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
      !s.is_ok()) {
    return s;
  }
  // A null context: CUPTI takes the stream's own (and kb-executor needs no libcuda to load).
  uint32_t job_stream_id = 0;
  if (Status s = cupti_status(cuptiGetStreamIdEx(nullptr, job_stream, 0, &job_stream_id), "cuptiGetStreamIdEx");
      !s.is_ok()) {
    return s;
  }
  LaunchTrace trace;
  trace.available = true;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const Activity& a : g_activities) {
    if (a.stream_id != job_stream_id) ++trace.foreign_stream_activities;
    if (!a.kernel) continue;
    (is_own_kernel_name(a.name.c_str()) ? trace.own_kernels : trace.library_kernels) += 1;
    if (trace.kernel_names.size() < 32) trace.kernel_names.push_back(a.name);
  }
  return trace;
}

}  // namespace kb
