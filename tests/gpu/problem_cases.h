// The shapes every implementation is checked at on the GPU: per problem, the `small` and `odd`
// presets, the `robust` one where the spec has it (a shape that reaches a custom's fast path
// cheaply enough for the golden model) and any other preset but `full` that the golden model can
// afford, every oracle fixture's dims (with PyTorch's expected
// output), and up to three shapes of the shape sweep (common/shape_sweep.h, drawn under `full`)
// cheap enough for the golden model: odd sizes and channel counts that reach the kernels' other
// paths. Plus the plumbing to run one implementation on device inputs generated from a case's key.
//
// Thread safety: test code, one thread.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/cuda/cuda_check.h"
#include "common/cuda/tensor_generator.cuh"
#include "common/shape_sweep.h"
#include "common/spec_loader.h"
#include "common/tensor_generator.h"
#include "kernels/implementation.h"

namespace kb::gpu_test {

struct Case {
  std::string id, label;
  Dims dims;
  uint64_t seed = 7;
  uint32_t trial = 0;
  std::string expected_npy;  // PyTorch's output, for fixture cases
  Distribution distribution = Distribution::kDefault;  // robustness trials move the values
  GeneratorKey key() const { return GeneratorKey{seed, trial, distribution}; }
};

inline const ProblemCatalog& catalog() {
  static const ProblemCatalog kCatalog = load_problem_catalog(default_problems_dir()).value();
  return kCatalog;
}

// The golden model (CPU, double) runs each case: sweep shapes above this many FLOPs are skipped.
constexpr double kSweepCaseMaxFlops = 1e8;
constexpr int kSweepCases = 3;

// Up to kSweepCases sweep shapes of `spec` under `full` (fixed seed: the same cases every run).
inline void add_sweep_cases(const std::shared_ptr<const ProblemSpec>& spec,
                            std::vector<Case>* out) {
  auto shapes = draw_sweep_shapes(spec, "full", 4 * kSweepCases, 2026);
  if (!shapes.is_ok()) return;  // no full preset: nothing to sweep around
  int added = 0;
  for (const SweepShape& s : shapes.value()) {
    auto inst = ProblemInstance::create(spec, s.dims);
    if (added == kSweepCases || !inst.is_ok() || inst->cost().flops > kSweepCaseMaxFlops) continue;
    out->push_back(Case{spec->id, "sweep" + std::to_string(added++), s.dims, 7, 0, ""});
  }
}

// The presets every implementation is checked at: every one but `full`; small, odd and robust
// always, any other (a shape that reaches one of a custom's paths, e.g. L2_021's `fma`) when the
// golden model can afford it.
inline std::vector<Preset> checked_presets(const std::shared_ptr<const ProblemSpec>& spec) {
  std::vector<Preset> out;
  for (const Preset& p : spec->presets) {
    if (p.name == "full") continue;
    if (p.name != "small" && p.name != "odd" && p.name != "robust") {
      auto inst = ProblemInstance::create(spec, p.dims);
      if (!inst.is_ok() || inst->cost().flops > kSweepCaseMaxFlops) continue;
    }
    out.push_back(p);
  }
  return out;
}

// Every case of every problem for which `variant` is registered.
inline std::vector<Case> cases_with(Variant variant) {
  namespace fs = std::filesystem;
  std::vector<Case> out;
  for (const auto& [id, spec] : catalog().problems) {
    if (!find_implementation(id, variant)) continue;
    for (const Preset& p : checked_presets(spec)) out.push_back(Case{id, p.name, p.dims, 7, 0, ""});
    add_sweep_cases(spec, &out);
    const fs::path dir = fs::path(KB_FIXTURES_DIR) / "oracle" / id;
    if (!fs::exists(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() != ".json") continue;
      nlohmann::json j = nlohmann::json::parse(std::ifstream(entry.path()));
      out.push_back(Case{id, "fixture_" + j["case"].get<std::string>(), j["dims"].get<Dims>(),
                         j["seed"].get<uint64_t>(), j["trial"].get<uint32_t>(),
                         fs::path(entry.path()).replace_extension(".npy").string()});
    }
  }
  return out;
}

inline std::string case_name(const testing::TestParamInfo<Case>& info) {
  return info.param.id + "_" + info.param.label;
}

// Device inputs and parameters of one case, generated on the device from the case's key.
class CaseTensors {
 public:
  CaseTensors(const ProblemInstance& p, GeneratorKey key, cudaStream_t stream) {
    for (size_t i = 0; i < p.spec().inputs.size(); ++i) inputs_.push_back(add(input_recipe(p, i, key), stream));
    for (size_t i = 0; i < p.spec().params.size(); ++i) params_.push_back(add(param_recipe(p, i, key), stream));
  }
  ~CaseTensors() {
    for (float* b : buffers_) KB_CUDA_WARN(cudaFree(b));
  }
  CaseTensors(const CaseTensors&) = delete;
  CaseTensors& operator=(const CaseTensors&) = delete;

  // A fresh NaN-filled output buffer.
  DeviceTensor output(const Shape& shape, cudaStream_t stream) {
    return add(TensorRecipe{RecipeKind::kConstant, {}, shape, 0, NAN, 1}, stream);
  }
  ImplArgs args(const DeviceTensor& out) const { return ImplArgs{inputs_, params_, out}; }

 private:
  DeviceTensor add(const TensorRecipe& r, cudaStream_t stream) {
    float* d = nullptr;
    EXPECT_EQ(cudaMalloc(&d, std::max<int64_t>(1, element_count(r.shape)) * sizeof(float)), cudaSuccess);
    buffers_.push_back(d);
    Status s = realize_on_device(r, d, stream);
    EXPECT_TRUE(s.is_ok()) << s.message();
    return {d, r.shape};
  }

  std::vector<float*> buffers_;
  std::vector<DeviceTensor> inputs_, params_;
};

// Runs `variant` of the case's problem and returns its output (empty after a reported failure).
inline std::vector<float> run_variant(const Case& c, const ProblemInstance& p, Variant variant) {
  ImplementationFactory factory = find_implementation(c.id, variant);
  EXPECT_NE(factory, nullptr) << c.id;
  if (!factory) return {};
  cudaStream_t stream = nullptr;
  EXPECT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  std::vector<float> got;
  {
    CaseTensors tensors(p, c.key(), stream);
    DeviceTensor out = tensors.output(p.output_shape(), stream);
    std::unique_ptr<Implementation> impl = factory();
    const Status set_up = impl->setup(p, stream);
    const Status s = set_up.is_ok() ? impl->run(tensors.args(out), stream) : set_up;
    EXPECT_TRUE(s.is_ok()) << c.id << " " << c.label << ": " << s.message();
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
    if (s.is_ok()) {
      got.resize(static_cast<size_t>(out.numel()));
      EXPECT_EQ(cudaMemcpy(got.data(), out.data, got.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    }
  }
  KB_CUDA_WARN(cudaStreamDestroy(stream));
  return got;
}

// |got - want| <= atol + rtol*|want| everywhere; prints the case's worst error and budget used.
template <typename T>
void expect_within_tolerance(const Case& c, const ProblemInstance& p, const std::vector<float>& got,
                             const std::vector<T>& want, const char* against) {
  ASSERT_EQ(got.size(), want.size()) << c.id << " " << c.label;
  const Tolerance& tol = p.spec().tolerance;
  double max_err = 0, max_budget = 0;
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    const double w = static_cast<double>(want[i]);
    const double err = std::fabs(got[i] - w);
    const double budget = err / (tol.atol + tol.rtol * std::fabs(w));
    if (!(budget <= 1.0) && bad++ == 0) first = static_cast<int64_t>(i);
    max_err = std::max(max_err, err);
    if (budget == budget) max_budget = std::max(max_budget, budget);
  }
  std::printf("%-7s %-20s %-28s vs %-8s max|err| %.3e  budget used %.4f\n", c.id.c_str(), c.label.c_str(),
              shape_to_string(p.output_shape()).c_str(), against, max_err, max_budget);
  EXPECT_EQ(bad, 0) << c.id << " " << c.label << ": " << bad << " of " << got.size() << " outside tolerance"
                    << " against " << against << ", first at " << first << " (got "
                    << (first >= 0 ? got[first] : 0) << ", want " << (first >= 0 ? static_cast<double>(want[first]) : 0)
                    << ")";
}

}  // namespace kb::gpu_test
