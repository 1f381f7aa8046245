// The golden model: the CPU implementation of a problem, the arbiter of what the right answer is.
//
// Every configured problem's golden model is the CPU graph interpreter (kernels/cpu/graph_model.h),
// registered by kernels/cpu/graph_model_registry.cpp: it runs the spec's graph op by op as the
// PyTorch model's forward() does, reading every configuration value (strides, eps, groups, ...)
// from the instance's graph nodes and every tensor from the TensorSet by its spec name, so it is
// right for any valid dims. T is the accumulation and storage type of intermediates: double for
// the golden model, float for the CPU device's "custom" variant (the same algorithm in fp32).
// Test packs may register other models (tests/faulty_cpu_pack/).
//
// Thread safety: the registered functions are pure; call them from any thread. Registration
// happens during static initialization only.
#pragma once

#include <span>
#include <string_view>

#include "common/host_tensor.h"
#include "common/problem_spec.h"

namespace kb {

template <typename T>
using CpuForwardFn = HostTensor<T> (*)(const ProblemInstance&, const TensorSet&);

struct CpuModel {
  std::string_view id;
  CpuForwardFn<double> golden;  // accumulates in double
  CpuForwardFn<float> fp32;     // the same algorithm in float
};

// All registered models, sorted by id.
std::span<const CpuModel> cpu_models();
// nullptr when `id` has no model.
const CpuModel* find_cpu_model(std::string_view id);

// Called during static initialization; aborts when `model.id` is registered twice.
bool register_cpu_model(CpuModel model);

}  // namespace kb
