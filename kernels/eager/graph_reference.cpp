#include "kernels/eager/graph_reference.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <string>

#include "common/cuda/cuda_check.h"
#include "kernels/graph/problem_ids.h"

namespace kb::graph {
namespace {

// The caching allocator's choice: the smallest free block that fits, else a new block.
class BlockPool {
 public:
  size_t take(int64_t elements) {
    size_t best = std::numeric_limits<size_t>::max();
    for (size_t b = 0; b < sizes_.size(); ++b) {
      if (!free_[b] || sizes_[b] < elements) continue;
      if (best == std::numeric_limits<size_t>::max() || sizes_[b] < sizes_[best]) best = b;
    }
    if (best == std::numeric_limits<size_t>::max()) {
      best = sizes_.size();
      sizes_.push_back(std::max<int64_t>(elements, 1));
      free_.push_back(false);
    }
    free_[best] = false;
    return best;
  }
  void give_back(size_t block) { free_[block] = true; }
  const std::vector<int64_t>& sizes() const { return sizes_; }

 private:
  std::vector<int64_t> sizes_;
  std::vector<bool> free_;
};

}  // namespace

GraphReference::~GraphReference() {
  for (float* b : blocks_) KB_CUDA_WARN(cudaFree(b));
}

Status GraphReference::setup(const ProblemInstance& problem, cudaStream_t stream) {
  if (problem_ != nullptr) return Status::failed_precondition("GraphReference: setup() twice");
  problem_ = &problem;
  plan_ = plan_graph(problem);
  for (const GraphNode& node : problem.spec().graph) {
    Step step;
    for (const std::string& in : node.inputs) {
      step.in_storages.push_back(plan_.storage_of.at(in));
      step.in_shapes.push_back(problem.shape_of(in));
    }
    step.out_storage = plan_.storage_of.at(node.output);
    step.out_shape = problem.shape_of(node.output);
    if (!is_view_op(node.op)) {
      Result<GpuNode> made = make_gpu_node(problem, node, stream);
      if (!made.is_ok()) return made.status();
      step.node = std::move(made).value();
    }
    steps_.push_back(std::move(step));
  }
  return plan_blocks();
}

// Replays the allocations eager would make, in graph order, and allocates the pool.
Status GraphReference::plan_blocks() {
  BlockPool pool;
  storage_block_.assign(plan_.storages.size(), -1);
  for (size_t i = 0; i < steps_.size(); ++i) {
    Step& step = steps_[i];
    const Storage& out = plan_.storages[step.out_storage];
    if (step.node.run && out.kind == StorageKind::kIntermediate) {  // a view allocates nothing
      storage_block_[step.out_storage] = static_cast<int64_t>(pool.take(out.elements));
    }
    for (int64_t elements : step.node.scratch_elements) {
      step.scratch_blocks.push_back(pool.take(elements));
    }
    // Temporaries die when the op returns, then the tensors whose last reader this was.
    for (size_t b : step.scratch_blocks) pool.give_back(b);
    for (size_t s : plan_.release_after[i]) {
      if (storage_block_[s] >= 0) pool.give_back(static_cast<size_t>(storage_block_[s]));
    }
  }
  block_elements_ = pool.sizes();
  for (int64_t elements : block_elements_) {
    float* block = nullptr;
    KB_CUDA_TRY(cudaMalloc(&block, static_cast<size_t>(elements) * sizeof(float)));
    blocks_.push_back(block);
  }
  storage_data_.assign(plan_.storages.size(), nullptr);
  return Status::ok();
}

int64_t GraphReference::pool_bytes() const {
  int64_t total = 0;
  for (int64_t e : block_elements_) total += e * static_cast<int64_t>(sizeof(float));
  return total;
}

Status GraphReference::run(const ImplArgs& args, cudaStream_t stream) {
  if (problem_ == nullptr)
    return Status::failed_precondition("GraphReference: run() before setup()");
  for (size_t s = 0; s < plan_.storages.size(); ++s) {
    const Storage& storage = plan_.storages[s];
    switch (storage.kind) {
      case StorageKind::kInput:
        storage_data_[s] = args.inputs[storage.index].data;
        break;
      case StorageKind::kParam:
        storage_data_[s] = args.params[storage.index].data;
        break;
      case StorageKind::kOutput:
        storage_data_[s] = args.output.data;
        break;
      case StorageKind::kIntermediate:
        storage_data_[s] =
            storage_block_[s] >= 0 ? blocks_[static_cast<size_t>(storage_block_[s])] : nullptr;
        break;
    }
  }
  for (const Step& step : steps_) {
    if (!step.node.run) continue;
    inputs_scratch_.clear();
    for (size_t k = 0; k < step.in_storages.size(); ++k) {
      inputs_scratch_.push_back({storage_data_[step.in_storages[k]], step.in_shapes[k]});
    }
    scratch_pointers_.clear();
    for (size_t b : step.scratch_blocks) scratch_pointers_.push_back(blocks_[b]);
    const NodeIo io{
        inputs_scratch_, {storage_data_[step.out_storage], step.out_shape}, scratch_pointers_};
    KB_TRY(step.node.run(io, stream));
  }
  if (plan_.output_aliases_external) {  // the graph only reshapes an input: copy it out
    const float* from = storage_data_[plan_.storage_of.at(problem_->spec().output)];
    KB_CUDA_TRY(cudaMemcpyAsync(args.output.data, from,
                                static_cast<size_t>(args.output.numel()) * sizeof(float),
                                cudaMemcpyDeviceToDevice, stream));
  }
  return Status::ok();
}

namespace {

// Registers the graph reference for every configured problem: a new spec needs no reference code.
[[maybe_unused]] const bool kRegistered = [] {
  for (std::string_view id : configured_problem_ids()) {
    register_implementation(id, Variant::kReference, []() -> std::unique_ptr<Implementation> {
      return std::make_unique<GraphReference>();
    });
  }
  return true;
}();

}  // namespace
}  // namespace kb::graph
