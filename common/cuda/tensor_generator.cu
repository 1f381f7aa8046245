#include "common/cuda/cuda_check.h"
#include "common/cuda/tensor_generator.cuh"

namespace kb {
namespace {

constexpr int kThreads = 256;

// A robustness distribution's move (TensorRecipe::moved), as the host's realize() applies it.
struct Move {
  bool on;
  float scale, shift;
  __device__ float operator()(float x) const { return on ? philox::affine(x, scale, shift) : x; }
};

__global__ void fill_elements(float* out, uint64_t n, RecipeKind kind, philox::StreamKey key,
                              float bound, float value, Move move) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += uint64_t(gridDim.x) * blockDim.x) {
    float v;
    switch (kind) {
      case RecipeKind::kUniform:
        v = philox::uniform(key, i);
        break;
      case RecipeKind::kSymmetricUniform:
        v = philox::symmetric_uniform(key, i, bound);
        break;
      case RecipeKind::kNormal:
        v = philox::normal(key, i);
        break;
      default:
        v = value;
        break;
    }
    out[i] = move(v);
  }
}

// One thread per row: the row's max and sum are sequential by definition (bit-identity with the
// host), then the row's elements are written by the same thread.
__global__ void fill_softmax_rows(float* out, uint64_t rows, uint64_t len, philox::StreamKey key,
                                  float scale, Move move) {
  uint64_t row = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x;
  if (row >= rows) return;
  philox::SoftmaxRowStats st = philox::softmax_row_stats(key, row, len, scale);
  for (uint64_t j = 0; j < len; ++j)
    out[row * len + j] = move(philox::softmax_element(key, row, len, j, scale, st));
}

}  // namespace

Status realize_on_device(const TensorRecipe& recipe, float* out, cudaStream_t stream) {
  const uint64_t n = static_cast<uint64_t>(element_count(recipe.shape));
  if (n == 0) return Status::ok();
  const Move move{recipe.moved, recipe.post_scale, recipe.post_shift};
  if (recipe.kind == RecipeKind::kSoftmaxRows) {
    const uint64_t len = recipe.shape.empty() ? 1 : static_cast<uint64_t>(recipe.shape.back());
    const uint64_t rows = n / len;
    fill_softmax_rows<<<static_cast<unsigned>((rows + 127) / 128), 128, 0, stream>>>(
        out, rows, len, recipe.key, recipe.scale, move);
  } else {
    const uint64_t blocks = std::min<uint64_t>((n + kThreads - 1) / kThreads, 65536);
    fill_elements<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        out, n, recipe.kind, recipe.key, recipe.bound, recipe.value, move);
  }
  KB_CUDA_TRY(cudaGetLastError());
  return Status::ok();
}

}  // namespace kb
