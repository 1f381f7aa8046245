// Host and device generators agree bit for bit: every input and parameter of every problem at
// the small preset in full, and at the full preset on sampled elements (and sampled softmax rows).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "common/cuda/cuda_check.h"
#include "common/cuda/tensor_generator.cuh"
#include "common/spec_loader.h"
#include "common/tensor_generator.h"

namespace kb {
namespace {

std::vector<float> realize_on_gpu(const TensorRecipe& recipe) {
  std::vector<float> host(static_cast<size_t>(element_count(recipe.shape)));
  float* device = nullptr;
  EXPECT_EQ(cudaMalloc(&device, host.size() * sizeof(float)), cudaSuccess);
  Status s = realize_on_device(recipe, device, nullptr);
  EXPECT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(cudaMemcpy(host.data(), device, host.size() * sizeof(float), cudaMemcpyDeviceToHost),
            cudaSuccess);
  KB_CUDA_WARN(cudaFree(device));
  return host;
}

std::vector<TensorRecipe> recipes_of(const ProblemInstance& inst, GeneratorKey key) {
  std::vector<TensorRecipe> out;
  for (size_t i = 0; i < inst.spec().inputs.size(); ++i) out.push_back(input_recipe(inst, i, key));
  for (size_t i = 0; i < inst.spec().params.size(); ++i) out.push_back(param_recipe(inst, i, key));
  return out;
}

// The host's value of element i before a robustness move.
float drawn_element(const TensorRecipe& r, uint64_t i) {
  switch (r.kind) {
    case RecipeKind::kUniform: return philox::uniform(r.key, i);
    case RecipeKind::kSymmetricUniform: return philox::symmetric_uniform(r.key, i, r.bound);
    case RecipeKind::kNormal: return philox::normal(r.key, i);
    case RecipeKind::kConstant: return r.value;
    case RecipeKind::kSoftmaxRows: {
      const uint64_t len = static_cast<uint64_t>(r.shape.back());
      philox::SoftmaxRowStats st = philox::softmax_row_stats(r.key, i / len, len, r.scale);
      return philox::softmax_element(r.key, i / len, len, i % len, r.scale, st);
    }
  }
  return 0;
}

// The host's value of element i, computed alone (no need to realize a multi-GB tensor).
float host_element(const TensorRecipe& r, uint64_t i) {
  const float v = drawn_element(r, i);
  return r.moved ? philox::affine(v, r.post_scale, r.post_shift) : v;
}

ProblemCatalog catalog() {
  Result<ProblemCatalog> c = load_problem_catalog(default_problems_dir());
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  return c.is_ok() ? std::move(c).value() : ProblemCatalog{};
}

TEST(DeviceGenerator, SmallPresetsBitIdentical) {
  ProblemCatalog cat = catalog();
  size_t elements = 0;
  for (const auto& [id, spec] : cat.problems) {
    ProblemInstance inst = ProblemInstance::create(spec, "small").value();
    for (uint32_t trial = 0; trial < 2; ++trial) {
      for (const TensorRecipe& r : recipes_of(inst, GeneratorKey{0x5eed0000 + trial, trial})) {
        HostTensor<float> host = realize(r);
        std::vector<float> device = realize_on_gpu(r);
        ASSERT_EQ(host.data.size(), device.size());
        EXPECT_EQ(std::memcmp(host.data.data(), device.data(), device.size() * sizeof(float)), 0)
            << id << ": host and device differ (stream " << r.key.stream << ")";
        elements += device.size();
      }
    }
  }
  std::printf("compared %zu elements bit for bit (small presets, 2 trials)\n", elements);
}

// Every robustness distribution (shifted, scaled, centered inputs; random affine parameters) at
// the small presets in full: the moved values are bit-identical too, and something moved.
TEST(DeviceGenerator, RobustnessDistributionsBitIdentical) {
  ProblemCatalog cat = catalog();
  for (Distribution d : robustness_distributions()) {
    size_t elements = 0, moved = 0;
    for (const auto& [id, spec] : cat.problems) {
      ProblemInstance inst = ProblemInstance::create(spec, "small").value();
      for (const TensorRecipe& r : recipes_of(inst, GeneratorKey{0x0b5e55ed, 11, d})) {
        HostTensor<float> host = realize(r);
        std::vector<float> device = realize_on_gpu(r);
        ASSERT_EQ(host.data.size(), device.size());
        EXPECT_EQ(std::memcmp(host.data.data(), device.data(), device.size() * sizeof(float)), 0)
            << id << " " << to_string(d) << ": host and device differ (stream " << r.key.stream << ")";
        elements += device.size();
        if (r.moved) moved += device.size();
      }
    }
    EXPECT_GT(moved, 0u) << to_string(d);
    std::printf("%s: compared %zu elements bit for bit (%zu moved)\n", to_string(d).c_str(), elements, moved);
  }
}

TEST(DeviceGenerator, FullPresetsSampledBitIdentical) {
  ProblemCatalog cat = catalog();
  std::mt19937_64 pick(7);
  size_t compared = 0;
  for (const auto& [id, spec] : cat.problems) {
    ProblemInstance inst = ProblemInstance::create(spec, "full").value();
    for (const TensorRecipe& r : recipes_of(inst, GeneratorKey{20261130, 3})) {
      std::vector<float> device = realize_on_gpu(r);
      const uint64_t n = device.size();
      const int samples = r.kind == RecipeKind::kSoftmaxRows ? 16 : 4096;
      for (int s = 0; s < samples + 2; ++s) {
        uint64_t i = s == 0 ? 0 : (s == 1 ? n - 1 : pick() % n);
        float h = host_element(r, i);
        ASSERT_EQ(std::memcmp(&h, &device[i], sizeof(float)), 0)
            << id << " element " << i << ": host " << h << " device " << device[i];
        ++compared;
      }
    }
  }
  std::printf("compared %zu sampled elements bit for bit (full presets)\n", compared);
}

}  // namespace
}  // namespace kb
