// The problem-spec model: what one problems/<ID>_<name>.yaml says, as C++ values.
//
// A ProblemSpec is the parsed, validated document (see schemas/problem-spec.md for the format).
// It is parametric: shapes are expressions over named dims (N, C_in, H, ...). A ProblemInstance
// binds the dims of one preset (or any dims the caller gives), resolves every shape, infers the
// shapes of the graph's intermediate tensors and the output, and counts FLOPs and minimum bytes.
//
// Ownership: a ProblemInstance holds a shared_ptr to its spec, so it may outlive the loader.
// Thread safety: both are immutable after construction and safe to share between threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "common/shape_expr.h"
#include "common/status.h"

namespace kb {

using Shape = std::vector<int64_t>;
using Dims = std::map<std::string, int64_t>;

int64_t element_count(const Shape& shape);
// "N=2,C_in=3" -> {C_in: 3, N: 2}; fails naming the item that is not NAME=INTEGER.
Result<Dims> parse_dims(const std::string& text);
std::string shape_to_string(const Shape& shape);  // "(2, 3, 4)"; "()" for a scalar

// How an input tensor's values are drawn (see common/tensor_generator.h for the exact math).
enum class InputGenerator {
  kUniform,         // torch.rand: U[0, 1)
  kNormal,          // torch.randn: N(0, 1)
  kSoftmaxUniform,  // softmax(torch.rand(shape), dim=-1)
  kSoftmaxScaledUniform,  // scale = torch.rand(()); softmax(torch.rand(shape) * scale, dim=-1)
};

// How a parameter is initialized, as PyTorch's default init does it.
enum class ParamInit {
  kKaimingUniform,  // U(-b, b), b = 1/sqrt(fan_in); fan_in = shape[1] * prod(shape[2:])
  kFanInUniform,    // U(-b, b), b = 1/sqrt(fan_in of the tensor named by `fan_in_of`) (biases)
  kXavierUniform,   // U(-b, b), b = sqrt(6 / (fan_in + fan_out)); 2-D: fan_in = shape[1]
  kOnes,
  kZeros,
  kNormal,          // torch.randn
};

// A robustness distribution: how a robustness trial moves the spec's inputs or parameters away
// from their defaults (common/tensor_generator.h has the exact math). kDefault is the spec itself.
enum class Distribution {
  kDefault,
  kShift,         // every input x -> x + 100 (uniform inputs in [100, 101))
  kScale,         // every input x -> 1000 x
  kCentered,      // every input x -> x - 0.5 (uniform inputs in [-0.5, 0.5))
  kRandomAffine,  // parameters initialized to ones -> U[0.5, 1.5), to zeros -> U[-0.5, 0.5)
};
// The robustness kinds, in trial order (every Distribution but kDefault).
const std::vector<Distribution>& robustness_distributions();
std::string to_string(Distribution d);  // "default", "shift", "scale", "centered", "random_affine"
Result<Distribution> distribution_from_string(const std::string& name);

struct TensorDecl {
  std::string name;
  std::vector<ShapeExpr> shape;
  InputGenerator generator = InputGenerator::kUniform;
};

struct ParamDecl {
  std::string name;  // the PyTorch state_dict key, e.g. "conv.weight"
  std::vector<ShapeExpr> shape;
  ParamInit init = ParamInit::kKaimingUniform;
  std::string fan_in_of;  // for kFanInUniform: the weight whose fan-in sets the bound
};

// An attribute of a graph node: a number, a bool, a string, or a list of shape expressions
// (int lists such as stride are expression lists so they may use dims: reshape [N, C, H*W]).
using AttrValue = std::variant<double, bool, std::string, std::vector<ShapeExpr>>;

struct GraphNode {
  std::string name;  // unique in the graph; the golden model looks nodes up by it
  std::string op;    // one of the ops in common/op_catalog.h
  std::vector<std::string> inputs;  // tensor names: inputs, parameters or earlier outputs
  std::string output;
  std::map<std::string, AttrValue> attrs;
};

struct Tolerance {
  double atol = 1e-4;
  double rtol = 1e-4;
};

// What the executor demands of a custom beyond the tolerance (spec field `verification`).
struct VerificationPolicy {
  // Own kernels (namespace kb, not the eager ops) must carry at least this share of a custom
  // call's GPU time, else the job is `library_dominated`.
  double own_kernel_share_min = 0.5;
};

struct Preset {
  std::string name;
  Dims dims;
};

// Where an imported problem's model file lives (tools/kernelbench_import.py): its source is
// not copied into the spec.
struct UpstreamRef {
  std::string repo;    // "ScalingIntelligence/KernelBench"
  std::string path;    // "KernelBench/level1/19_ReLU.py"
  std::string commit;  // 40 hex digits
};

struct ProblemSpec {
  std::string file;  // where it was loaded from, for messages
  std::string id;    // "L2_017"
  std::string name;  // "Conv2d_InstanceNorm_Divide"
  int level = 0;
  std::string family;
  UpstreamRef upstream;     // the KernelBench file it comes from (no upstream code is kept)
  std::string init_inputs;  // get_init_inputs() as written, e.g. "[64, 128, 3, 2.0]"
  std::string notes;        // how the effective configuration was derived, traps
  std::vector<std::string> dims;  // size symbols every preset must bind
  std::vector<Preset> presets;
  std::vector<TensorDecl> inputs;
  std::vector<ParamDecl> params;
  std::vector<GraphNode> graph;
  std::string output;  // name of the graph tensor that is the model's output
  Tolerance tolerance;
  VerificationPolicy verification;
  // robustness.skip: kinds whose trials do not apply (e.g. a shift of probability inputs).
  std::vector<Distribution> robustness_skip;

  const Preset* find_preset(const std::string& preset_name) const;
  const GraphNode* find_node(const std::string& node_name) const;
};

struct Cost {
  double flops = 0;      // multiply-add = 2; elementwise ops by the table in op_catalog.h
  double min_bytes = 0;  // 4 * (input + parameter + output elements)
};

// A spec with its dims bound: every tensor's shape known, cost counted.
class ProblemInstance {
 public:
  // Binds `dims` (every spec dim must be given, > 0), resolves shapes, runs shape inference
  // over the graph. Fails with a message naming the spec file and the node when a shape does
  // not fit its op (e.g. a channel count that groups do not divide).
  static Result<ProblemInstance> create(std::shared_ptr<const ProblemSpec> spec, Dims dims);
  static Result<ProblemInstance> create(std::shared_ptr<const ProblemSpec> spec,
                                        const std::string& preset_name);

  const ProblemSpec& spec() const { return *spec_; }
  std::shared_ptr<const ProblemSpec> spec_ptr() const { return spec_; }
  const Dims& dims() const { return dims_; }
  int64_t dim(const std::string& name) const;

  // The shape of any named tensor: input, parameter, or graph output.
  const Shape& shape_of(const std::string& tensor_name) const;
  const Shape& output_shape() const { return shape_of(spec_->output); }
  const std::vector<Shape>& input_shapes() const { return input_shapes_; }
  const std::vector<Shape>& param_shapes() const { return param_shapes_; }

  // A node's attribute, resolved against the dims. Aborts on a missing attribute or wrong
  // type: the spec was validated, so that is a programming error.
  std::vector<int64_t> ints(const std::string& node, const std::string& attr) const;
  int64_t int_attr(const std::string& node, const std::string& attr) const;
  double number(const std::string& node, const std::string& attr) const;
  bool flag(const std::string& node, const std::string& attr) const;
  bool has_attr(const std::string& node, const std::string& attr) const;

  const Cost& cost() const { return cost_; }

 private:
  ProblemInstance() = default;
  const AttrValue& attr(const std::string& node, const std::string& attr) const;

  std::shared_ptr<const ProblemSpec> spec_;
  Dims dims_;
  std::vector<Shape> input_shapes_;
  std::vector<Shape> param_shapes_;
  std::map<std::string, Shape> shapes_;
  Cost cost_;
};

}  // namespace kb
