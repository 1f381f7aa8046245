#include "kernels/device/cuda_check.h"
#include "kernels/device/tensor_generator.cuh"

namespace kb {
namespace {

constexpr int kThreads = 256;

__global__ void fill_elements(float* out, uint64_t n, RecipeKind kind, philox::StreamKey key,
                              float bound, float value) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += uint64_t(gridDim.x) * blockDim.x) {
    switch (kind) {
      case RecipeKind::kUniform: out[i] = philox::uniform(key, i); break;
      case RecipeKind::kSymmetricUniform: out[i] = philox::symmetric_uniform(key, i, bound); break;
      case RecipeKind::kNormal: out[i] = philox::normal(key, i); break;
      default: out[i] = value; break;
    }
  }
}

// One thread per row: the row's max and sum are sequential by definition (bit-identity with the
// host), then the row's elements are written by the same thread.
__global__ void fill_softmax_rows(float* out, uint64_t rows, uint64_t len, philox::StreamKey key,
                                  float scale) {
  uint64_t row = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x;
  if (row >= rows) return;
  philox::SoftmaxRowStats st = philox::softmax_row_stats(key, row, len, scale);
  for (uint64_t j = 0; j < len; ++j) out[row * len + j] = philox::softmax_element(key, row, len, j, scale, st);
}

}  // namespace

Status realize_on_device(const TensorRecipe& recipe, float* out, cudaStream_t stream) {
  const uint64_t n = static_cast<uint64_t>(element_count(recipe.shape));
  if (n == 0) return Status::ok();
  if (recipe.kind == RecipeKind::kSoftmaxRows) {
    const uint64_t len = recipe.shape.empty() ? 1 : static_cast<uint64_t>(recipe.shape.back());
    const uint64_t rows = n / len;
    fill_softmax_rows<<<static_cast<unsigned>((rows + 127) / 128), 128, 0, stream>>>(out, rows, len, recipe.key,
                                                                               recipe.scale);
  } else {
    const uint64_t blocks = std::min<uint64_t>((n + kThreads - 1) / kThreads, 65536);
    fill_elements<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(out, n, recipe.kind, recipe.key,
                                                                         recipe.bound, recipe.value);
  }
  KB_CUDA_TRY(cudaGetLastError());
  return Status::ok();
}

}  // namespace kb
