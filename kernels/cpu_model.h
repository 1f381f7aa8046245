// The golden model: one CPU implementation per problem, the arbiter of what the right answer is.
//
// Each kernels/<ID>_<name>/cpu.cpp defines, in namespace kb::cpu::<ID>,
//
//   template <typename T> HostTensor<T> forward(const ProblemInstance& p, const TensorSet& t);
//
// written op by op as the PyTorch model's forward() runs, reading every configuration value
// (strides, eps, groups, ...) from the instance's graph nodes and every tensor from `t` by its
// spec name, so it is right for any valid dims, not only the presets. T is the accumulation and
// storage type of intermediates: double for the golden model, float for the CPU device's
// "custom" variant (the same algorithm in fp32). The file ends with KB_REGISTER_CPU_MODEL(ID).
//
// Thread safety: forward() is a pure function of its arguments; call it from any thread.
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

// Called by KB_REGISTER_CPU_MODEL during static initialization.
bool register_cpu_model(CpuModel model);

}  // namespace kb

// Registers forward<double> and forward<float> of namespace kb::cpu::ID. The library holding the
// models is linked whole-archive, so every registration runs.
#define KB_REGISTER_CPU_MODEL(ID)                                                    \
  namespace kb::cpu::ID {                                                            \
  [[maybe_unused]] const bool kRegistered = ::kb::register_cpu_model(               \
      ::kb::CpuModel{#ID, &forward<double>, &forward<float>});                       \
  }
