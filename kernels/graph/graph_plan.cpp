#include "kernels/graph/graph_plan.h"

#include <algorithm>

namespace kb::graph {

bool is_view_op(const std::string& op) { return op == "reshape"; }

GraphPlan plan_graph(const ProblemInstance& problem) {
  const ProblemSpec& spec = problem.spec();
  GraphPlan plan;
  auto add_storage = [&plan, &problem](const std::string& tensor, Storage storage) {
    storage.elements = element_count(problem.shape_of(tensor));
    plan.storage_of[tensor] = plan.storages.size();
    plan.storages.push_back(storage);
  };
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    add_storage(spec.inputs[i].name, {.kind = StorageKind::kInput, .index = i});
  }
  for (size_t i = 0; i < spec.params.size(); ++i) {
    add_storage(spec.params[i].name, {.kind = StorageKind::kParam, .index = i});
  }
  for (size_t n = 0; n < spec.graph.size(); ++n) {
    const GraphNode& node = spec.graph[n];
    const int step = static_cast<int>(n);
    for (const std::string& in : node.inputs) {
      Storage& s = plan.storages[plan.storage_of.at(in)];
      s.last_use = std::max(s.last_use, step);
    }
    if (is_view_op(node.op)) {
      const size_t viewed = plan.storage_of.at(node.inputs[0]);
      plan.storage_of[node.output] = viewed;
      Storage& s = plan.storages[viewed];
      s.elements = std::max(s.elements, element_count(problem.shape_of(node.output)));
    } else {
      add_storage(node.output, {.kind = StorageKind::kIntermediate, .producer = step});
    }
  }
  Storage& out = plan.storages[plan.storage_of.at(spec.output)];
  if (out.kind == StorageKind::kIntermediate) {
    out.kind = StorageKind::kOutput;
  } else {
    plan.output_aliases_external = true;
  }
  plan.release_after.resize(spec.graph.size());
  for (size_t i = 0; i < plan.storages.size(); ++i) {
    const Storage& s = plan.storages[i];
    if (s.kind != StorageKind::kIntermediate) continue;
    // A tensor nobody reads dies right after the node that made it.
    const int dead_after = std::max(s.last_use, s.producer);
    plan.release_after[static_cast<size_t>(dead_after)].push_back(i);
  }
  return plan;
}

}  // namespace kb::graph
