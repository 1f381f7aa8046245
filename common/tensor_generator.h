// Deterministic inputs and parameters: every tensor of a problem instance, drawn from a
// counter-based generator (Philox4x32-10, Random123) keyed by (seed, problem id, tensor name,
// trial). The same key gives bit-identical fp32 values on the host (here) and on the device
// (common/cuda/tensor_generator.cuh), because both evaluate the element formulas of
// common/philox_stream.h, which use only correctly rounded IEEE operations.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "common/host_tensor.h"
#include "common/philox_stream.h"
#include "common/problem_spec.h"

namespace kb {

// Which values: the run's seed, the trial, and the distribution (kDefault: the spec's own). A
// robustness distribution draws the same random words as kDefault and then moves them:
//   shift, scale, centered: every input x -> a x + b (a = 1, b = 100; a = 1000, b = 0;
//                           a = 1, b = -0.5), parameters unchanged;
//   random_affine:          parameters initialized to ones -> 1 + U(-0.5, 0.5), to zeros ->
//                           U(-0.5, 0.5) (norm gamma/beta, attention and other zero biases),
//                           inputs and every other parameter unchanged.
struct GeneratorKey {
  uint64_t seed = 0;
  uint32_t trial = 0;
  Distribution distribution = Distribution::kDefault;
};

// The 32-bit stream id of one tensor of one problem: FNV-1a of "<problem id>/<tensor name>".
uint32_t tensor_stream_id(const std::string& problem_id, const std::string& tensor_name);

// What one tensor is made of: a distribution over a Philox stream. The host realizes a recipe
// here; the device realizes the same recipe in common/cuda/tensor_generator.cu.
enum class RecipeKind {
  kUniform,           // torch.rand
  kSymmetricUniform,  // U(-bound, bound): kaiming/fan-in/xavier inits
  kNormal,            // torch.randn
  kConstant,          // ones, zeros
  kSoftmaxRows,       // softmax over the last dim of uniforms (times a drawn scale if `scaled`)
};

struct TensorRecipe {
  RecipeKind kind = RecipeKind::kUniform;
  philox::StreamKey key;
  Shape shape;
  float bound = 0;   // kSymmetricUniform
  float value = 0;   // kConstant
  float scale = 1;   // kSoftmaxRows: uniform draw of stream "<tensor>#scale" when scaled, else 1
  // A robustness distribution's move: each element x -> philox::affine(x, post_scale,
  // post_shift). Off (the spec's values, untouched) unless `moved`.
  bool moved = false;
  float post_scale = 1, post_shift = 0;
};

TensorRecipe input_recipe(const ProblemInstance& instance, size_t index, GeneratorKey key);
TensorRecipe param_recipe(const ProblemInstance& instance, size_t index, GeneratorKey key);
HostTensor<float> realize(const TensorRecipe& recipe);

// One input (index into spec().inputs) or parameter (index into spec().params).
HostTensor<float> generate_input(const ProblemInstance& instance, size_t index, GeneratorKey key);
HostTensor<float> generate_param(const ProblemInstance& instance, size_t index, GeneratorKey key);

// Every input and parameter, by spec name.
TensorSet generate_tensors(const ProblemInstance& instance, GeneratorKey key);

// FNV-1a 64 over the tensor's fp32 bytes (little-endian), as 16 hex digits: the fixtures'
// guard against generator drift.
std::string tensor_checksum(const HostTensor<float>& tensor);

}  // namespace kb
