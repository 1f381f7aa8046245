// Every reference matches the golden model at the problem's tolerance on the small preset, the
// odd preset and every oracle fixture's dims (where it is also compared with PyTorch's output).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/npy.h"
#include "common/spec_loader.h"
#include "common/tensor_generator.h"
#include "kernels/cpu_model.h"
#include "kernels/device/cuda_check.h"
#include "kernels/device/tensor_generator.cuh"
#include "kernels/implementation.h"

namespace kb {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string id, label;
  Dims dims;
  uint64_t seed = 7;
  uint32_t trial = 0;
  std::string expected_npy;  // PyTorch's output, for fixture cases
};

const ProblemCatalog& catalog() {
  static const ProblemCatalog kCatalog = load_problem_catalog(default_problems_dir()).value();
  return kCatalog;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const auto& [id, spec] : catalog().problems) {
    for (const char* preset : {"small", "odd"}) {
      if (const Preset* p = spec->find_preset(preset)) out.push_back(Case{id, preset, p->dims, 7, 0, ""});
    }
    const fs::path dir = fs::path(KB_FIXTURES_DIR) / "oracle" / id;
    if (!fs::exists(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() != ".json") continue;
      nlohmann::json j = nlohmann::json::parse(std::ifstream(entry.path()));
      Case c{id, "fixture_" + j["case"].get<std::string>(), j["dims"].get<Dims>(), j["seed"].get<uint64_t>(),
             j["trial"].get<uint32_t>(), fs::path(entry.path()).replace_extension(".npy").string()};
      out.push_back(c);
    }
  }
  return out;
}

struct DeviceTensors {
  std::vector<float*> buffers;
  std::vector<DeviceTensor> inputs, params;
  ~DeviceTensors() {
    for (float* b : buffers) KB_CUDA_WARN(cudaFree(b));
  }
  DeviceTensor add(const TensorRecipe& r, cudaStream_t s) {
    float* d = nullptr;
    EXPECT_EQ(cudaMalloc(&d, std::max<int64_t>(1, element_count(r.shape)) * sizeof(float)), cudaSuccess);
    buffers.push_back(d);
    Status st = realize_on_device(r, d, s);
    EXPECT_TRUE(st.is_ok()) << st.message();
    return {d, r.shape};
  }
};

class ReferenceTest : public testing::TestWithParam<Case> {};

TEST_P(ReferenceTest, MatchesGoldenModel) {
  const Case& c = GetParam();
  auto spec = catalog().problems.at(c.id);
  ProblemInstance p = ProblemInstance::create(spec, c.dims).value();
  ImplementationFactory factory = find_implementation(c.id, Variant::kReference);
  ASSERT_NE(factory, nullptr) << "no reference registered for " << c.id;
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  const GeneratorKey key{c.seed, c.trial};
  DeviceTensors dev;
  for (size_t i = 0; i < spec->inputs.size(); ++i) dev.inputs.push_back(dev.add(input_recipe(p, i, key), stream));
  for (size_t i = 0; i < spec->params.size(); ++i) dev.params.push_back(dev.add(param_recipe(p, i, key), stream));
  DeviceTensor out = dev.add(TensorRecipe{RecipeKind::kConstant, {}, p.output_shape(), 0, NAN, 1}, stream);

  std::unique_ptr<Implementation> ref = factory();
  Status s = ref->setup(p, stream);
  ASSERT_TRUE(s.is_ok()) << c.id << " setup: " << s.message();
  s = ref->run(ImplArgs{dev.inputs, dev.params, out}, stream);
  ASSERT_TRUE(s.is_ok()) << c.id << " run: " << s.message();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
  std::vector<float> got(static_cast<size_t>(out.numel()));
  ASSERT_EQ(cudaMemcpy(got.data(), out.data, got.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  ref.reset();
  KB_CUDA_WARN(cudaStreamDestroy(stream));

  HostTensor<double> golden = find_cpu_model(c.id)->golden(p, generate_tensors(p, key));
  ASSERT_EQ(golden.data.size(), got.size());
  double max_err = 0, max_budget = 0;
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(got[i] - golden.data[i]);
    const double budget = err / (spec->tolerance.atol + spec->tolerance.rtol * std::fabs(golden.data[i]));
    if (!(budget <= 1.0)) {
      if (bad++ == 0) first = static_cast<int64_t>(i);
    }
    max_err = std::max(max_err, err);
    max_budget = std::max(max_budget, budget);
  }
  std::printf("%-7s %-20s %-40s max|ref-golden| %.3e  budget used %.4f\n", c.id.c_str(), c.label.c_str(),
              shape_to_string(p.output_shape()).c_str(), max_err, max_budget);
  EXPECT_EQ(bad, 0) << c.id << " " << c.label << ": " << bad << " of " << got.size()
                    << " outside tolerance, first at " << first << " (ref " << (first >= 0 ? got[first] : 0)
                    << ", golden " << (first >= 0 ? golden.data[first] : 0) << ")";
  if (!c.expected_npy.empty()) {
    HostTensor<double> torch = read_npy(c.expected_npy).value();
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, std::fabs(got[i] - torch.data[i]) /
                                  (spec->tolerance.atol + spec->tolerance.rtol * std::fabs(torch.data[i])));
    }
    EXPECT_LE(worst, 1.0) << c.id << " " << c.label << ": the reference differs from PyTorch's output";
  }
}

INSTANTIATE_TEST_SUITE_P(AllProblems, ReferenceTest, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& info) {
                           return info.param.id + "_" + info.param.label;
                         });

}  // namespace
}  // namespace kb
