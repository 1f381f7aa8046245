// The buffer plan of a problem graph, shared by the golden model's interpreter (kernels/cpu/) and
// the GPU reference's (kernels/eager/graph_reference.cu): which storage every tensor lives in
// and after which node a storage is dead, so that an interpreter frees (CPU) or hands back for
// reuse (GPU, as PyTorch's caching allocator does) every intermediate right after its last use.
//
// Storages: each graph input and parameter is one (external: the caller owns it); each node's
// output is a new storage, except a `reshape`, whose output is a view of its input's storage (the
// data are dense and row-major, so a reshape never moves them). The storage that the spec's
// output lives in is the caller's output buffer.
//
// Thread safety: a GraphPlan is an immutable value.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/problem_spec.h"

namespace kb::graph {

enum class StorageKind {
  kInput,         // a forward() argument (index into spec.inputs)
  kParam,         // a parameter (index into spec.params)
  kIntermediate,  // produced by a node and dead after `last_use`
  kOutput,        // holds the spec's output: the caller's output buffer
};

struct Storage {
  StorageKind kind = StorageKind::kIntermediate;
  size_t index = 0;       // kInput / kParam: the position in the spec's list
  int64_t elements = 0;   // the largest tensor viewing it
  int producer = -1;      // the node that writes it; -1 for inputs and parameters
  int last_use = -1;      // the last node that reads any view of it; -1 if none
};

struct GraphPlan {
  std::vector<Storage> storages;
  std::map<std::string, size_t> storage_of;  // every tensor name -> its storage
  // release_after[i]: the intermediate storages that are dead once node i has run.
  std::vector<std::vector<size_t>> release_after;
  // True when the output is a view of an input or parameter (a graph of reshapes only): the
  // interpreter must copy it into the output buffer.
  bool output_aliases_external = false;
};

// Plans `problem`'s graph (validated: every name resolves, nodes are in order).
GraphPlan plan_graph(const ProblemInstance& problem);

// Whether `op` makes its output a view of its first input (no data movement).
bool is_view_op(const std::string& op);

}  // namespace kb::graph
