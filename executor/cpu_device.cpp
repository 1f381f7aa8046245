// The CPU execution device: the golden model (double) as the reference and the same algorithm in
// float as the "custom" variant, on host memory, timed with the steady clock. For small presets
// only; results are labelled `cpu`.
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "executor/execution_device.h"

namespace kb {
namespace {

struct HostSet {
  std::vector<HostTensor<float>> inputs, params;
};

class CpuDevice final : public ExecutionDevice {
 public:
  CpuDevice(const KernelPack& reference, const KernelPack& candidate)
      : packs_{&reference, &candidate} {}
  ~CpuDevice() override {
    for (int slot = 0; slot < 2; ++slot) {
      if (instances_[slot]) packs_[slot]->table().destroy(instances_[slot]);
    }
  }

  std::string kind() const override { return "cpu"; }
  nlohmann::json environment() const override {
    return {{"device", "cpu"},
            {"threads", std::thread::hardware_concurrency()},
            {"pack", pack_environment(pack(Slot::kCustom))},
            {"reference_pack", pack_environment(pack(Slot::kReference))},
            {"peaks", "nominal 1 GFLOP/s and 10 GB/s per core (CPU runs are for correctness)"}};
  }
  int32_t pack_variant(Slot slot) const override {
    return slot == Slot::kReference ? KB_VARIANT_CPU_GOLDEN : KB_VARIANT_CPU_FP32;
  }
  int max_input_sets(double) const override { return 2; }

  CreateOutcome create(Slot slot, int32_t variant, const ProblemInstance& problem,
                       const std::string& spec_yaml) override {
    kb_instance_v1*& held =
        instances_[static_cast<int>(slot)];  // created again: let go of it first
    if (held) pack(slot).table().destroy(held);
    held = nullptr;
    std::vector<kb_dim_v1> dims;
    for (const auto& [name, value] : problem.dims()) dims.push_back({name.c_str(), value});
    char error[2048] = "";
    kb_instance_v1* inst = nullptr;
    int32_t code = pack(slot).table().create(spec_yaml.c_str(), problem.spec().file.c_str(),
                                             dims.data(), static_cast<int32_t>(dims.size()),
                                             variant, nullptr, &inst, error, sizeof error);
    instances_[static_cast<int>(slot)] = inst;
    outputs_[static_cast<int>(slot)].assign(
        static_cast<size_t>(element_count(problem.output_shape())), 0.f);
    output_shape_ = problem.output_shape();
    return {code, error};
  }

  Status generate(int set, const ProblemInstance& problem, GeneratorKey key) override {
    if (static_cast<int>(sets_.size()) <= set) sets_.resize(set + 1);
    HostSet& s = sets_[set];
    s.inputs.clear();
    s.params.clear();
    for (size_t i = 0; i < problem.spec().inputs.size(); ++i)
      s.inputs.push_back(generate_input(problem, i, key));
    for (size_t i = 0; i < problem.spec().params.size(); ++i)
      s.params.push_back(generate_param(problem, i, key));
    return Status::ok();
  }

  Status upload(int set, const ProblemInstance& problem, const TensorSet& tensors) override {
    if (static_cast<int>(sets_.size()) <= set) sets_.resize(set + 1);
    HostSet& s = sets_[set];
    s.inputs.clear();
    s.params.clear();
    for (const TensorDecl& input : problem.spec().inputs)
      s.inputs.push_back(tensors.get(input.name));
    for (const ParamDecl& param : problem.spec().params)
      s.params.push_back(tensors.get(param.name));
    return Status::ok();
  }

  Status run(Slot slot, int set) override {
    std::vector<kb_tensor_v1> in = views(sets_.at(set).inputs), par = views(sets_.at(set).params);
    kb_tensor_v1 out = view(outputs_[static_cast<int>(slot)].data(), output_shape_);
    char error[2048] = "";
    int32_t code = pack(slot).table().run(
        instances_[static_cast<int>(slot)], in.data(), static_cast<int32_t>(in.size()), par.data(),
        static_cast<int32_t>(par.size()), &out, nullptr, error, sizeof error);
    return code == KB_PACK_OK ? Status::ok() : Status::internal(error);
  }

  Result<TimedCall> run_timed(Slot slot, int set) override {
    auto start = std::chrono::steady_clock::now();
    KB_TRY(run(slot, set));
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return TimedCall{ms, false, ms, false};
  }
  Status synchronize() override { return Status::ok(); }

  Status poison_output(Slot slot) override {
    auto& out = outputs_[static_cast<int>(slot)];
    std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
    return Status::ok();
  }
  Result<std::vector<float>> read_output(Slot slot) override {
    return outputs_[static_cast<int>(slot)];
  }

  Result<uint64_t> input_hash(int set, uint64_t salt) override {
    uint64_t h = 14695981039346656037ull ^ salt;
    auto mix = [&h](const std::vector<HostTensor<float>>& tensors) {
      for (const auto& t : tensors) {
        const auto* bytes = reinterpret_cast<const unsigned char*>(t.data.data());
        for (size_t i = 0; i < t.data.size() * sizeof(float); ++i)
          h = (h ^ bytes[i]) * 1099511628211ull;
      }
    };
    mix(sets_.at(set).inputs);
    mix(sets_.at(set).params);
    return h;
  }

  Result<uint64_t> output_hash(Slot slot, uint64_t salt) override {
    const auto& out = outputs_[static_cast<int>(slot)];
    uint64_t h = 14695981039346656037ull ^ salt;
    const auto* bytes = reinterpret_cast<const unsigned char*>(out.data());
    for (size_t i = 0; i < out.size() * sizeof(float); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
    return h;
  }
  Status stash_reference() override {
    stash_ = outputs_[static_cast<int>(Slot::kReference)];
    return poison_output(Slot::kReference);
  }
  Result<std::vector<float>> read_stash() override { return stash_; }

  Status begin_trace() override { return Status::ok(); }
  Result<LaunchTrace> end_trace() override { return LaunchTrace{}; }
  void sample_clocks() override {}
  nlohmann::json clock_report() const override { return {{"available", false}}; }
  double peak_flops() const override { return 1e9; }
  double peak_bytes_per_s() const override { return 1e10; }
  // No hard floor: CPU runs are for correctness, and the golden model sets no speed to beat.
  PhysicalPeaks floor_peaks() const override { return {}; }

 private:
  // The reference slot runs the trusted reference pack, the custom slot the candidate pack.
  const KernelPack& pack(Slot slot) const { return *packs_[static_cast<int>(slot)]; }
  static kb_tensor_v1 view(float* data, const Shape& shape) {
    kb_tensor_v1 t{data, static_cast<int32_t>(shape.size()), {}};
    for (size_t d = 0; d < shape.size(); ++d) t.shape[d] = shape[d];
    return t;
  }
  static std::vector<kb_tensor_v1> views(std::vector<HostTensor<float>>& tensors) {
    std::vector<kb_tensor_v1> out;
    for (auto& t : tensors) out.push_back(view(t.data.data(), t.shape));
    return out;
  }

  const KernelPack* packs_[2];  // by slot
  kb_instance_v1* instances_[2] = {nullptr, nullptr};
  std::vector<float> outputs_[2];
  std::vector<float> stash_;  // the reference output of the current timed pair
  Shape output_shape_;
  std::vector<HostSet> sets_;
};

}  // namespace

nlohmann::json pack_environment(const KernelPack& pack) {
  return {{"path", pack.path()},
          {"sha256", pack.sha256()},
          {"commit", pack.table().commit},
          {"build", pack.table().build_info}};
}

std::unique_ptr<ExecutionDevice> make_cpu_device(const KernelPack& reference,
                                                 const KernelPack& candidate) {
  return std::make_unique<CpuDevice>(reference, candidate);
}

}  // namespace kb
