// Registers the graph interpreter (graph_model.h) as the golden model of every configured
// problem: adding a problem is adding its spec, no per-problem C++.
#include "kernels/cpu/graph_model.h"
#include "kernels/cpu_model.h"
#include "kernels/graph/problem_ids.h"

namespace kb::cpu {
namespace {

[[maybe_unused]] const bool kRegistered = [] {
  for (std::string_view id : graph::configured_problem_ids()) {
    register_cpu_model(CpuModel{id, &run_graph<double>, &run_graph<float>});
  }
  return true;
}();

}  // namespace
}  // namespace kb::cpu
