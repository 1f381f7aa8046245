// The C++ side of a problem implementation in the kernel pack: `reference` (cuDNN/cuBLAS and
// one kernel per PyTorch op, strict fp32) and `custom` (our fused kernels), both on the device.
//
// An Implementation is created for one ProblemInstance (dims bound), may plan in setup() (cuDNN
// descriptors, algorithm choice, workspace allocation: everything that PyTorch eager would cache
// or that a kernel engineer would hoist out of the timed call), and then run() is called many
// times with different input sets. run() must enqueue all its work on `stream` and nothing else,
// must not write its inputs or parameters, and must write every element of the output.
//
// The reference of every problem is the graph executor's GPU backend (kernels/eager/
// graph_reference.h), registered for every configured problem; each kernels/<ID>_<name>/custom.cu
// ends with KB_REGISTER_IMPLEMENTATION(ID, custom, Class). The pack (kernels/pack.cpp) exposes
// the registry through the C ABI of kernels/pack_abi.h.
//
// Thread safety: one Implementation object is used by one thread at a time.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/problem_spec.h"
#include "common/status.h"

namespace kb {

// A dense, row-major fp32 tensor in device memory. Not owning.
struct DeviceTensor {
  float* data = nullptr;
  Shape shape;
  int64_t numel() const { return element_count(shape); }
};

// The tensors of one call, in spec order (inputs: forward() arguments; params: spec parameters).
struct ImplArgs {
  std::span<const DeviceTensor> inputs;
  std::span<const DeviceTensor> params;
  DeviceTensor output;
};

class Implementation {
 public:
  virtual ~Implementation() = default;
  // Plans for `problem` (which outlives this object). Allocations made here are freed by the
  // destructor. May synchronize. Returns an error (e.g. CUDNN_STATUS_NOT_SUPPORTED as
  // Status::failed_precondition) when the shapes cannot be handled.
  virtual Status setup(const ProblemInstance& problem, cudaStream_t stream) = 0;
  // Computes output = f(inputs, params) asynchronously on `stream`.
  virtual Status run(const ImplArgs& args, cudaStream_t stream) = 0;
};

enum class Variant { kReference, kCustom };

using ImplementationFactory = std::unique_ptr<Implementation> (*)();

// Called by KB_REGISTER_IMPLEMENTATION during static initialization.
bool register_implementation(std::string_view problem_id, Variant variant,
                             ImplementationFactory factory);
// nullptr when the problem has no such variant (custom variants are optional).
ImplementationFactory find_implementation(std::string_view problem_id, Variant variant);
// Every problem id with at least one registered implementation.
std::vector<std::string> registered_problem_ids();

// The index of a tensor of the spec by name, for readable run() code:
//   const DeviceTensor& x = args.inputs[input_index(p, "x")];
size_t input_index(const ProblemInstance& problem, std::string_view name);
size_t param_index(const ProblemInstance& problem, std::string_view name);

}  // namespace kb

#define KB_VARIANT_reference ::kb::Variant::kReference
#define KB_VARIANT_custom ::kb::Variant::kCustom

// Registers Class (default-constructible, derived from Implementation) as `variant` (reference or
// custom) of problem ID. The pack is linked whole-archive, so every registration runs.
#define KB_REGISTER_IMPLEMENTATION(ID, variant, Class)                                       \
  namespace {                                                                                \
  [[maybe_unused]] const bool kb_registered_##variant = ::kb::register_implementation(      \
      #ID, KB_VARIANT_##variant,                                                             \
      []() -> std::unique_ptr<::kb::Implementation> { return std::make_unique<Class>(); }); \
  }
