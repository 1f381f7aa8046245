#include "executor/launch_tracer.h"

#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/cuda/cuda_check.h"

namespace kb {
namespace {

// Where an API call came from: a call index (>= 0) or one of these.
constexpr int kHarness = -1;      // the executor's thread, between calls
constexpr int kOtherThread = -2;  // any other host thread

struct Origin {
  int call = kHarness;
  const char* api = "";  // CUPTI's function names are global constants
};

struct Record {
  const char* kind = "";  // "kernel", "memcpy", "memset"
  uint32_t stream = 0, correlation = 0;
  uint64_t start = 0, end = 0;  // ns, CUPTI's clock
  std::string name;
};

struct State {
  std::mutex mutex;  // guards records, origins, calls
  std::vector<Record> records;
  std::unordered_map<uint32_t, Origin> origins;
  std::vector<Slot> calls;
  std::thread::id executor;
  std::atomic<bool> active{false};
  std::atomic<int> open_call{kHarness};
  CUpti_SubscriberHandle subscriber = nullptr;
};

// Never destroyed: CUPTI may deliver buffers while the process exits.
State& state() {
  static State* s = new State;
  return *s;
}

constexpr size_t kBufferBytes = 4 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid_size) {
  CUpti_Activity* record = nullptr;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(record);
      s.records.push_back(
          {"kernel", k->streamId, k->correlationId, k->start, k->end, k->name ? k->name : ""});
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(record);
      s.records.push_back({"memcpy", m->streamId, m->correlationId, m->start, m->end, "memcpy"});
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(record);
      s.records.push_back({"memset", m->streamId, m->correlationId, m->start, m->end, "memset"});
    }
  }
  std::free(buffer);
}

// Every runtime and driver API call, on entry: which call (or thread) it belongs to.
void CUPTIAPI on_api_call(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  State& s = state();
  if (cb->callbackSite != CUPTI_API_ENTER || !s.active.load(std::memory_order_acquire)) return;
  Origin origin;
  if (std::this_thread::get_id() == s.executor) {
    origin.call = s.open_call.load(std::memory_order_relaxed);
  } else {
    origin.call = kOtherThread;
    origin.api = cb->functionName ? cb->functionName : "";
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  s.origins.emplace(cb->correlationId, origin);
}

Status cupti_status(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return Status::ok();
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  return Status::internal(std::string(what) + ": " + (text ? text : "CUPTI error"));
}

const CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                     CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};
const CUpti_CallbackDomain kDomains[] = {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API};

Status register_once(State& s) {
  if (s.subscriber) return Status::ok();
  KB_TRY(cupti_status(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
                      "cuptiActivityRegisterCallbacks"));
  return cupti_status(cuptiSubscribe(&s.subscriber, on_api_call, nullptr),
                      "cuptiSubscribe (is a profiler holding CUPTI? see --no-launch-trace)");
}

std::string describe(const Record& r, uint32_t job_stream) {
  return std::string(r.kind) + (std::strcmp(r.kind, "kernel") == 0 ? " " + r.name : "") +
         " on stream " + std::to_string(r.stream) + " (job stream " + std::to_string(job_stream) +
         ")";
}

// Folds the records into per-call summaries (caller holds the state's mutex).
LaunchTrace summarize_trace(const State& s, uint32_t job_stream) {
  LaunchTrace trace;
  trace.available = true;
  for (Slot slot : s.calls) {
    trace.calls.emplace_back();
    trace.calls.back().slot = slot;
  }
  std::vector<uint64_t> last_job_end(s.calls.size(), 0);
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> intervals(s.calls.size());
  std::vector<std::vector<const Record*>> off_stream(s.calls.size());
  for (const Record& r : s.records) {
    auto it = s.origins.find(r.correlation);
    if (it == s.origins.end()) {
      trace.stray.push_back(describe(r, job_stream) + ", with no launching API call recorded");
      continue;
    }
    const Origin& origin = it->second;
    if (origin.call == kOtherThread) {
      trace.stray.push_back(describe(r, job_stream) + ", launched by another host thread (" +
                            origin.api + ")");
      continue;
    }
    if (origin.call < 0 || origin.call >= static_cast<int>(trace.calls.size()))
      continue;  // the harness's
    CallTrace& call = trace.calls[static_cast<size_t>(origin.call)];
    const double ms = static_cast<double>(r.end - r.start) * 1e-6;
    call.total_gpu_ms += ms;
    intervals[static_cast<size_t>(origin.call)].emplace_back(r.start, r.end);
    if (std::strcmp(r.kind, "kernel") == 0) {
      const bool own = is_own_kernel_name(r.name.c_str());
      (own ? call.own_kernels : call.library_kernels) += 1;
      if (own) call.own_gpu_ms += ms;
      if (call.kernel_names.size() < 32) call.kernel_names.push_back(r.name);
    }
    if (r.stream == job_stream) {
      last_job_end[static_cast<size_t>(origin.call)] =
          std::max(last_job_end[static_cast<size_t>(origin.call)], r.end);
    } else {
      off_stream[static_cast<size_t>(origin.call)].push_back(&r);
    }
  }
  for (size_t i = 0; i < trace.calls.size(); ++i) {
    trace.calls[i].busy_ms =
        static_cast<double>(interval_union_length(std::move(intervals[i]))) * 1e-6;
    for (const Record* r : off_stream[i]) {
      std::string text = describe(*r, job_stream);
      if (r->end > last_job_end[i]) text += ", ending after the call's last job-stream work";
      trace.calls[i].foreign.push_back(std::move(text));
    }
  }
  return trace;
}

}  // namespace

uint64_t interval_union_length(std::vector<std::pair<uint64_t, uint64_t>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  uint64_t total = 0, covered_to = 0;
  for (const auto& [start, end] : intervals) {
    const uint64_t from = std::max(start, covered_to);
    if (end > from) total += end - from;
    covered_to = std::max(covered_to, end);
  }
  return total;
}

bool is_own_kernel_name(const char* name) {
  // The eager ops (kb::eager) are the references' building blocks: a custom variant that only
  // calls them has written nothing of its own.
  if (std::strstr(name, "N2kb5eager") != nullptr) return false;
  return std::strncmp(name, "_ZN2kb", 6) == 0 || std::strstr(name, "N2kb") != nullptr;
}

Status LaunchTracer::begin() {
  KB_CUDA_TRY(cudaDeviceSynchronize());  // nothing earlier may land in the window
  State& s = state();
  KB_TRY(register_once(s));
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.records.clear();
    s.origins.clear();
    s.calls.clear();
  }
  s.executor = std::this_thread::get_id();
  s.open_call.store(kHarness);
  for (CUpti_CallbackDomain domain : kDomains) {
    KB_TRY(cupti_status(cuptiEnableDomain(1, s.subscriber, domain), "cuptiEnableDomain"));
  }
  for (CUpti_ActivityKind kind : kKinds)
    KB_TRY(cupti_status(cuptiActivityEnable(kind), "cuptiActivityEnable"));
  s.active.store(true, std::memory_order_release);
  return Status::ok();
}

void LaunchTracer::open_call(Slot slot) {
  State& s = state();
  if (!s.active.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(s.mutex);
  s.calls.push_back(slot);
  s.open_call.store(static_cast<int>(s.calls.size()) - 1, std::memory_order_relaxed);
}

void LaunchTracer::close_call() {
  state().open_call.store(kHarness, std::memory_order_relaxed);
}

Result<LaunchTrace> LaunchTracer::end(cudaStream_t job_stream) {
  State& s = state();
  const cudaError_t synced = cudaDeviceSynchronize();
  s.active.store(false, std::memory_order_release);
  for (CUpti_CallbackDomain domain : kDomains) cuptiEnableDomain(0, s.subscriber, domain);
  for (CUpti_ActivityKind kind : kKinds) cuptiActivityDisable(kind);
  KB_CUDA_TRY(synced);
  KB_TRY(cupti_status(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED),
                      "cuptiActivityFlushAll"));
  // A null context: CUPTI takes the stream's own (and kb-executor needs no libcuda to load).
  uint32_t job_stream_id = 0;
  KB_TRY(cupti_status(cuptiGetStreamIdEx(nullptr, job_stream, 0, &job_stream_id),
                      "cuptiGetStreamIdEx"));
  std::lock_guard<std::mutex> lock(s.mutex);
  return summarize_trace(s, job_stream_id);
}

}  // namespace kb
