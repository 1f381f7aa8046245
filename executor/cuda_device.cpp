// The CUDA execution device: one GPU, one job stream, device-generated inputs, CUDA-event timing
// with a cold L2 before every sample, CUPTI launch tracing of every call, on-device hashes and
// comparisons (against the reference slot or a private copy of it), NVML clock sampling.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <random>

#include "common/cuda/cuda_check.h"
#include "common/cuda/tensor_generator.cuh"
#include "executor/device_buffers.cuh"
#include "executor/device_identity.h"
#include "executor/execution_device.h"
#include "executor/gpu_clocks.h"
#include "executor/launch_tracer.h"
#include "executor/stream_gate.cuh"
#include "kernels/eager/library_handles.h"

namespace kb {
namespace {

// How long the gate holds a stream: far above the host's time to issue any call (a graph of a few
// hundred launches takes ~1-5 ms), short enough that a call that waits on its stream costs one
// second once.
constexpr std::chrono::milliseconds kGateTimeout{1000};

// "GPU-xxxxxxxx-xxxx-...", as nvidia-smi prints it.
std::string uuid_string(const cudaDeviceProp& prop) {
  char uuid[64];
  const auto* u = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
  std::snprintf(uuid, sizeof uuid,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                u[14], u[15]);
  return uuid;
}

nlohmann::json software_versions() {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  int cublas_major = 0, cublas_minor = 0, cublas_patch = 0;
  cublasGetProperty(MAJOR_VERSION, &cublas_major);
  cublasGetProperty(MINOR_VERSION, &cublas_minor);
  cublasGetProperty(PATCH_LEVEL, &cublas_patch);
  return {{"driver", driver},
          {"cuda_runtime", runtime},
          {"cudnn", static_cast<int64_t>(cudnnGetVersion())},
          {"cublas", std::to_string(cublas_major) + "." + std::to_string(cublas_minor) + "." +
                         std::to_string(cublas_patch)}};
}

struct DeviceBuffer {
  float* data = nullptr;
  Shape shape;
};

struct InputSet {
  std::vector<DeviceBuffer> inputs, params;
};

kb_tensor_v1 view(const DeviceBuffer& b) {
  kb_tensor_v1 t{b.data, static_cast<int32_t>(b.shape.size()), {}};
  for (size_t d = 0; d < b.shape.size(); ++d) t.shape[d] = b.shape[d];
  return t;
}

class CudaDevice final : public ExecutionDevice {
 public:
  CudaDevice(const KernelPack& reference, const KernelPack& candidate, int ordinal)
      : packs_{&reference, &candidate}, ordinal_(ordinal) {}
  ~CudaDevice() override;

  Status init();

  std::string kind() const override { return "cuda"; }
  nlohmann::json environment() const override { return environment_; }
  int32_t pack_variant(Slot slot) const override {
    return slot == Slot::kReference ? KB_VARIANT_REFERENCE : KB_VARIANT_CUSTOM;
  }
  int max_input_sets(double set_bytes) const override;

  CreateOutcome create(Slot slot, int32_t variant, const ProblemInstance& problem,
                       const std::string& spec_yaml) override;
  Status generate(int set, const ProblemInstance& problem, GeneratorKey key) override;
  Status upload(int set, const ProblemInstance& problem, const TensorSet& tensors) override;
  Status run(Slot slot, int set) override;
  Result<TimedCall> run_timed(Slot slot, int set) override;
  Status synchronize() override {
    KB_CUDA_TRY(cudaStreamSynchronize(stream_));
    return Status::ok();
  }
  Status poison_output(Slot slot) override {
    return fill_nan(outputs_[static_cast<int>(slot)].data, element_count(output_shape_), stream_);
  }
  Result<std::vector<float>> read_output(Slot slot) override;
  Result<uint64_t> input_hash(int set, uint64_t salt) override;
  Result<ErrorStats> compare_slots(const Tolerance& tolerance) override {
    return compare_with(outputs_[static_cast<int>(Slot::kReference)], tolerance);
  }
  Result<uint64_t> output_hash(Slot slot, uint64_t salt) override;
  Status stash_reference() override;
  Result<std::vector<float>> read_stash() override { return read_buffer(stash_); }
  Result<ErrorStats> compare_with_stash(const Tolerance& tolerance) override {
    return compare_with(stash_, tolerance);
  }
  Status begin_trace() override { return tracer_.begin(); }
  Result<LaunchTrace> end_trace() override { return tracer_.end(stream_); }
  void sample_clocks() override { clocks_->sample(); }
  nlohmann::json clock_report() const override { return clocks_->report(); }
  double peak_flops() const override { return peak_flops_; }
  double peak_bytes_per_s() const override { return peak_bytes_; }
  PhysicalPeaks floor_peaks() const override { return floor_peaks_; }
  std::unique_ptr<ExecutionDevice> make_golden_device() const override {
    return make_cpu_device(pack(Slot::kReference), pack(Slot::kReference));
  }

 private:
  Status allocate(DeviceBuffer& b, const Shape& shape);
  Result<std::vector<float>> read_buffer(const DeviceBuffer& b);
  Status write_buffer(DeviceBuffer& b, const HostTensor<float>& host);
  Result<uint64_t> hash_buffers(const std::vector<const DeviceBuffer*>& buffers, uint64_t salt);
  // The custom output against `expected` (the reference slot or the stash), on the GPU.
  Result<ErrorStats> compare_with(const DeviceBuffer& expected, const Tolerance& tolerance);
  // The custom output the checks judge: the copy taken at the stop event of its latest call when
  // that call was timed (execution_device.h, run_timed), else the slot's buffer.
  const DeviceBuffer& custom_output() const {
    return judged_current_ ? judged_output_ : outputs_[static_cast<int>(Slot::kCustom)];
  }
  // Runs the slot's variant (run() without the bookkeeping of which output is judged).
  Status call(Slot slot, int set);
  // Enqueues, on judge_stream_ behind the stop event, the copy of the custom output that is judged
  // and its hash (judged_hash_).
  Status copy_custom_output_at_stop();
  // Hashes the judged copy again: unchanged since it was taken, or an error.
  Status check_judged_copy_unchanged();
  void describe_device(const cudaDeviceProp& prop);

  // The reference slot runs the trusted reference pack, the custom slot the candidate pack.
  const KernelPack& pack(Slot slot) const { return *packs_[static_cast<int>(slot)]; }
  const KernelPack* packs_[2];  // by slot
  int ordinal_;
  cudaStream_t stream_ = nullptr;
  cudaStream_t judge_stream_ = nullptr;  // the device's own: copies the custom output at stop_
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  cudaEvent_t judged_ = nullptr;  // recorded on judge_stream_ after that copy
  // The judged copy's hash when taken and after the compare, under a salt drawn per copy: work
  // left behind by the custom that finds the copy's buffer cannot rewrite it unseen.
  unsigned long long* judged_hash_ = nullptr;
  uint64_t judged_salt_ = 0;
  std::mt19937_64 salts_{std::random_device{}()};
  unsigned long long* hash_ = nullptr;
  DeviceCompareScratch compare_scratch_;
  L2Flusher flusher_;
  StreamGate gate_;
  bool gate_on_ = true;  // run_timed closes the gate (off once a call waited on its stream)
  LaunchTracer tracer_;
  std::unique_ptr<GpuClocks> clocks_;
  kb_instance_v1* instances_[2] = {nullptr, nullptr};
  DeviceBuffer outputs_[2];
  DeviceBuffer stash_;  // the reference output of the current timed pair; no variant sees it
  DeviceBuffer judged_output_;   // the custom output at its latest timed call's stop event
  bool judged_current_ = false;  // the custom's latest call was timed: judged_output_ is judged
  Shape output_shape_;
  std::vector<InputSet> sets_;
  nlohmann::json environment_;
  double peak_flops_ = 0, peak_bytes_ = 0;
  PhysicalPeaks floor_peaks_;
};

Status CudaDevice::init() {
  KB_CUDA_TRY(cudaSetDevice(ordinal_));
  KB_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  // The highest priority: when SMs free up at the stop event, the copy's blocks (if the driver
  // copies with a kernel) go before anything queued behind the call.
  int least_priority = 0, greatest_priority = 0;
  KB_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least_priority, &greatest_priority));
  KB_CUDA_TRY(
      cudaStreamCreateWithPriority(&judge_stream_, cudaStreamNonBlocking, greatest_priority));
  KB_CUDA_TRY(cudaMalloc(&judged_hash_, sizeof *judged_hash_));
  KB_CUDA_TRY(cudaEventCreate(&start_));
  KB_CUDA_TRY(cudaEventCreate(&stop_));
  KB_CUDA_TRY(cudaEventCreateWithFlags(&judged_, cudaEventDisableTiming));
  KB_CUDA_TRY(cudaMalloc(&hash_, sizeof(unsigned long long)));
  KB_TRY(compare_scratch_.allocate());
  if (Status s = flusher_.init(ordinal_); !s.is_ok()) return s;
  KB_TRY(gate_.init(ordinal_, kGateTimeout));
  cudaDeviceProp prop{};
  KB_CUDA_TRY(cudaGetDeviceProperties(&prop, ordinal_));
  char bus_id[32] = "";
  KB_CUDA_TRY(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, ordinal_));
  clocks_ = std::make_unique<GpuClocks>(bus_id);
  describe_device(prop);
  return Status::ok();
}

void CudaDevice::describe_device(const cudaDeviceProp& prop) {
  const nlohmann::json software = software_versions();
  const std::string uuid = uuid_string(prop);
  const std::string name = prop.name;
  // Roofline ceilings: the H100/H200 figures measured for this suite (docs/problems.md#method:
  // strict fp32 FMA 67 TFLOP/s; device-to-device copy 4.3 TB/s on the H200); elsewhere the fp32 FMA
  // peak from SM count and clock, and the bandwidth of an H100-class part.
  const bool h200 = name.find("H200") != std::string::npos;
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, ordinal_);
  peak_flops_ = h200 ? 6.7e13 : prop.multiProcessorCount * 128.0 * 2.0 * clock_khz * 1e3;
  peak_bytes_ = h200 ? 4.3e12 : 3.35e12;
  floor_peaks_ = nominal_peaks(name, prop.multiProcessorCount);
  environment_ = {
      {"device", "cuda"},
      {"timing_gate", "on"},
      {"gpu",
       {{"ordinal", ordinal_},
        {"name", name},
        {"uuid", uuid},
        {"memory_bytes", prop.totalGlobalMem},
        {"sm_count", prop.multiProcessorCount},
        {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
        {"l2_bytes", prop.l2CacheSize}}},
      {"driver_version", software["driver"]},
      {"cuda_runtime_version", software["cuda_runtime"]},
      {"cudnn_version", software["cudnn"]},
      {"cublas_version", software["cublas"]},
      {"pack", pack_environment(pack(Slot::kCustom))},
      {"reference_pack", pack_environment(pack(Slot::kReference))},
      {"peaks",
       {{"fp32_flops", peak_flops_},
        {"dram_bytes_per_s", peak_bytes_},
        {"source",
         h200 ? "H200 figures of docs/problems.md#method" : "nominal from SM count and clock"}}},
      {"hard_floor_peaks",
       {{"dram_bytes_per_s", floor_peaks_.dram_bytes_per_s},
        {"math_flops_3xtf32", floor_peaks_.math_flops},
        {"source", floor_peaks_.source}}},
  };
}

CudaDevice::~CudaDevice() {
  for (int slot = 0; slot < 2; ++slot) {
    if (instances_[slot]) packs_[slot]->table().destroy(instances_[slot]);
  }
  auto release = [](DeviceBuffer& b) {
    if (b.data) KB_CUDA_WARN(cudaFree(b.data));
  };
  for (DeviceBuffer& b : outputs_) release(b);
  release(stash_);
  release(judged_output_);
  for (InputSet& s : sets_) {
    for (DeviceBuffer& b : s.inputs) release(b);
    for (DeviceBuffer& b : s.params) release(b);
  }
  if (hash_) KB_CUDA_WARN(cudaFree(hash_));
  if (judged_hash_) KB_CUDA_WARN(cudaFree(judged_hash_));
  if (start_) KB_CUDA_WARN(cudaEventDestroy(start_));
  if (stop_) KB_CUDA_WARN(cudaEventDestroy(stop_));
  if (judged_) KB_CUDA_WARN(cudaEventDestroy(judged_));
  if (judge_stream_) KB_CUDA_WARN(cudaStreamDestroy(judge_stream_));
  if (stream_) KB_CUDA_WARN(cudaStreamDestroy(stream_));
}

int CudaDevice::max_input_sets(double set_bytes) const {
  size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess || set_bytes <= 0) return 1;
  // Leave three quarters of free memory to the implementations' workspaces and intermediates.
  return std::max(1, static_cast<int>(0.25 * static_cast<double>(free_bytes) / set_bytes));
}

Status CudaDevice::allocate(DeviceBuffer& b, const Shape& shape) {
  if (b.data && b.shape == shape) return Status::ok();
  if (b.data) KB_CUDA_TRY(cudaFree(b.data));
  b.data = nullptr;
  b.shape = shape;
  KB_CUDA_TRY(cudaMalloc(&b.data, std::max<size_t>(1, element_count(shape)) * sizeof(float)));
  return Status::ok();
}

CreateOutcome CudaDevice::create(Slot slot, int32_t variant, const ProblemInstance& problem,
                                 const std::string& spec_yaml) {
  // A slot created again (the robustness trials re-create both at their preset) first lets go of
  // the instance it held, once its work is done: a full-size instance's workspaces are GBs.
  kb_instance_v1*& held = instances_[static_cast<int>(slot)];
  if (held) {
    if (Status s = synchronize(); !s.is_ok()) return {KB_PACK_ERROR, s.message()};
    pack(slot).table().destroy(held);
    held = nullptr;
  }
  output_shape_ = problem.output_shape();
  judged_current_ = false;
  if (Status s = allocate(outputs_[static_cast<int>(slot)], output_shape_); !s.is_ok()) {
    return {KB_PACK_ERROR, s.message()};
  }
  if (Status s = allocate(stash_, output_shape_); !s.is_ok()) return {KB_PACK_ERROR, s.message()};
  if (slot == Slot::kCustom) {
    if (Status s = allocate(judged_output_, output_shape_); !s.is_ok())
      return {KB_PACK_ERROR, s.message()};
  }
  std::vector<kb_dim_v1> dims;
  for (const auto& [name, value] : problem.dims()) dims.push_back({name.c_str(), value});
  char error[4096] = "";
  kb_instance_v1* inst = nullptr;
  int32_t code = pack(slot).table().create(spec_yaml.c_str(), problem.spec().file.c_str(),
                                           dims.data(), static_cast<int32_t>(dims.size()), variant,
                                           stream_, &inst, error, sizeof error);
  instances_[static_cast<int>(slot)] = inst;
  if (code == KB_PACK_OK) {
    if (Status s = synchronize(); !s.is_ok()) return {KB_PACK_ERROR, "setup: " + s.message()};
  }
  return {code, error};
}

Status CudaDevice::generate(int set, const ProblemInstance& problem, GeneratorKey key) {
  if (static_cast<int>(sets_.size()) <= set) sets_.resize(set + 1);
  InputSet& s = sets_[set];
  s.inputs.resize(problem.spec().inputs.size());
  s.params.resize(problem.spec().params.size());
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    TensorRecipe r = input_recipe(problem, i, key);
    KB_TRY(allocate(s.inputs[i], r.shape));
    KB_TRY(realize_on_device(r, s.inputs[i].data, stream_));
  }
  for (size_t i = 0; i < s.params.size(); ++i) {
    TensorRecipe r = param_recipe(problem, i, key);
    KB_TRY(allocate(s.params[i], r.shape));
    KB_TRY(realize_on_device(r, s.params[i].data, stream_));
  }
  return synchronize();
}

Status CudaDevice::upload(int set, const ProblemInstance& problem, const TensorSet& tensors) {
  if (static_cast<int>(sets_.size()) <= set) sets_.resize(set + 1);
  InputSet& s = sets_[set];
  s.inputs.resize(problem.spec().inputs.size());
  s.params.resize(problem.spec().params.size());
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    KB_TRY(write_buffer(s.inputs[i], tensors.get(problem.spec().inputs[i].name)));
  }
  for (size_t i = 0; i < s.params.size(); ++i) {
    KB_TRY(write_buffer(s.params[i], tensors.get(problem.spec().params[i].name)));
  }
  return synchronize();
}

Status CudaDevice::write_buffer(DeviceBuffer& b, const HostTensor<float>& host) {
  KB_TRY(allocate(b, host.shape));
  KB_CUDA_TRY(cudaMemcpyAsync(b.data, host.data.data(), host.data.size() * sizeof(float),
                              cudaMemcpyHostToDevice, stream_));
  return Status::ok();
}

Status CudaDevice::run(Slot slot, int set) {
  if (slot == Slot::kCustom) judged_current_ = false;
  return call(slot, set);
}

Status CudaDevice::call(Slot slot, int set) {
  const InputSet& s = sets_.at(set);
  std::vector<kb_tensor_v1> in, par;
  for (const DeviceBuffer& b : s.inputs) in.push_back(view(b));
  for (const DeviceBuffer& b : s.params) par.push_back(view(b));
  kb_tensor_v1 out = view(outputs_[static_cast<int>(slot)]);
  char error[4096] = "";
  // Whatever this thread launches until close_call() is the call's (launch_tracer.h).
  tracer_.open_call(slot);
  int32_t code = pack(slot).table().run(
      instances_[static_cast<int>(slot)], in.data(), static_cast<int32_t>(in.size()), par.data(),
      static_cast<int32_t>(par.size()), &out, stream_, error, sizeof error);
  tracer_.close_call();
  if (code != KB_PACK_OK) return Status::internal(error);
  KB_CUDA_TRY(cudaGetLastError());
  return Status::ok();
}

// Flush, (gate,) start event, the call, stop event: with the gate closed the call's launches are
// all queued before the GPU reaches the start event, so the events time the GPU alone
// (stream_gate.cuh). A call that waited on the GPU inside run() found the gate closed until the
// timeout: its sample is void (TimedCall), and this device times without the gate from then on.
// A custom call's output is judged as it stands when the stop event passes: the copy is enqueued
// before the gate opens, on a stream of the device's own, so work that reaches the job stream
// after run() returned (queued by a host thread the variant left behind, behind the stop event)
// races a copy that starts the moment the call ends (its hash, taken then, is checked again after
// the compare). Work found still queued on the job stream after any timed call (once the copy is
// done, for a custom) is TimedCall::late_work.
Result<TimedCall> CudaDevice::run_timed(Slot slot, int set) {
  if (slot == Slot::kCustom) judged_current_ = false;
  KB_TRY(flusher_.flush(stream_));
  const bool gated = gate_on_;
  if (gated) KB_TRY(gate_.close(stream_));
  if (const cudaError_t started = cudaEventRecord(start_, stream_); started != cudaSuccess) {
    if (gated) gate_.open();  // the GPU must not stay held
    KB_CUDA_TRY(started);
  }
  const auto issue_start = std::chrono::steady_clock::now();
  const Status ran = call(slot, set);
  const double host_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - issue_start)
          .count();
  const cudaError_t recorded = cudaEventRecord(stop_, stream_);
  const bool judged = slot == Slot::kCustom && ran.is_ok() && recorded == cudaSuccess;
  const Status copied = judged ? copy_custom_output_at_stop() : Status::ok();
  if (gated) gate_.open();  // before any return: the GPU must not stay held
  KB_TRY(ran);
  KB_CUDA_TRY(recorded);
  KB_TRY(copied);
  KB_CUDA_TRY(cudaEventSynchronize(stop_));
  float ms = 0;
  KB_CUDA_TRY(cudaEventElapsedTime(&ms, start_, stop_));
  TimedCall timed{static_cast<double>(ms), false, host_ms, false};
  if (judged) {
    KB_CUDA_TRY(cudaEventSynchronize(judged_));
    judged_current_ = true;
  }
  // Nothing of the executor's is queued behind the stop event.
  const cudaError_t queued = cudaStreamQuery(stream_);
  if (queued != cudaErrorNotReady) KB_CUDA_TRY(queued);
  timed.late_work = queued == cudaErrorNotReady;
  if (gated && gate_.timed_out()) {
    gate_on_ = false;
    environment_["timing_gate"] =
        std::string("off from a ") + (slot == Slot::kReference ? "reference" : "custom") +
        " call that waited on the GPU inside run (a synchronizing API, or its own work on another "
        "stream); samples before it gated";
    timed.void_sample = true;
  }
  return timed;
}

Status CudaDevice::copy_custom_output_at_stop() {
  const DeviceBuffer& custom = outputs_[static_cast<int>(Slot::kCustom)];
  KB_CUDA_TRY(cudaStreamWaitEvent(judge_stream_, stop_, 0));
  KB_CUDA_TRY(cudaMemcpyAsync(judged_output_.data, custom.data,
                              static_cast<size_t>(element_count(custom.shape)) * sizeof(float),
                              cudaMemcpyDeviceToDevice, judge_stream_));
  judged_salt_ = salts_();
  KB_CUDA_TRY(cudaMemsetAsync(judged_hash_, 0, sizeof *judged_hash_, judge_stream_));
  KB_TRY(hash_words_into(reinterpret_cast<const uint32_t*>(judged_output_.data),
                         element_count(judged_output_.shape), judged_salt_, judged_hash_,
                         judge_stream_));
  KB_CUDA_TRY(cudaEventRecord(judged_, judge_stream_));
  return Status::ok();
}

Status CudaDevice::check_judged_copy_unchanged() {
  unsigned long long taken = 0;
  KB_CUDA_TRY(cudaMemcpyAsync(&taken, judged_hash_, sizeof taken, cudaMemcpyDeviceToHost, stream_));
  Result<uint64_t> now = hash_buffers({&judged_output_}, judged_salt_);  // synchronizes stream_
  if (!now.is_ok()) return now.status();
  if (static_cast<uint64_t>(taken) != now.value()) {
    return Status::failed_precondition(
        "the copy of the custom output taken when its call ended was written afterwards (work "
        "left behind by the custom)");
  }
  return Status::ok();
}

Result<ErrorStats> CudaDevice::compare_with(const DeviceBuffer& expected,
                                            const Tolerance& tolerance) {
  Result<ErrorStats> errors =
      compare_on_device(expected.data, custom_output().data, element_count(expected.shape),
                        tolerance.atol, tolerance.rtol, compare_scratch_, stream_);
  if (errors.is_ok() && judged_current_) KB_TRY(check_judged_copy_unchanged());
  return errors;
}

Result<std::vector<float>> CudaDevice::read_output(Slot slot) {
  return read_buffer(slot == Slot::kCustom ? custom_output() : outputs_[static_cast<int>(slot)]);
}

Result<std::vector<float>> CudaDevice::read_buffer(const DeviceBuffer& b) {
  std::vector<float> host(static_cast<size_t>(element_count(b.shape)));
  KB_CUDA_TRY(cudaMemcpyAsync(host.data(), b.data, host.size() * sizeof(float),
                              cudaMemcpyDeviceToHost, stream_));
  KB_TRY(synchronize());
  return host;
}

Result<uint64_t> CudaDevice::input_hash(int set, uint64_t salt) {
  std::vector<const DeviceBuffer*> buffers;
  for (const auto* group : {&sets_.at(set).inputs, &sets_.at(set).params}) {
    for (const DeviceBuffer& b : *group) buffers.push_back(&b);
  }
  return hash_buffers(buffers, salt);
}

Result<uint64_t> CudaDevice::output_hash(Slot slot, uint64_t salt) {
  return hash_buffers({&outputs_[static_cast<int>(slot)]}, salt);
}

Result<uint64_t> CudaDevice::hash_buffers(const std::vector<const DeviceBuffer*>& buffers,
                                          uint64_t salt) {
  KB_CUDA_TRY(cudaMemsetAsync(hash_, 0, sizeof *hash_, stream_));
  for (const DeviceBuffer* b : buffers) {
    KB_TRY(hash_words_into(reinterpret_cast<const uint32_t*>(b->data), element_count(b->shape),
                           salt, hash_, stream_));
    salt += 0x100000000ull;
  }
  unsigned long long value = 0;
  KB_CUDA_TRY(cudaMemcpyAsync(&value, hash_, sizeof value, cudaMemcpyDeviceToHost, stream_));
  KB_TRY(synchronize());
  return static_cast<uint64_t>(value);
}

Status CudaDevice::stash_reference() {
  const DeviceBuffer& ref = outputs_[static_cast<int>(Slot::kReference)];
  KB_CUDA_TRY(cudaMemcpyAsync(stash_.data, ref.data,
                              static_cast<size_t>(element_count(ref.shape)) * sizeof(float),
                              cudaMemcpyDeviceToDevice, stream_));
  return poison_output(Slot::kReference);
}

}  // namespace

Result<nlohmann::json> describe_cuda_device(int ordinal) {
  cudaDeviceProp prop{};
  KB_CUDA_TRY(cudaGetDeviceProperties(&prop, ordinal));
  return nlohmann::json{
      {"kind", "cuda"},
      {"model", std::string(prop.name)},
      {"uuid", uuid_string(prop)},
      {"memory_bytes", static_cast<int64_t>(prop.totalGlobalMem)},
      {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
      {"ordinal", ordinal},
      {"software", software_versions()}};
}

Result<std::unique_ptr<ExecutionDevice>> make_cuda_device(const KernelPack& reference,
                                                          const KernelPack& candidate,
                                                          int ordinal) {
  auto device = std::make_unique<CudaDevice>(reference, candidate, ordinal);
  if (Status s = device->init(); !s.is_ok()) return s;
  return std::unique_ptr<ExecutionDevice>(std::move(device));
}

}  // namespace kb
