#include "common/spec_loader.h"
#include "common/files.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "common/op_catalog.h"

namespace kb {
namespace {

const std::set<std::string> kTopLevelFields = {
    "id",        "name",       "level",  "family",     "init_inputs", "notes",
    "dims",      "presets",    "inputs", "parameters", "graph",       "output",
    "tolerance", "robustness", "source", "upstream",   "verification"};
const std::set<std::string> kFamilies = {"matmul", "conv", "conv_transpose", "loss",
                                         "activation", "network", "attention"};
const std::map<std::string, InputGenerator> kGenerators = {
    {"uniform", InputGenerator::kUniform},
    {"normal", InputGenerator::kNormal},
    {"softmax_uniform", InputGenerator::kSoftmaxUniform},
    {"softmax_scaled_uniform", InputGenerator::kSoftmaxScaledUniform}};
const std::map<std::string, ParamInit> kInits = {
    {"kaiming_uniform", ParamInit::kKaimingUniform}, {"fan_in_uniform", ParamInit::kFanInUniform},
    {"xavier_uniform", ParamInit::kXavierUniform},   {"ones", ParamInit::kOnes},
    {"zeros", ParamInit::kZeros},                     {"normal", ParamInit::kNormal}};

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return "'" + node.Scalar() + "'";
    case YAML::NodeType::Sequence: return "a list of " + std::to_string(node.size()) + " items";
    case YAML::NodeType::Map: return "a map";
    default: return "an undefined node";
  }
}

std::string keys_of(const std::map<std::string, InputGenerator>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += (s.empty() ? "" : ", ") + k;
  return s;
}
std::string keys_of(const std::map<std::string, ParamInit>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += (s.empty() ? "" : ", ") + k;
  return s;
}

// Collects errors for one document; every reader returns a default value after reporting.
class SpecReader {
 public:
  explicit SpecReader(std::string file) : file_(std::move(file)) {}

  std::vector<SpecError>& errors() { return errors_; }
  bool failed() const { return !errors_.empty(); }

  void error(const std::string& field, const std::string& message) {
    errors_.push_back(SpecError{file_, field, message});
  }

  // The child `key` of map `node`, reporting it when absent.
  YAML::Node require(const YAML::Node& node, const std::string& key, const std::string& field) {
    YAML::Node child = node[key];
    if (!child) error(field, "missing (required field)");
    return child;
  }

  std::string text(const YAML::Node& node, const std::string& field) {
    if (!node) return "";
    if (!node.IsScalar()) {
      error(field, "expected a string, got " + describe(node));
      return "";
    }
    return node.Scalar();
  }

  std::optional<double> number(const YAML::Node& node, const std::string& field) {
    if (!node) return std::nullopt;
    double value = 0;
    if (!node.IsScalar() || !YAML::convert<double>::decode(node, value)) {
      error(field, "expected a number, got " + describe(node));
      return std::nullopt;
    }
    return value;
  }

  std::optional<int64_t> integer(const YAML::Node& node, const std::string& field) {
    if (!node) return std::nullopt;
    long long value = 0;
    if (!node.IsScalar() || !YAML::convert<long long>::decode(node, value)) {
      error(field, "expected an integer, got " + describe(node));
      return std::nullopt;
    }
    return static_cast<int64_t>(value);
  }

  std::optional<bool> boolean(const YAML::Node& node, const std::string& field) {
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
      error(field, "expected true or false, got " + describe(node));
      return std::nullopt;
    }
    return value;
  }

  std::optional<ShapeExpr> expr(const YAML::Node& node, const std::string& field) {
    if (!node.IsScalar()) {
      error(field, "expected an integer expression, got " + describe(node));
      return std::nullopt;
    }
    Result<ShapeExpr> e = ShapeExpr::parse(node.Scalar());
    if (!e.is_ok()) {
      error(field, e.status().message());
      return std::nullopt;
    }
    return e.value();
  }

  std::vector<ShapeExpr> expr_list(const YAML::Node& node, const std::string& field) {
    std::vector<ShapeExpr> out;
    if (!node) return out;
    if (!node.IsSequence()) {
      error(field, "expected a list of integer expressions, got " + describe(node));
      return out;
    }
    for (size_t i = 0; i < node.size(); ++i) {
      if (auto e = expr(node[i], field + "[" + std::to_string(i) + "]")) out.push_back(*e);
    }
    return out;
  }

  std::vector<std::string> name_list(const YAML::Node& node, const std::string& field) {
    std::vector<std::string> out;
    if (!node) return out;
    if (!node.IsSequence()) {
      error(field, "expected a list of names, got " + describe(node));
      return out;
    }
    for (size_t i = 0; i < node.size(); ++i) {
      out.push_back(text(node[i], field + "[" + std::to_string(i) + "]"));
    }
    return out;
  }

 private:
  std::string file_;
  std::vector<SpecError> errors_;
};

// Where the problem comes from: `upstream`, the model file's repository, path and commit. Its
// source is never copied into a spec (no upstream code in the tree), so `source` is refused. A
// problem of our own names no upstream.
void read_origin(SpecReader& r, const YAML::Node& doc, ProblemSpec& spec) {
  if (doc["source"]) {
    r.error("source",
            "upstream source is not kept in a spec: name the file instead (upstream: {repo, "
            "path, commit})");
  }
  const YAML::Node upstream = doc["upstream"];
  if (!upstream) return;
  if (!upstream.IsMap()) {
    r.error("upstream", "expected {repo, path, commit}, got " + describe(upstream));
    return;
  }
  for (const auto& kv : upstream) {
    const std::string key = kv.first.Scalar();
    if (key != "repo" && key != "path" && key != "commit") {
      r.error("upstream." + key, "unknown field (expected repo, path, commit)");
    }
  }
  spec.upstream.repo = r.text(r.require(upstream, "repo", "upstream.repo"), "upstream.repo");
  spec.upstream.path = r.text(r.require(upstream, "path", "upstream.path"), "upstream.path");
  spec.upstream.commit =
      r.text(r.require(upstream, "commit", "upstream.commit"), "upstream.commit");
  static const std::regex kCommit("[0-9a-f]{40}");
  if (upstream["commit"] && !std::regex_match(spec.upstream.commit, kCommit)) {
    r.error("upstream.commit",
            "expected a full commit hash (40 hex digits), got '" + spec.upstream.commit + "'");
  }
}

void read_header(SpecReader& r, const YAML::Node& doc, ProblemSpec& spec) {
  for (const auto& kv : doc) {
    std::string key = kv.first.Scalar();
    if (!kTopLevelFields.count(key)) {
      r.error(key,
              "unknown field (expected one of id, name, level, family, init_inputs, notes, "
              "dims, presets, inputs, parameters, graph, output, tolerance, robustness, upstream, "
              "verification)");
    }
  }
  spec.id = r.text(r.require(doc, "id", "id"), "id");
  static const std::regex kIdPattern("L([1-3])_[0-9]{3}");
  std::smatch match;
  if (!spec.id.empty() && !std::regex_match(spec.id, match, kIdPattern)) {
    r.error("id", "expected L<level>_<3 digits> (e.g. L2_017), got '" + spec.id + "'");
  }
  spec.name = r.text(r.require(doc, "name", "name"), "name");
  if (auto level = r.integer(r.require(doc, "level", "level"), "level")) {
    spec.level = static_cast<int>(*level);
    if (!match.empty() && std::to_string(spec.level) != match[1].str()) {
      r.error("level", "expected " + match[1].str() + " (the level in the id), got " +
                           std::to_string(spec.level));
    }
  }
  spec.family = r.text(r.require(doc, "family", "family"), "family");
  if (!spec.family.empty() && !kFamilies.count(spec.family)) {
    r.error("family", "expected one of matmul, conv, conv_transpose, loss, activation, network, "
                      "attention, got '" + spec.family + "'");
  }
  spec.init_inputs = r.text(doc["init_inputs"], "init_inputs");
  spec.notes = r.text(doc["notes"], "notes");
  read_origin(r, doc, spec);
  spec.output = r.text(r.require(doc, "output", "output"), "output");
}

void read_dims_and_presets(SpecReader& r, const YAML::Node& doc, ProblemSpec& spec) {
  spec.dims = r.name_list(r.require(doc, "dims", "dims"), "dims");
  std::set<std::string> declared(spec.dims.begin(), spec.dims.end());
  if (declared.size() != spec.dims.size()) r.error("dims", "a dim is listed twice");
  YAML::Node presets = r.require(doc, "presets", "presets");
  if (presets && !presets.IsMap()) {
    r.error("presets", "expected a map of preset name to dims, got " + describe(presets));
    return;
  }
  for (const auto& kv : presets) {
    Preset preset{kv.first.Scalar(), {}};
    const std::string field = "presets." + preset.name;
    if (!kv.second.IsMap()) {
      r.error(field, "expected a map of dim name to integer, got " + describe(kv.second));
      continue;
    }
    for (const auto& d : kv.second) {
      const std::string dim = d.first.Scalar();
      if (!declared.count(dim)) r.error(field + "." + dim, "not a declared dim");
      auto value = r.integer(d.second, field + "." + dim);
      if (value && *value < 1) r.error(field + "." + dim, "expected an integer >= 1, got " + d.second.Scalar());
      if (value) preset.dims[dim] = *value;
    }
    for (const std::string& dim : spec.dims) {
      if (!kv.second[dim]) r.error(field + "." + dim, "missing (every dim must be bound)");
    }
    spec.presets.push_back(std::move(preset));
  }
  for (const char* required : {"full", "small"}) {
    if (presets && presets.IsMap() && !presets[required]) {
      r.error("presets", std::string("missing the '") + required + "' preset");
    }
  }
}

void read_inputs(SpecReader& r, const YAML::Node& doc, ProblemSpec& spec) {
  YAML::Node inputs = r.require(doc, "inputs", "inputs");
  if (!inputs) return;  // an absent node throws on size()
  if (!inputs.IsSequence()) {
    r.error("inputs", "expected a list, got " + describe(inputs));
    return;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string field = "inputs[" + std::to_string(i) + "]";
    const YAML::Node in = inputs[i];
    if (!in.IsMap()) {
      r.error(field, "expected a map {name, shape, generator}, got " + describe(in));
      continue;
    }
    TensorDecl decl;
    decl.name = r.text(r.require(in, "name", field + ".name"), field + ".name");
    decl.shape = r.expr_list(r.require(in, "shape", field + ".shape"), field + ".shape");
    std::string gen = r.text(r.require(in, "generator", field + ".generator"), field + ".generator");
    auto it = kGenerators.find(gen);
    if (it == kGenerators.end() && in["generator"]) {
      r.error(field + ".generator", "expected one of " + keys_of(kGenerators) + ", got '" + gen + "'");
    } else if (it != kGenerators.end()) {
      decl.generator = it->second;
    }
    spec.inputs.push_back(std::move(decl));
  }
}

void read_params(SpecReader& r, const YAML::Node& doc, ProblemSpec& spec) {
  YAML::Node params = r.require(doc, "parameters", "parameters");
  if (!params) return;
  if (!params.IsSequence()) {
    r.error("parameters", "expected a list (possibly empty), got " + describe(params));
    return;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string field = "parameters[" + std::to_string(i) + "]";
    const YAML::Node p = params[i];
    if (!p.IsMap()) {
      r.error(field, "expected a map {name, shape, init[, fan_in_of]}, got " + describe(p));
      continue;
    }
    ParamDecl decl;
    decl.name = r.text(r.require(p, "name", field + ".name"), field + ".name");
    decl.shape = r.expr_list(r.require(p, "shape", field + ".shape"), field + ".shape");
    std::string init = r.text(r.require(p, "init", field + ".init"), field + ".init");
    auto it = kInits.find(init);
    if (it == kInits.end() && p["init"]) {
      r.error(field + ".init", "expected one of " + keys_of(kInits) + ", got '" + init + "'");
    } else if (it != kInits.end()) {
      decl.init = it->second;
    }
    decl.fan_in_of = r.text(p["fan_in_of"], field + ".fan_in_of");
    if (decl.init == ParamInit::kFanInUniform) {
      bool earlier = false;
      for (const ParamDecl& prev : spec.params) earlier = earlier || prev.name == decl.fan_in_of;
      if (!earlier) {
        r.error(field + ".fan_in_of", "expected the name of an earlier parameter (fan_in_uniform "
                                      "takes its bound from that weight), got '" + decl.fan_in_of + "'");
      }
    }
    spec.params.push_back(std::move(decl));
  }
}

std::optional<AttrValue> read_attr(SpecReader& r, const AttrSchema& schema, const YAML::Node& value,
                                   const std::string& field) {
  switch (schema.kind) {
    case AttrKind::kNumber:
      if (auto v = r.number(value, field)) return AttrValue(*v);
      return std::nullopt;
    case AttrKind::kBool:
      if (auto v = r.boolean(value, field)) return AttrValue(*v);
      return std::nullopt;
    case AttrKind::kString:
      if (!value.IsScalar()) {
        r.error(field, "expected a string, got " + describe(value));
        return std::nullopt;
      }
      return AttrValue(value.Scalar());
    case AttrKind::kInt:
      if (auto e = r.expr(value, field)) return AttrValue(std::vector<ShapeExpr>{*e});
      return std::nullopt;
    case AttrKind::kIntList: {
      if (!value.IsSequence()) {
        r.error(field, "expected a list of integer expressions, got " + describe(value));
        return std::nullopt;
      }
      size_t before = r.errors().size();
      std::vector<ShapeExpr> list = r.expr_list(value, field);
      if (r.errors().size() != before) return std::nullopt;
      return AttrValue(std::move(list));
    }
  }
  return std::nullopt;
}

void read_node_attrs(SpecReader& r, const YAML::Node& n, const OpInfo& op, GraphNode& node,
                     const std::string& field) {
  static const std::set<std::string> kNodeKeys = {"name", "op", "in", "out"};
  for (const auto& kv : n) {
    const std::string key = kv.first.Scalar();
    if (kNodeKeys.count(key)) continue;
    const AttrSchema* schema = nullptr;
    for (const AttrSchema& s : op.attrs) {
      if (s.name == key) schema = &s;
    }
    if (!schema) {
      std::string known;
      for (const AttrSchema& s : op.attrs) known += (known.empty() ? "" : ", ") + std::string(s.name);
      r.error(field + "." + key, "not an attribute of op '" + node.op + "' (its attributes: " +
                                     (known.empty() ? "none" : known) + ")");
      continue;
    }
    if (auto v = read_attr(r, *schema, kv.second, field + "." + key)) node.attrs[key] = *v;
  }
  for (const AttrSchema& s : op.attrs) {
    if (s.required && !n[std::string(s.name)]) {
      r.error(field + "." + std::string(s.name), "missing (required by op '" + node.op + "')");
    }
  }
}

void read_graph(SpecReader& r, const YAML::Node& doc, ProblemSpec& spec) {
  YAML::Node graph = r.require(doc, "graph", "graph");
  if (!graph) return;
  if (!graph.IsSequence() || graph.size() == 0) {
    r.error("graph", "expected a non-empty list of nodes, got " + describe(graph));
    return;
  }
  std::set<std::string> names, defined;
  for (const TensorDecl& in : spec.inputs) defined.insert(in.name);
  for (const ParamDecl& p : spec.params) defined.insert(p.name);
  for (size_t i = 0; i < graph.size(); ++i) {
    const std::string field = "graph[" + std::to_string(i) + "]";
    const YAML::Node n = graph[i];
    if (!n.IsMap()) {
      r.error(field, "expected a map {name, op, in, out, ...}, got " + describe(n));
      continue;
    }
    GraphNode node;
    node.name = r.text(r.require(n, "name", field + ".name"), field + ".name");
    node.op = r.text(r.require(n, "op", field + ".op"), field + ".op");
    node.inputs = r.name_list(r.require(n, "in", field + ".in"), field + ".in");
    node.output = r.text(r.require(n, "out", field + ".out"), field + ".out");
    if (!node.name.empty() && !names.insert(node.name).second) {
      r.error(field + ".name", "'" + node.name + "' names two nodes");
    }
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      if (!defined.count(node.inputs[k])) {
        r.error(field + ".in[" + std::to_string(k) + "]",
                "expected an input, a parameter or an earlier node's output, got '" + node.inputs[k] + "'");
      }
    }
    if (!node.output.empty() && !defined.insert(node.output).second) {
      r.error(field + ".out", "'" + node.output + "' is already defined");
    }
    const OpInfo* op = find_op(node.op);
    if (!op && n["op"]) {
      std::string known;
      for (std::string_view name : op_names()) known += (known.empty() ? "" : ", ") + std::string(name);
      r.error(field + ".op", "expected one of " + known + ", got '" + node.op + "'");
    } else if (op) {
      int count = static_cast<int>(node.inputs.size());
      if (count < op->min_inputs || count > op->max_inputs) {
        r.error(field + ".in", "op '" + node.op + "' takes " + std::to_string(op->min_inputs) +
                                   (op->max_inputs != op->min_inputs ? " to " + std::to_string(op->max_inputs) : "") +
                                   " inputs, got " + std::to_string(count));
      }
      read_node_attrs(r, n, *op, node, field);
    }
    spec.graph.push_back(std::move(node));
  }
  if (!spec.output.empty() && !defined.count(spec.output)) {
    r.error("output", "expected the name of a graph tensor, got '" + spec.output + "'");
  }
}

void read_tolerance(SpecReader& r, const YAML::Node& doc, ProblemSpec& spec) {
  YAML::Node tol = doc["tolerance"];
  if (!tol) return;
  if (!tol.IsMap()) {
    r.error("tolerance", "expected {atol, rtol}, got " + describe(tol));
    return;
  }
  for (const char* key : {"atol", "rtol"}) {
    auto v = r.number(r.require(tol, key, std::string("tolerance.") + key), std::string("tolerance.") + key);
    if (v && *v < 0) r.error(std::string("tolerance.") + key, "expected a number >= 0");
    if (v) (std::string(key) == "atol" ? spec.tolerance.atol : spec.tolerance.rtol) = *v;
  }
}

// verification: {own_kernel_share_min: 0.5} — the executor's per-problem thresholds.
void read_verification(SpecReader& r, const YAML::Node& doc, ProblemSpec& spec) {
  YAML::Node v = doc["verification"];
  if (!v) return;
  if (!v.IsMap()) {
    r.error("verification", "expected {own_kernel_share_min}, got " + describe(v));
    return;
  }
  for (const auto& kv : v) {
    if (kv.first.Scalar() != "own_kernel_share_min") {
      r.error("verification." + kv.first.Scalar(), "unknown field (expected own_kernel_share_min)");
    }
  }
  if (!v["own_kernel_share_min"]) return;
  auto share = r.number(v["own_kernel_share_min"], "verification.own_kernel_share_min");
  if (share && (*share < 0 || *share > 1)) r.error("verification.own_kernel_share_min", "expected a number in [0, 1]");
  if (share) spec.verification.own_kernel_share_min = *share;
}

// robustness: {skip: [kind, ...]}: robustness trials that do not apply to this problem.
void read_robustness(SpecReader& r, const YAML::Node& doc, ProblemSpec& spec) {
  YAML::Node rob = doc["robustness"];
  if (!rob) return;
  if (!rob.IsMap()) {
    r.error("robustness", "expected {skip: [kind, ...]}, got " + describe(rob));
    return;
  }
  for (const auto& kv : rob) {
    if (kv.first.Scalar() != "skip") r.error("robustness." + kv.first.Scalar(), "unknown field (expected skip)");
  }
  const std::vector<std::string> names = r.name_list(rob["skip"], "robustness.skip");
  for (size_t i = 0; i < names.size(); ++i) {
    Result<Distribution> d = distribution_from_string(names[i]);
    const std::string field = "robustness.skip[" + std::to_string(i) + "]";
    if (!d.is_ok() || d.value() == Distribution::kDefault) {
      r.error(field, "expected shift, scale, centered or random_affine, got '" + names[i] + "'");
    } else if (std::find(spec.robustness_skip.begin(), spec.robustness_skip.end(), d.value()) !=
               spec.robustness_skip.end()) {
      r.error(field, "'" + names[i] + "' is listed twice");
    } else {
      spec.robustness_skip.push_back(d.value());
    }
  }
}

// Every declared dim must be used by some shape or attribute, and only declared dims may be.
void check_dim_usage(SpecReader& r, const ProblemSpec& spec) {
  std::set<std::string> used;
  auto collect = [&](const std::vector<ShapeExpr>& exprs, const std::string& field) {
    for (const ShapeExpr& e : exprs) {
      for (const std::string& s : e.symbols()) {
        used.insert(s);
        if (std::find(spec.dims.begin(), spec.dims.end(), s) == spec.dims.end()) {
          r.error(field, "uses '" + s + "', which is not in dims");
        }
      }
    }
  };
  for (size_t i = 0; i < spec.inputs.size(); ++i) collect(spec.inputs[i].shape, "inputs[" + std::to_string(i) + "].shape");
  for (size_t i = 0; i < spec.params.size(); ++i) collect(spec.params[i].shape, "parameters[" + std::to_string(i) + "].shape");
  for (size_t i = 0; i < spec.graph.size(); ++i) {
    for (const auto& [key, value] : spec.graph[i].attrs) {
      if (const auto* exprs = std::get_if<std::vector<ShapeExpr>>(&value)) {
        collect(*exprs, "graph[" + std::to_string(i) + "]." + key);
      }
    }
  }
  for (const std::string& d : spec.dims) {
    if (!used.count(d)) r.error("dims", "'" + d + "' is declared but no shape or attribute uses it");
  }
}

void check_presets(SpecReader& r, const std::shared_ptr<const ProblemSpec>& spec) {
  for (const Preset& preset : spec->presets) {
    Result<ProblemInstance> inst = ProblemInstance::create(spec, preset.dims);
    if (!inst.is_ok()) {
      std::string message = inst.status().message();
      const std::string prefix = spec->file + ": ";
      if (message.rfind(prefix, 0) == 0) message = message.substr(prefix.size());
      r.error("presets." + preset.name, "shapes do not fit: " + message);
    }
  }
}

std::shared_ptr<ProblemSpec> parse(SpecReader& r, const std::string& yaml_text, const std::string& file) {
  YAML::Node doc;
  try {
    doc = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    r.error("", "not valid YAML: " + e.msg + " at line " + std::to_string(e.mark.line + 1) +
                    ", column " + std::to_string(e.mark.column + 1));
    return nullptr;
  }
  if (!doc.IsMap()) {
    r.error("", "expected a map of spec fields, got " + describe(doc));
    return nullptr;
  }
  auto spec = std::make_shared<ProblemSpec>();
  spec->file = file;
  read_header(r, doc, *spec);
  read_dims_and_presets(r, doc, *spec);
  read_inputs(r, doc, *spec);
  read_params(r, doc, *spec);
  read_graph(r, doc, *spec);
  read_tolerance(r, doc, *spec);
  read_verification(r, doc, *spec);
  read_robustness(r, doc, *spec);
  check_dim_usage(r, *spec);
  return spec;
}

std::vector<SpecError> validate(const std::string& yaml_text, const std::string& file,
                                std::shared_ptr<const ProblemSpec>* out) {
  SpecReader reader(file);
  std::shared_ptr<ProblemSpec> spec;
  try {
    spec = parse(reader, yaml_text, file);
  } catch (const YAML::Exception& e) {
    reader.error("", "malformed document: " + e.msg);
  }
  if (spec && !reader.failed()) check_presets(reader, spec);
  if (!reader.failed() && out) *out = spec;
  return reader.errors();
}

}  // namespace

std::string SpecError::to_string() const {
  return file + ": " + (field.empty() ? "" : field + ": ") + message;
}

std::vector<SpecError> validate_problem_spec(const std::string& yaml_text, const std::string& file) {
  return validate(yaml_text, file, nullptr);
}

Result<std::shared_ptr<const ProblemSpec>> parse_problem_spec(const std::string& yaml_text,
                                                              const std::string& file) {
  std::shared_ptr<const ProblemSpec> spec;
  std::vector<SpecError> errors = validate(yaml_text, file, &spec);
  if (!errors.empty()) {
    std::string message;
    for (const SpecError& e : errors) message += (message.empty() ? "" : "\n") + e.to_string();
    return Status::invalid_argument(message);
  }
  return spec;
}

Result<std::shared_ptr<const ProblemSpec>> load_problem_spec(const std::string& path) {
  Result<std::string> text = read_file(path);
  if (!text.is_ok()) return Status::not_found(path + ": cannot open the problem spec");
  return parse_problem_spec(text.value(), path);
}

}  // namespace kb
