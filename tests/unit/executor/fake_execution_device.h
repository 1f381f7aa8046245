// A fault-injecting ExecutionDevice held entirely in host memory, for the executor's unit tests.
//
// Inputs and parameters come from the real host generator. Each variant's "implementation" is a
// small function over host vectors, so that a test states its fault in one lambda: a wrong value,
// an unwritten element, a write into an input, a failing call, state kept between calls. What
// create() answers, what the launch trace shows for each call (and what it finds outside any
// call), the hard floor's rates and how long a timed call takes (a seeded model, not a clock) are
// plain fields. Every call is logged for tests of the executor's protocol.
//
// Thread safety: one thread, like any ExecutionDevice.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/tensor_generator.h"
#include "executor/execution_device.h"

namespace kb::fake {

// One call of a variant: what it may read and (to inject a fault) write.
struct Call {
  const ProblemInstance& problem;
  std::vector<HostTensor<float>>& inputs;  // mutable so that a fault can write into them
  std::vector<HostTensor<float>>& params;
  std::vector<float>& output;  // the slot's output buffer, as the last call left it
  int index;                   // calls of this slot before this one
  int set;                     // the input set: stands for the inputs' addresses
  // The reference slot's output buffer, as a custom that found its address would see it.
  std::vector<float>& reference_output;
};
using Implementation = std::function<Status(Call&)>;

// What the device does for one pack variant (KB_VARIANT_REFERENCE or KB_VARIANT_CUSTOM).
struct Variant {
  CreateOutcome create;  // KB_PACK_OK unless a test says otherwise
  Implementation run;
  double ms = 1.0;     // timed calls take ms * exp(N(0, timing_noise))
  double host_ms = 0;  // the host's time inside each timed call (a void one: the gate's 1 s)
};

// C = A x B for every batch: A (b, M, K), B (b, K, N), C (b, M, N), accumulated in double.
// The reference "implementation" of L1_003 (torch.bmm).
inline Status bmm(Call& c) {
  const HostTensor<float>& a = c.inputs.at(0);
  const HostTensor<float>& b = c.inputs.at(1);
  const int64_t batch = a.shape[0], m = a.shape[1], k = a.shape[2], n = b.shape[2];
  if (static_cast<int64_t>(c.output.size()) != batch * m * n)
    return Status::internal("bmm: bad output size");
  for (int64_t p = 0; p < batch; ++p) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t q = 0; q < k; ++q) {
          sum += static_cast<double>(a.data[(p * m + i) * k + q]) * b.data[(p * k + q) * n + j];
        }
        c.output[(p * m + i) * n + j] = static_cast<float>(sum);
      }
    }
  }
  return Status::ok();
}

// What an honest call's trace shows: one kernel, of our own for the custom.
inline CallTrace honest_trace(Slot slot, int) {
  CallTrace t;
  t.slot = slot;
  (slot == Slot::kCustom ? t.own_kernels : t.library_kernels) = 1;
  t.own_gpu_ms = slot == Slot::kCustom ? 1.0 : 0.0;
  t.total_gpu_ms = 1.0;
  t.busy_ms = 1.0;
  t.kernel_names = {slot == Slot::kCustom ? "kb::bmm_kernel" : "sm90_xmma_gemm"};
  return t;
}

class Device final : public ExecutionDevice {
 public:
  std::map<int32_t, Variant> variants = {
      {KB_VARIANT_REFERENCE, {.create = {}, .run = bmm, .ms = 2.0}},
      {KB_VARIANT_CUSTOM, {.create = {}, .run = bmm, .ms = 1.0}},
  };
  // The trace: whether there is one (false: the CPU device), what each traced call of a slot
  // shows (`index` counts that slot's calls, like Call::index), and what a trace finds outside
  // any call (`trace` counts the traces taken, from 0).
  bool trace_available = true;
  std::function<CallTrace(Slot, int index)> trace_call = honest_trace;
  std::function<std::vector<std::string>(int trace)> stray = [](int) {
    return std::vector<std::string>{};
  };
  // The hard floor's rates (L1_003 small: 18132 bytes, 63954 FLOPs: a floor of ~9e-5 ms).
  PhysicalPeaks floor = {2e11, 2e12, "fake"};
  int input_sets = 3;
  double timing_noise = 0.005;
  // How many timed calls, from the first, return a void sample (a gated call that waited on its
  // stream: cuda_device.cpp); INT_MAX: every one.
  int void_samples = 0;
  // From which of late_work_slot's timed calls (counted from 0) on each reports work queued on the
  // job stream after it (TimedCall::late_work: another host thread's launch); INT_MAX: none.
  int late_work_from = std::numeric_limits<int>::max();
  Slot late_work_slot = Slot::kCustom;
  // Seeded, so timing tests are deterministic. A test that asserts its interval covers the truth
  // relies on this seed being one of the ~95% that do (executor_test checks the rate over seeds).
  std::mt19937_64 rng{1};

  // What happened, in order: "create custom 1", "generate 0 trial 3", "run reference 0",
  // "time custom 2", "poison custom", "hash 0", "hash output reference", "stash", "begin_trace",
  // "end_trace", "synchronize".
  std::vector<std::string> log;
  bool blind_input_hash = false;     // input_hash ignores the contents (a crafted collision)
  std::vector<uint64_t> hash_salts;  // of every input_hash and output_hash, in call order
  std::vector<GeneratorKey> generated;
  int clock_samples = 0;

  std::string kind() const override { return "fake"; }
  nlohmann::json environment() const override { return {{"device", "fake"}}; }
  int32_t pack_variant(Slot slot) const override {
    return slot == Slot::kReference ? KB_VARIANT_REFERENCE : KB_VARIANT_CUSTOM;
  }
  int max_input_sets(double) const override { return input_sets; }

  CreateOutcome create(Slot slot, int32_t variant, const ProblemInstance& problem,
                       const std::string&) override {
    log.push_back("create " + name(slot) + " " + std::to_string(variant));
    const CreateOutcome outcome = variants.at(variant).create;
    SlotState& s = slots_[index(slot)];
    s = SlotState{};
    if (outcome.code == KB_PACK_OK) s.variant = variant;
    s.output.assign(static_cast<size_t>(element_count(problem.output_shape())), 0.f);
    problem_ = &problem;
    return outcome;
  }

  Status upload(int set, const ProblemInstance& problem, const TensorSet& tensors) override {
    log.push_back("upload " + std::to_string(set));
    if (static_cast<int>(sets_.size()) <= set) sets_.resize(static_cast<size_t>(set) + 1);
    InputSet& s = sets_[static_cast<size_t>(set)];
    s.inputs.clear();
    s.params.clear();
    for (const TensorDecl& input : problem.spec().inputs)
      s.inputs.push_back(tensors.get(input.name));
    for (const ParamDecl& param : problem.spec().params)
      s.params.push_back(tensors.get(param.name));
    return Status::ok();
  }

  Status generate(int set, const ProblemInstance& problem, GeneratorKey key) override {
    log.push_back("generate " + std::to_string(set) + " trial " + std::to_string(key.trial));
    generated.push_back(key);
    if (static_cast<int>(sets_.size()) <= set) sets_.resize(static_cast<size_t>(set) + 1);
    InputSet& s = sets_[static_cast<size_t>(set)];
    s.inputs.clear();
    s.params.clear();
    for (size_t i = 0; i < problem.spec().inputs.size(); ++i)
      s.inputs.push_back(generate_input(problem, i, key));
    for (size_t i = 0; i < problem.spec().params.size(); ++i)
      s.params.push_back(generate_param(problem, i, key));
    return Status::ok();
  }

  Status run(Slot slot, int set) override {
    log.push_back("run " + name(slot) + " " + std::to_string(set));
    return call(slot, set);
  }

  Result<TimedCall> run_timed(Slot slot, int set) override {
    log.push_back("time " + name(slot) + " " + std::to_string(set));
    if (Status s = call(slot, set); !s.is_ok()) return s;
    std::normal_distribution<double> noise(0.0, timing_noise);
    const bool void_sample = void_samples > 0;
    void_samples -= void_sample;
    const Variant& v = variants.at(slots_[index(slot)].variant);
    const bool late = slot == late_work_slot && timed_calls_[index(slot)]++ >= late_work_from;
    return TimedCall{v.ms * std::exp(noise(rng)), void_sample, void_sample ? 1e3 : v.host_ms, late};
  }

  Status synchronize() override {
    log.push_back("synchronize");
    return Status::ok();
  }

  Status poison_output(Slot slot) override {
    log.push_back("poison " + name(slot));
    auto& out = slots_[index(slot)].output;
    std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
    return Status::ok();
  }
  Result<std::vector<float>> read_output(Slot slot) override { return slots_[index(slot)].output; }

  Result<uint64_t> input_hash(int set, uint64_t salt) override {
    log.push_back("hash " + std::to_string(set));
    hash_salts.push_back(salt);
    if (blind_input_hash) return uint64_t{0};  // a hash the custom's changes collide with
    uint64_t h = 14695981039346656037ull ^ salt;
    for (const auto* group :
         {&sets_.at(static_cast<size_t>(set)).inputs, &sets_.at(static_cast<size_t>(set)).params}) {
      for (const auto& t : *group) h = hash_floats(t.data, h);
    }
    return h;
  }

  Result<uint64_t> output_hash(Slot slot, uint64_t salt) override {
    log.push_back("hash output " + name(slot));
    hash_salts.push_back(salt);
    return hash_floats(slots_[index(slot)].output, 14695981039346656037ull ^ salt);
  }
  Status stash_reference() override {
    log.push_back("stash");
    stash_ = slots_[index(Slot::kReference)].output;
    auto& out = slots_[index(Slot::kReference)].output;
    std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
    return Status::ok();
  }
  Result<std::vector<float>> read_stash() override { return stash_; }

  Status begin_trace() override {
    log.push_back("begin_trace");
    tracing_ = true;
    traced_ = LaunchTrace{};
    traced_.available = trace_available;
    return Status::ok();
  }
  Result<LaunchTrace> end_trace() override {
    log.push_back("end_trace");
    tracing_ = false;
    if (trace_available) traced_.stray = stray(traces_++);
    return trace_available ? traced_ : LaunchTrace{};
  }
  void sample_clocks() override { ++clock_samples; }
  nlohmann::json clock_report() const override {
    return {{"fake", true}, {"samples", clock_samples}};
  }
  double peak_flops() const override { return 1e12; }
  double peak_bytes_per_s() const override { return 1e11; }
  PhysicalPeaks floor_peaks() const override { return floor; }

  // How many times the slot's variant has run (timed or not).
  int calls(Slot slot) const { return slots_[index(slot)].calls; }
  // Entries of `log` that start with `prefix`.
  std::vector<std::string> logged(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const std::string& entry : log) {
      if (entry.rfind(prefix, 0) == 0) out.push_back(entry);
    }
    return out;
  }

 private:
  struct SlotState {
    int32_t variant = -1;  // -1 until created successfully
    std::vector<float> output;
    int calls = 0;
  };
  struct InputSet {
    std::vector<HostTensor<float>> inputs, params;
  };

  static int index(Slot slot) { return static_cast<int>(slot); }
  static uint64_t hash_floats(const std::vector<float>& data,
                              uint64_t h = 14695981039346656037ull) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
    for (size_t i = 0; i < data.size() * sizeof(float); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
    return h;
  }
  static std::string name(Slot slot) { return slot == Slot::kReference ? "reference" : "custom"; }

  Status call(Slot slot, int set) {
    SlotState& s = slots_[index(slot)];
    if (s.variant < 0)
      return Status::failed_precondition("fake: " + name(slot) + " was not created");
    InputSet& in = sets_.at(static_cast<size_t>(set));
    if (tracing_) traced_.calls.push_back(trace_call(slot, s.calls));
    Call c{*problem_,
           in.inputs,
           in.params,
           s.output,
           s.calls++,
           set,
           slots_[index(Slot::kReference)].output};
    return variants.at(s.variant).run(c);
  }

  SlotState slots_[2];
  int timed_calls_[2] = {0, 0};  // per slot
  std::vector<float> stash_;
  std::vector<InputSet> sets_;
  bool tracing_ = false;
  int traces_ = 0;
  LaunchTrace traced_;
  const ProblemInstance* problem_ = nullptr;
};

}  // namespace kb::fake
