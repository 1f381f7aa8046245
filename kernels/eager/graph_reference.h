// The reference of every problem: the GPU backend of the graph executor. It interprets the
// spec's `graph:` node by node with the launches PyTorch eager makes for each op in strict fp32
// (graph_nodes.h), so no problem needs its own reference code.
//
// Memory as eager's caching allocator gives it: setup() replays the graph's allocations against
// a pool of blocks, each intermediate (and each op's temporaries) taking the smallest free block
// that fits and giving it back right after its last use (kernels/graph/graph_plan.h); the pool's
// blocks are allocated once, so run() allocates nothing. The output storage is the caller's
// output buffer, and a reshape is a view of its input.
//
// Ownership: owns its blocks and the nodes' cuDNN plans. Thread safety: as Implementation.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "kernels/eager/graph_nodes.h"
#include "kernels/graph/graph_plan.h"
#include "kernels/implementation.h"

namespace kb::graph {

class GraphReference final : public Implementation {
 public:
  GraphReference() = default;
  ~GraphReference() override;
  GraphReference(const GraphReference&) = delete;
  GraphReference& operator=(const GraphReference&) = delete;

  Status setup(const ProblemInstance& problem, cudaStream_t stream) override;
  Status run(const ImplArgs& args, cudaStream_t stream) override;

  // Device bytes of the block pool (intermediates and temporaries, not inputs or output).
  int64_t pool_bytes() const;

 private:
  struct Step {  // one node with its tensors resolved to storages
    GpuNode node;
    std::vector<size_t> in_storages;
    std::vector<Shape> in_shapes;
    size_t out_storage = 0;
    Shape out_shape;
    std::vector<size_t> scratch_blocks;
  };

  Status plan_blocks();

  const ProblemInstance* problem_ = nullptr;
  GraphPlan plan_;
  std::vector<Step> steps_;
  std::vector<int64_t> block_elements_;
  std::vector<float*> blocks_;                // owned
  std::vector<int64_t> storage_block_;        // storage -> block, -1 when external
  std::vector<float*> storage_data_;          // per run: storage -> device pointer
  std::vector<DeviceTensor> inputs_scratch_;  // per run: one node's inputs
  std::vector<float*> scratch_pointers_;
};

}  // namespace kb::graph
