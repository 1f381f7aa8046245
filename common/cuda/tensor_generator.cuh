// The device half of kbfleet's deterministic generator: realizes a TensorRecipe
// (common/tensor_generator.h) in device memory, bit-identical to the host's realize().
//
// Thread safety: enqueues work on the caller's stream; concurrent calls on different buffers
// are safe.
#pragma once

#include <cuda_runtime.h>

#include "common/status.h"
#include "common/tensor_generator.h"

namespace kb {

// `out` holds element_count(recipe.shape) floats of device memory. Asynchronous on `stream`;
// returns the launch status.
Status realize_on_device(const TensorRecipe& recipe, float* out, cudaStream_t stream);

}  // namespace kb
