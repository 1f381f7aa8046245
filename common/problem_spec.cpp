#include "common/problem_spec.h"

#include <stdexcept>

#include "common/op_catalog.h"

namespace kb {
namespace {

Result<Shape> resolve_shape(const std::vector<ShapeExpr>& exprs, const Dims& dims,
                            const std::string& what) {
  Shape shape;
  for (size_t i = 0; i < exprs.size(); ++i) {
    Result<int64_t> v = exprs[i].evaluate(dims);
    if (!v.is_ok()) return Status::invalid_argument(what + "[" + std::to_string(i) + "]: " +
                                                    v.status().message());
    if (v.value() < 1) {
      return Status::invalid_argument(what + "[" + std::to_string(i) + "]: expected a size >= 1, got " +
                                      exprs[i].text() + " = " + std::to_string(v.value()));
    }
    shape.push_back(v.value());
  }
  return shape;
}

Status check_dims(const ProblemSpec& spec, const Dims& dims) {
  std::string declared_list;
  for (const std::string& d : spec.dims) declared_list += (declared_list.empty() ? "" : ", ") + d;
  const std::string takes = " (" + spec.id + " takes " + declared_list + ")";
  for (const auto& [name, value] : dims) {
    bool declared = false;
    for (const std::string& d : spec.dims) declared = declared || d == name;
    if (!declared)
      return Status::invalid_argument("'" + name + "' is not a dim of " + spec.id + takes);
  }
  std::string missing;
  for (const std::string& d : spec.dims) {
    auto it = dims.find(d);
    if (it == dims.end()) {
      missing += (missing.empty() ? "'" : ", '") + d + "'";
    } else if (it->second < 1) {
      return Status::invalid_argument("dim '" + d + "': expected an integer >= 1, got " +
                                      std::to_string(it->second));
    }
  }
  if (!missing.empty()) return Status::invalid_argument("dims not bound: " + missing + takes);
  return Status::ok();
}

}  // namespace

int64_t element_count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Result<Dims> parse_dims(const std::string& text) {
  Dims dims;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    size_t used = 0;
    int64_t value = 0;
    try {
      if (eq == std::string::npos) throw std::invalid_argument(item);
      value = std::stoll(item.substr(eq + 1), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (eq == std::string::npos || eq == 0 || used == 0 || used != item.size() - eq - 1) {
      return Status::invalid_argument("dims: expected NAME=INTEGER, got '" + item + "'");
    }
    dims[item.substr(0, eq)] = value;
  }
  return dims;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + ")";
}

const std::vector<Distribution>& robustness_distributions() {
  static const std::vector<Distribution> kAll = {Distribution::kShift, Distribution::kScale,
                                                 Distribution::kCentered, Distribution::kRandomAffine};
  return kAll;
}

std::string to_string(Distribution d) {
  switch (d) {
    case Distribution::kDefault: return "default";
    case Distribution::kShift: return "shift";
    case Distribution::kScale: return "scale";
    case Distribution::kCentered: return "centered";
    case Distribution::kRandomAffine: return "random_affine";
  }
  return "default";
}

Result<Distribution> distribution_from_string(const std::string& name) {
  for (Distribution d : {Distribution::kDefault, Distribution::kShift, Distribution::kScale,
                         Distribution::kCentered, Distribution::kRandomAffine}) {
    if (to_string(d) == name) return d;
  }
  return Status::invalid_argument("unknown distribution '" + name +
                                  "' (expected shift, scale, centered or random_affine)");
}

const Preset* ProblemSpec::find_preset(const std::string& preset_name) const {
  for (const Preset& p : presets) {
    if (p.name == preset_name) return &p;
  }
  return nullptr;
}

const GraphNode* ProblemSpec::find_node(const std::string& node_name) const {
  for (const GraphNode& n : graph) {
    if (n.name == node_name) return &n;
  }
  return nullptr;
}

Result<ProblemInstance> ProblemInstance::create(std::shared_ptr<const ProblemSpec> spec,
                                                const std::string& preset_name) {
  const Preset* preset = spec->find_preset(preset_name);
  if (!preset) {
    return Status::not_found(spec->file + ": no preset '" + preset_name + "'");
  }
  return create(std::move(spec), preset->dims);
}

Result<ProblemInstance> ProblemInstance::create(std::shared_ptr<const ProblemSpec> spec, Dims dims) {
  const std::string where = spec->file + ": ";
  if (Status s = check_dims(*spec, dims); !s.is_ok()) return Status::invalid_argument(where + s.message());
  ProblemInstance inst;
  inst.spec_ = spec;
  inst.dims_ = std::move(dims);
  double bytes = 0;
  for (size_t i = 0; i < spec->inputs.size(); ++i) {
    const TensorDecl& in = spec->inputs[i];
    Result<Shape> shape = resolve_shape(in.shape, inst.dims_, "inputs[" + std::to_string(i) + "].shape");
    if (!shape.is_ok()) return Status::invalid_argument(where + shape.status().message());
    inst.input_shapes_.push_back(shape.value());
    inst.shapes_[in.name] = shape.value();
    bytes += 4.0 * static_cast<double>(element_count(shape.value()));
  }
  for (size_t i = 0; i < spec->params.size(); ++i) {
    const ParamDecl& p = spec->params[i];
    Result<Shape> shape =
        resolve_shape(p.shape, inst.dims_, "parameters[" + std::to_string(i) + "].shape");
    if (!shape.is_ok()) return Status::invalid_argument(where + shape.status().message());
    inst.param_shapes_.push_back(shape.value());
    inst.shapes_[p.name] = shape.value();
    bytes += 4.0 * static_cast<double>(element_count(shape.value()));
  }
  for (size_t i = 0; i < spec->graph.size(); ++i) {
    const GraphNode& node = spec->graph[i];
    const std::string node_where =
        where + "graph[" + std::to_string(i) + "] (" + node.name + "): ";
    const OpInfo* op = find_op(node.op);
    if (!op) return Status::invalid_argument(node_where + "unknown op '" + node.op + "'");
    std::vector<Shape> in_shapes;
    for (const std::string& name : node.inputs) {
      auto it = inst.shapes_.find(name);
      if (it == inst.shapes_.end()) {
        return Status::invalid_argument(node_where + "input '" + name + "' is not defined before use");
      }
      in_shapes.push_back(it->second);
    }
    Result<OpOutput> out = op->infer(OpCall{node, in_shapes, inst.dims_});
    if (!out.is_ok()) return Status::invalid_argument(node_where + out.status().message());
    inst.shapes_[node.output] = out->shape;
    inst.cost_.flops += out->flops;
  }
  auto out_it = inst.shapes_.find(spec->output);
  if (out_it == inst.shapes_.end()) {
    return Status::invalid_argument(where + "output '" + spec->output + "' is not a graph tensor");
  }
  bytes += 4.0 * static_cast<double>(element_count(out_it->second));
  inst.cost_.min_bytes = bytes;
  return inst;
}

int64_t ProblemInstance::dim(const std::string& name) const {
  auto it = dims_.find(name);
  if (it == dims_.end()) fatal(spec_->id + " has no dim '" + name + "'");
  return it->second;
}

const Shape& ProblemInstance::shape_of(const std::string& tensor_name) const {
  auto it = shapes_.find(tensor_name);
  if (it == shapes_.end()) fatal(spec_->id + " has no tensor '" + tensor_name + "'");
  return it->second;
}

const AttrValue& ProblemInstance::attr(const std::string& node, const std::string& name) const {
  const GraphNode* n = spec_->find_node(node);
  if (!n) fatal(spec_->id + " has no graph node '" + node + "'");
  auto it = n->attrs.find(name);
  if (it == n->attrs.end())
    fatal(spec_->id + ": node '" + node + "' has no attribute '" + name + "'");
  return it->second;
}

bool ProblemInstance::has_attr(const std::string& node, const std::string& name) const {
  const GraphNode* n = spec_->find_node(node);
  return n && n->attrs.count(name) != 0;
}

std::vector<int64_t> ProblemInstance::ints(const std::string& node, const std::string& name) const {
  const auto* exprs = std::get_if<std::vector<ShapeExpr>>(&attr(node, name));
  if (!exprs) fatal(spec_->id + ": attribute " + node + "." + name + " is not a list of integers");
  std::vector<int64_t> values;
  for (const ShapeExpr& e : *exprs) {
    Result<int64_t> v = e.evaluate(dims_);
    if (!v.is_ok()) fatal(spec_->id + ": " + v.status().message());
    values.push_back(v.value());
  }
  return values;
}

int64_t ProblemInstance::int_attr(const std::string& node, const std::string& name) const {
  std::vector<int64_t> values = ints(node, name);
  if (values.size() != 1)
    fatal(spec_->id + ": attribute " + node + "." + name + " is not one integer");
  return values[0];
}

double ProblemInstance::number(const std::string& node, const std::string& name) const {
  const auto* value = std::get_if<double>(&attr(node, name));
  if (!value) fatal(spec_->id + ": attribute " + node + "." + name + " is not a number");
  return *value;
}

bool ProblemInstance::flag(const std::string& node, const std::string& name) const {
  const auto* value = std::get_if<bool>(&attr(node, name));
  if (!value) fatal(spec_->id + ": attribute " + node + "." + name + " is not a bool");
  return *value;
}

}  // namespace kb
