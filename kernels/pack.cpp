// The kernel pack's entry point: kb_pack_v1() exposes the golden models and (when built with CUDA)
// the registered reference and custom implementations through the C ABI of pack_abi.h.
//
// One source, two kinds of pack (pack_abi.h), chosen by KB_PACK_ROLE at compile time:
//   KB_PACK_ROLE_REFERENCE  the trusted reference pack: `reference` and `cpu_golden` only;
//   KB_PACK_ROLE_CANDIDATE  a candidate pack: `custom` and `cpu_fp32` (the CPU device's custom).
// Every other variant reads as not implemented, so a pack answers only for its own slot.
#include "kernels/pack_abi.h"

#ifndef KB_GIT_COMMIT
#include "kb_git_commit.h"  // generated at build time (kernels/write_commit.cmake)
#endif

#include <algorithm>
#include <cstdio>
#include <exception>
#include <vector>
#include <memory>
#include <optional>
#include <string>

#include "common/spec_loader.h"
#include "kernels/cpu_model.h"
#if KB_PACK_WITH_CUDA
#include "kernels/implementation.h"
#endif

struct kb_instance_v1 {
  std::optional<kb::ProblemInstance> problem;
  int32_t variant = 0;
  const kb::CpuModel* cpu = nullptr;
#if KB_PACK_WITH_CUDA
  std::unique_ptr<kb::Implementation> impl;
#endif
};

#define KB_PACK_ROLE_REFERENCE 1
#define KB_PACK_ROLE_CANDIDATE 2
#ifndef KB_PACK_ROLE
#error "KB_PACK_ROLE must be KB_PACK_ROLE_REFERENCE or KB_PACK_ROLE_CANDIDATE"
#endif

namespace {

// Whether this pack's role offers `variant` at all.
bool role_offers(int32_t variant) {
  if (KB_PACK_ROLE == KB_PACK_ROLE_REFERENCE) {
    return variant == KB_VARIANT_REFERENCE || variant == KB_VARIANT_CPU_GOLDEN;
  }
  return variant == KB_VARIANT_CUSTOM || variant == KB_VARIANT_CPU_FP32;
}

int32_t report(int32_t code, const std::string& message, char* error, size_t error_len) {
  if (error && error_len) std::snprintf(error, error_len, "%s", message.c_str());
  return code;
}

kb::Shape shape_of(const kb_tensor_v1& t) { return kb::Shape(t.shape, t.shape + t.rank); }

// The ids of every golden model and registered implementation, sorted, computed once.
const std::vector<std::string>& problem_table() {
  static const std::vector<std::string> kIds = [] {
    std::vector<std::string> ids;
    for (const kb::CpuModel& m : kb::cpu_models()) ids.emplace_back(m.id);
#if KB_PACK_WITH_CUDA
    for (const std::string& id : kb::registered_problem_ids()) {
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
#endif
    std::sort(ids.begin(), ids.end());
    return ids;
  }();
  return kIds;
}

int32_t problem_count() { return static_cast<int32_t>(problem_table().size()); }

const char* problem_id(int32_t index) {
  const auto& ids = problem_table();
  return index >= 0 && index < static_cast<int32_t>(ids.size()) ? ids[index].c_str() : nullptr;
}

int has_variant(const char* problem_id, int32_t variant) {
  if (!role_offers(variant)) return 0;
  switch (variant) {
    case KB_VARIANT_CPU_GOLDEN:
    case KB_VARIANT_CPU_FP32: return kb::find_cpu_model(problem_id) != nullptr;
#if KB_PACK_WITH_CUDA
    case KB_VARIANT_REFERENCE:
      return kb::find_implementation(problem_id, kb::Variant::kReference) != nullptr;
    case KB_VARIANT_CUSTOM: return kb::find_implementation(problem_id, kb::Variant::kCustom) != nullptr;
#endif
    default: return 0;
  }
}

int32_t create_gpu(kb_instance_v1& inst, void* stream, char* error, size_t error_len) {
#if KB_PACK_WITH_CUDA
  const std::string& id = inst.problem->spec().id;
  auto variant = inst.variant == KB_VARIANT_CUSTOM ? kb::Variant::kCustom : kb::Variant::kReference;
  kb::ImplementationFactory factory = kb::find_implementation(id, variant);
  if (!factory) return report(KB_PACK_NOT_IMPLEMENTED, id + " has no such variant in this pack", error, error_len);
  inst.impl = factory();
  kb::Status s = inst.impl->setup(*inst.problem, static_cast<cudaStream_t>(stream));
  if (s.code() == kb::StatusCode::kFailedPrecondition) return report(KB_PACK_UNSUPPORTED, s.message(), error, error_len);
  if (!s.is_ok()) return report(KB_PACK_ERROR, s.message(), error, error_len);
  return KB_PACK_OK;
#else
  (void)inst;
  (void)stream;
  return report(KB_PACK_NOT_IMPLEMENTED, "this pack was built without CUDA", error, error_len);
#endif
}

int32_t create_instance(const char* spec_yaml, const char* spec_file, const kb_dim_v1* dims, int32_t num_dims,
               int32_t variant, void* stream, kb_instance_v1** out, char* error, size_t error_len) {
  if (!role_offers(variant)) {
    return report(KB_PACK_NOT_IMPLEMENTED,
                  KB_PACK_ROLE == KB_PACK_ROLE_REFERENCE ? "the reference pack holds no custom variants"
                                                         : "a candidate pack holds only custom variants",
                  error, error_len);
  }
  auto spec = kb::parse_problem_spec(spec_yaml, spec_file ? spec_file : "<spec>");
  if (!spec.is_ok()) return report(KB_PACK_ERROR, spec.status().message(), error, error_len);
  kb::Dims bound;
  for (int32_t i = 0; i < num_dims; ++i) bound[dims[i].name] = dims[i].value;
  auto problem = kb::ProblemInstance::create(spec.value(), bound);
  if (!problem.is_ok()) return report(KB_PACK_ERROR, problem.status().message(), error, error_len);
  auto inst = std::make_unique<kb_instance_v1>();
  inst->problem = std::move(problem).value();
  inst->variant = variant;
  if (variant == KB_VARIANT_CPU_GOLDEN || variant == KB_VARIANT_CPU_FP32) {
    inst->cpu = kb::find_cpu_model(inst->problem->spec().id);
    if (!inst->cpu) return report(KB_PACK_NOT_IMPLEMENTED, "no golden model for " + inst->problem->spec().id, error, error_len);
  } else if (int32_t code = create_gpu(*inst, stream, error, error_len); code != KB_PACK_OK) {
    return code;
  }
  *out = inst.release();
  return KB_PACK_OK;
}

kb::TensorSet host_tensors(const kb::ProblemInstance& p, const kb_tensor_v1* inputs, const kb_tensor_v1* params) {
  kb::TensorSet set;
  auto put = [&set](const std::string& name, const kb_tensor_v1& t) {
    kb::HostTensor<float> host(shape_of(t));
    std::copy(t.data, t.data + host.numel(), host.data.begin());
    set.put(name, std::move(host));
  };
  for (size_t i = 0; i < p.spec().inputs.size(); ++i) put(p.spec().inputs[i].name, inputs[i]);
  for (size_t i = 0; i < p.spec().params.size(); ++i) put(p.spec().params[i].name, params[i]);
  return set;
}

int32_t run_cpu(kb_instance_v1& inst, const kb_tensor_v1* inputs, const kb_tensor_v1* params,
                const kb_tensor_v1* output) {
  kb::TensorSet set = host_tensors(*inst.problem, inputs, params);
  const int64_t n = kb::element_count(shape_of(*output));
  if (inst.variant == KB_VARIANT_CPU_GOLDEN) {
    kb::HostTensor<double> y = inst.cpu->golden(*inst.problem, set);
    for (int64_t i = 0; i < n; ++i) output->data[i] = static_cast<float>(y.data[i]);
  } else {
    kb::HostTensor<float> y = inst.cpu->fp32(*inst.problem, set);
    std::copy(y.data.begin(), y.data.begin() + n, output->data);
  }
  return KB_PACK_OK;
}

int32_t run_instance(kb_instance_v1* inst, const kb_tensor_v1* inputs, int32_t num_inputs, const kb_tensor_v1* params,
            int32_t num_params, const kb_tensor_v1* output, void* stream, char* error, size_t error_len) {
  const kb::ProblemInstance& p = *inst->problem;
  if (num_inputs != static_cast<int32_t>(p.spec().inputs.size()) ||
      num_params != static_cast<int32_t>(p.spec().params.size())) {
    return report(KB_PACK_ERROR, "run: wrong number of inputs or parameters for " + p.spec().id, error, error_len);
  }
  if (shape_of(*output) != p.output_shape()) {
    return report(KB_PACK_ERROR, "run: output shape " + kb::shape_to_string(shape_of(*output)) +
                                     " differs from the problem's " + kb::shape_to_string(p.output_shape()),
                  error, error_len);
  }
  if (inst->cpu) return run_cpu(*inst, inputs, params, output);
#if KB_PACK_WITH_CUDA
  std::vector<kb::DeviceTensor> in, par;
  for (int32_t i = 0; i < num_inputs; ++i) in.push_back({inputs[i].data, shape_of(inputs[i])});
  for (int32_t i = 0; i < num_params; ++i) par.push_back({params[i].data, shape_of(params[i])});
  kb::ImplArgs args{in, par, {output->data, shape_of(*output)}};
  kb::Status s = inst->impl->run(args, static_cast<cudaStream_t>(stream));
  if (!s.is_ok()) return report(KB_PACK_ERROR, s.message(), error, error_len);
  return KB_PACK_OK;
#else
  (void)stream;
  return report(KB_PACK_ERROR, "this pack was built without CUDA", error, error_len);
#endif
}

// No C++ exception may cross the C ABI.
int32_t create(const char* spec_yaml, const char* spec_file, const kb_dim_v1* dims, int32_t num_dims,
               int32_t variant, void* stream, kb_instance_v1** out, char* error, size_t error_len) {
  try {
    return create_instance(spec_yaml, spec_file, dims, num_dims, variant, stream, out, error, error_len);
  } catch (const std::exception& e) {
    return report(KB_PACK_ERROR, std::string("create: ") + e.what(), error, error_len);
  }
}

int32_t run(kb_instance_v1* inst, const kb_tensor_v1* inputs, int32_t num_inputs, const kb_tensor_v1* params,
            int32_t num_params, const kb_tensor_v1* output, void* stream, char* error, size_t error_len) {
  try {
    return run_instance(inst, inputs, num_inputs, params, num_params, output, stream, error, error_len);
  } catch (const std::exception& e) {
    return report(KB_PACK_ERROR, std::string("run: ") + e.what(), error, error_len);
  }
}

void destroy(kb_instance_v1* inst) { delete inst; }

const kb_pack_v1_t kPack = {
    KB_PACK_ABI_VERSION, KB_VERSION, KB_GIT_COMMIT, KB_BUILD_INFO, &problem_count, &problem_id,
    &has_variant,        &create,    &run,          &destroy,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const kb_pack_v1_t* kb_pack_v1(void) { return &kPack; }
