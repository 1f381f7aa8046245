#include "common/tensor_generator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "common/parallel_for.h"

namespace kb {
namespace {

philox::StreamKey stream_key(const ProblemInstance& instance, const std::string& tensor,
                             GeneratorKey key) {
  return philox::StreamKey{static_cast<uint32_t>(key.seed), static_cast<uint32_t>(key.seed >> 32),
                           tensor_stream_id(instance.spec().id, tensor), key.trial};
}

// PyTorch's fan-in of a weight: size(1) * receptive field (for a transposed conv, size(1) is
// out_channels / groups, which is PyTorch's rule, not the mathematical fan-in).
double fan_in(const Shape& shape) {
  if (shape.size() < 2) {
    fatal("fan-in of a tensor of rank " + std::to_string(shape.size()));
  }
  double receptive = 1;
  for (size_t i = 2; i < shape.size(); ++i) receptive *= static_cast<double>(shape[i]);
  return static_cast<double>(shape[1]) * receptive;
}

double fan_out(const Shape& shape) {
  double receptive = 1;
  for (size_t i = 2; i < shape.size(); ++i) receptive *= static_cast<double>(shape[i]);
  return static_cast<double>(shape[0]) * receptive;
}

const Shape& param_shape(const ProblemInstance& instance, const std::string& name) {
  return instance.shape_of(name);
}

// An input's move under a robustness distribution (see GeneratorKey).
void move_input(Distribution d, TensorRecipe& r) {
  switch (d) {
    case Distribution::kShift: r.post_shift = 100.0f; break;
    case Distribution::kScale: r.post_scale = 1000.0f; break;
    case Distribution::kCentered: r.post_shift = -0.5f; break;
    default: return;
  }
  r.moved = true;
}

// f(i, word(key, i)) for i in [begin, end), one Philox block per 4 words (philox::word draws the
// whole block for each).
template <typename F>
void for_words(const philox::StreamKey& key, uint64_t begin, uint64_t end, F f) {
  for (uint64_t i = begin; i < end;) {
    const r123::Philox4x32::ctr_type block = philox::block(key, i >> 2);
    for (uint64_t j = i & 3; j < 4 && i < end; ++j, ++i) f(i, block[j]);
  }
}

// philox::symmetric_uniform's arithmetic on an already drawn uniform.
float symmetric_from_uniform(float u, float bound) {
  return philox::fmul(bound, philox::fsub(philox::fmul(2.0f, u), 1.0f));
}

}  // namespace

uint32_t tensor_stream_id(const std::string& problem_id, const std::string& tensor_name) {
  uint32_t h = 2166136261u;
  const std::string text = problem_id + "/" + tensor_name;
  for (unsigned char c : text) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

TensorRecipe input_recipe(const ProblemInstance& instance, size_t index, GeneratorKey key) {
  const TensorDecl& decl = instance.spec().inputs.at(index);
  TensorRecipe r;
  r.key = stream_key(instance, decl.name, key);
  r.shape = instance.input_shapes().at(index);
  switch (decl.generator) {
    case InputGenerator::kUniform: r.kind = RecipeKind::kUniform; break;
    case InputGenerator::kNormal: r.kind = RecipeKind::kNormal; break;
    case InputGenerator::kSoftmaxUniform: r.kind = RecipeKind::kSoftmaxRows; break;
    case InputGenerator::kSoftmaxScaledUniform:
      r.kind = RecipeKind::kSoftmaxRows;
      r.scale = philox::uniform(stream_key(instance, decl.name + "#scale", key), 0);
      break;
  }
  move_input(key.distribution, r);
  return r;
}

TensorRecipe param_recipe(const ProblemInstance& instance, size_t index, GeneratorKey key) {
  const ParamDecl& decl = instance.spec().params.at(index);
  TensorRecipe r;
  r.key = stream_key(instance, decl.name, key);
  r.shape = instance.param_shapes().at(index);
  switch (decl.init) {
    case ParamInit::kKaimingUniform:
      r.kind = RecipeKind::kSymmetricUniform;
      r.bound = static_cast<float>(1.0 / std::sqrt(fan_in(r.shape)));
      break;
    case ParamInit::kFanInUniform:
      r.kind = RecipeKind::kSymmetricUniform;
      r.bound = static_cast<float>(1.0 / std::sqrt(fan_in(param_shape(instance, decl.fan_in_of))));
      break;
    case ParamInit::kXavierUniform:
      r.kind = RecipeKind::kSymmetricUniform;
      r.bound = static_cast<float>(std::sqrt(6.0 / (fan_in(r.shape) + fan_out(r.shape))));
      break;
    case ParamInit::kOnes: r.kind = RecipeKind::kConstant; r.value = 1.0f; break;
    case ParamInit::kZeros: r.kind = RecipeKind::kConstant; r.value = 0.0f; break;
    case ParamInit::kNormal: r.kind = RecipeKind::kNormal; break;
  }
  const bool affine = decl.init == ParamInit::kOnes || decl.init == ParamInit::kZeros;
  if (key.distribution == Distribution::kRandomAffine && affine) {
    r.kind = RecipeKind::kSymmetricUniform;  // U(-0.5, 0.5), then + 1 for ones
    r.bound = 0.5f;
    r.moved = true;
    r.post_shift = decl.init == ParamInit::kOnes ? 1.0f : 0.0f;
  }
  return r;
}

HostTensor<float> realize(const TensorRecipe& r) {
  HostTensor<float> t(r.shape);
  const int64_t n = t.numel();
  float* out = t.data.data();
  // Element i is a pure function of (recipe, i): chunks on several threads give the serial
  // values bit for bit. Chunks are multiples of 4 elements, so a block of uniforms starts one.
  static_assert(kParallelGrain % 4 == 0);
  auto move = [&r](float x) { return r.moved ? philox::affine(x, r.post_scale, r.post_shift) : x; };
  switch (r.kind) {
    case RecipeKind::kUniform:
      parallel_for(n, [&](int64_t begin, int64_t end) {
        for_words(r.key, begin, end,
                  [&](uint64_t i, uint32_t w) { out[i] = move(philox::uniform_from_word(w)); });
      });
      break;
    case RecipeKind::kSymmetricUniform:
      parallel_for(n, [&](int64_t begin, int64_t end) {
        for_words(r.key, begin, end, [&](uint64_t i, uint32_t w) {
          out[i] = move(symmetric_from_uniform(philox::uniform_from_word(w), r.bound));
        });
      });
      break;
    case RecipeKind::kNormal:
      parallel_for(n, [&](int64_t begin, int64_t end) {
        for (auto i = static_cast<uint64_t>(begin); i < static_cast<uint64_t>(end); ++i) {
          out[i] = move(philox::normal(r.key, i));
        }
      });
      break;
    case RecipeKind::kConstant:
      parallel_for(
          n, [&](int64_t begin, int64_t end) { std::fill(out + begin, out + end, move(r.value)); });
      break;
    case RecipeKind::kSoftmaxRows: {
      const uint64_t len = r.shape.empty() ? 1 : static_cast<uint64_t>(r.shape.back());
      const auto rows = static_cast<int64_t>(static_cast<uint64_t>(n) / len);
      const int64_t grain = std::max<int64_t>(1, kParallelGrain / static_cast<int64_t>(len));
      parallel_for(
          rows,
          [&](int64_t first, int64_t last) {
            for (auto row = static_cast<uint64_t>(first); row < static_cast<uint64_t>(last);
                 ++row) {
              philox::SoftmaxRowStats st = philox::softmax_row_stats(r.key, row, len, r.scale);
              for (uint64_t j = 0; j < len; ++j) {
                out[row * len + j] = move(philox::softmax_element(r.key, row, len, j, r.scale, st));
              }
            }
          },
          grain);
      break;
    }
  }
  return t;
}

HostTensor<float> generate_input(const ProblemInstance& instance, size_t index, GeneratorKey key) {
  return realize(input_recipe(instance, index, key));
}

HostTensor<float> generate_param(const ProblemInstance& instance, size_t index, GeneratorKey key) {
  return realize(param_recipe(instance, index, key));
}

TensorSet generate_tensors(const ProblemInstance& instance, GeneratorKey key) {
  TensorSet set;
  for (size_t i = 0; i < instance.spec().inputs.size(); ++i) {
    set.put(instance.spec().inputs[i].name, generate_input(instance, i, key));
  }
  for (size_t i = 0; i < instance.spec().params.size(); ++i) {
    set.put(instance.spec().params[i].name, generate_param(instance, i, key));
  }
  return set;
}

std::string tensor_checksum(const HostTensor<float>& tensor) {
  uint64_t h = 14695981039346656037ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(tensor.data.data());
  for (size_t i = 0; i < tensor.data.size() * sizeof(float); ++i) {
    h ^= bytes[i];
    h *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace kb
