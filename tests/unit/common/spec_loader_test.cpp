// The spec loader's validation (common/spec_loader.h, schemas/problem-spec.md): one test per kind
// of malformed spec, each checking that the message names the file, the field and what was
// expected; plus the real L2_017 spec and several errors reported together.
#include "common/spec_loader.h"
#include "tests/support/assert_ok.h"

#include <gtest/gtest.h>

#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

namespace kb {
namespace {

constexpr char kFile[] = "problems/L1_900_probe.yaml";

// A minimal valid spec: one relu over (N, C).
constexpr char kRelu[] = R"yaml(id: L1_900
name: Probe
level: 1
family: activation
dims: [N, C]
presets:
  full: {N: 4, C: 8}
  small: {N: 1, C: 2}
inputs:
  - {name: x, shape: [N, C], generator: uniform}
parameters: []
graph:
  - {name: act, op: relu, in: [x], out: y}
output: y
tolerance: {atol: 1.0e-4, rtol: 1.0e-4}
)yaml";

// L2_017's structure (conv, instance norm, divide).
constexpr char kConv[] = R"yaml(id: L2_017
name: Conv2d_InstanceNorm_Divide
level: 2
family: conv
dims: [N, C_in, C_out, H, W]
presets:
  full: {N: 128, C_in: 64, C_out: 128, H: 128, W: 128}
  small: {N: 2, C_in: 32, C_out: 48, H: 17, W: 15}
inputs:
  - {name: x, shape: [N, C_in, H, W], generator: uniform}
parameters:
  - {name: conv.weight, shape: [C_out, C_in, 3, 3], init: kaiming_uniform}
  - {name: conv.bias, shape: [C_out], init: fan_in_uniform, fan_in_of: conv.weight}
graph:
  - {name: conv, op: conv, in: [x, conv.weight, conv.bias], out: y,
     stride: [1, 1], padding: [0, 0], dilation: [1, 1], groups: 1}
  - {name: instance_norm, op: instance_norm, in: [y], out: z, eps: 1.0e-5}
  - {name: divide, op: div_scalar, in: [z], out: out, value: 2.0}
output: out
)yaml";

// `text` with its one occurrence of `from` replaced by `to`.
std::string edit(const std::string& text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' is not in the spec";
  EXPECT_EQ(text.find(from, at + 1), std::string::npos) << "'" << from << "' occurs twice";
  if (at == std::string::npos) return text;
  return text.substr(0, at) + to + text.substr(at + from.size());
}

std::vector<SpecError> errors_of(const std::string& text) {
  return validate_problem_spec(text, kFile);
}

std::string all(const std::vector<SpecError>& errors) {
  std::string text;
  for (const SpecError& e : errors) text += "\n  " + e.to_string();
  return text.empty() ? " (none)" : text;
}

// Succeeds when one of `errors` reads exactly "<kFile>: <field>: <message>".
testing::AssertionResult has_error(const std::vector<SpecError>& errors, const std::string& field,
                                   const std::string& message) {
  const std::string wanted = std::string(kFile) + ": " + field + ": " + message;
  for (const SpecError& e : errors) {
    if (e.to_string() == wanted) return testing::AssertionSuccess();
  }
  return testing::AssertionFailure() << "no error '" << wanted << "'; got:" << all(errors);
}

// Succeeds when an error of `field` (in kFile) contains every one of `parts`.
testing::AssertionResult has_error_containing(const std::vector<SpecError>& errors,
                                              const std::string& field,
                                              std::initializer_list<std::string> parts) {
  for (const SpecError& e : errors) {
    if (e.file != kFile || e.field != field) continue;
    bool every = true;
    for (const std::string& part : parts)
      every = every && e.message.find(part) != std::string::npos;
    if (every) return testing::AssertionSuccess();
  }
  std::string wanted;
  for (const std::string& part : parts) wanted += " '" + part + "'";
  return testing::AssertionFailure()
         << "no error of " << field << " containing" << wanted << "; got:" << all(errors);
}

std::string read_source_file(const std::string& relative) {
  std::ifstream in(std::string(KB_SOURCE_DIR) + "/" + relative);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// ---- valid specs ---------------------------------------------------------------------------

TEST(SpecLoader, TheProbeSpecsAreValid) {
  EXPECT_TRUE(errors_of(kRelu).empty()) << all(errors_of(kRelu));
  EXPECT_TRUE(errors_of(kConv).empty()) << all(errors_of(kConv));
}

TEST(SpecLoader, TheRealL2_017SpecValidates) {
  const std::string path = "problems/L2_017_conv2d_instancenorm_divide.yaml";
  const std::string text = read_source_file(path);
  ASSERT_FALSE(text.empty()) << "cannot read " << path;
  Result<std::shared_ptr<const ProblemSpec>> spec = parse_problem_spec(text, path);
  KB_ASSERT_OK(spec);
  const ProblemSpec& s = *spec.value();
  EXPECT_EQ(s.file, path);
  EXPECT_EQ(s.id, "L2_017");
  EXPECT_EQ(s.name, "Conv2d_InstanceNorm_Divide");
  EXPECT_EQ(s.level, 2);
  EXPECT_EQ(s.family, "conv");
  EXPECT_EQ(s.dims, (std::vector<std::string>{"N", "C_in", "C_out", "H", "W"}));
  ASSERT_NE(s.find_preset("full"), nullptr);
  EXPECT_EQ(s.find_preset("full")->dims.at("C_in"), 64);
  ASSERT_EQ(s.inputs.size(), 1u);
  EXPECT_EQ(s.inputs[0].generator, InputGenerator::kUniform);
  ASSERT_EQ(s.params.size(), 2u);
  EXPECT_EQ(s.params[1].init, ParamInit::kFanInUniform);
  EXPECT_EQ(s.params[1].fan_in_of, "conv.weight");
  ASSERT_EQ(s.graph.size(), 3u);
  EXPECT_EQ(s.graph[2].op, "div_scalar");
  EXPECT_EQ(std::get<double>(s.graph[2].attrs.at("value")), 2.0);
  EXPECT_EQ(s.output, "out");
  EXPECT_DOUBLE_EQ(s.tolerance.atol, 1e-4);
  EXPECT_EQ(s.upstream.path, "KernelBench/level2/17_Conv2d_InstanceNorm_Divide.py");

  Result<ProblemInstance> full = ProblemInstance::create(spec.value(), "full");
  KB_ASSERT_OK(full);
  EXPECT_EQ(full->output_shape(), (Shape{128, 128, 126, 126}));
}

// A user's own dims (kb bench --dims): an unknown name is named first, then every missing dim at
// once, each with the list of dims the problem takes.
TEST(SpecLoader, UserDimsNameTheUnknownAndTheMissing) {
  Result<std::shared_ptr<const ProblemSpec>> spec = parse_problem_spec(kConv, "conv.yaml");
  KB_ASSERT_OK(spec);
  const std::string takes = spec.value()->id + " takes ";
  Result<ProblemInstance> unknown = ProblemInstance::create(spec.value(), Dims{{"FOO", 3}});
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find("'FOO' is not a dim of"), std::string::npos)
      << unknown.status().message();
  EXPECT_NE(unknown.status().message().find(takes), std::string::npos);
  Result<ProblemInstance> missing = ProblemInstance::create(spec.value(), Dims{{"N", 1}});
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("dims not bound: '"), std::string::npos)
      << missing.status().message();
  EXPECT_EQ(missing.status().message().find("'N'"), std::string::npos) << "N is bound";
  Dims zero = spec.value()->find_preset("small")->dims;
  zero.begin()->second = 0;
  Result<ProblemInstance> below = ProblemInstance::create(spec.value(), zero);
  ASSERT_FALSE(below.is_ok());
  EXPECT_NE(below.status().message().find("expected an integer >= 1, got 0"), std::string::npos)
      << below.status().message();
}

TEST(SpecLoader, LoadProblemSpecNamesAMissingFile) {
  Result<std::shared_ptr<const ProblemSpec>> spec = load_problem_spec("/nonexistent/L1_001_x.yaml");
  ASSERT_FALSE(spec.is_ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(spec.status().message(), "/nonexistent/L1_001_x.yaml: cannot open the problem spec");
}

TEST(SpecLoader, NegativeIntAttributeCountsFromTheEnd) {
  // softmax `dim: -1` needs ShapeExpr's unary minus.
  std::string text = edit(kRelu, "{name: act, op: relu, in: [x], out: y}",
                          "{name: act, op: softmax, in: [x], out: y, dim: -1}");
  EXPECT_TRUE(errors_of(text).empty()) << all(errors_of(text));
}

// A KernelBench problem names its upstream file; its source is never kept in the tree.
constexpr char kUpstream[] =
    "upstream: {repo: ScalingIntelligence/KernelBench, path: KernelBench/level1/19_ReLU.py,\n"
    "           commit: 423217d9fda91e0c2d67e4a43bf62f96f6d104f1}\n";

TEST(SpecLoader, AKernelBenchSpecNamesItsUpstreamFile) {
  const std::string text = kRelu + std::string(kUpstream);
  Result<std::shared_ptr<const ProblemSpec>> spec = parse_problem_spec(text, kFile);
  KB_ASSERT_OK(spec);
  EXPECT_EQ(spec.value()->upstream.repo, "ScalingIntelligence/KernelBench");
  EXPECT_EQ(spec.value()->upstream.path, "KernelBench/level1/19_ReLU.py");
  EXPECT_EQ(spec.value()->upstream.commit, "423217d9fda91e0c2d67e4a43bf62f96f6d104f1");
}

TEST(SpecLoader, AProblemOfOurOwnNamesNoUpstream) {
  Result<std::shared_ptr<const ProblemSpec>> spec = parse_problem_spec(kRelu, kFile);
  ASSERT_TRUE(spec.is_ok()) << spec.status().message();
  EXPECT_TRUE(spec.value()->upstream.repo.empty());
}

TEST(SpecLoader, AnUpstreamSourceInTheSpecIsRefused) {
  const std::string text = kRelu + std::string(kUpstream) + "source: \"x.relu()\"\n";
  EXPECT_TRUE(has_error(errors_of(text), "source",
                        "upstream source is not kept in a spec: name the file instead (upstream: "
                        "{repo, path, commit})"));
  EXPECT_FALSE(errors_of(kRelu + std::string("source: |\n  import torch\n")).empty());
}

TEST(SpecLoader, UpstreamNeedsAFullCommitHash) {
  std::string text = kRelu + std::string(kUpstream);
  text = edit(text, "423217d9fda91e0c2d67e4a43bf62f96f6d104f1", "423217d");
  EXPECT_TRUE(has_error(errors_of(text), "upstream.commit",
                        "expected a full commit hash (40 hex digits), got '423217d'"));
  text = edit(text, "path: KernelBench/level1/19_ReLU.py,", "file: x.py,");
  EXPECT_TRUE(has_error(errors_of(text), "upstream.path", "missing (required field)"));
  EXPECT_TRUE(
      has_error(errors_of(text), "upstream.file", "unknown field (expected repo, path, commit)"));
}

// ---- missing fields and wrong types --------------------------------------------------------

TEST(SpecLoader, MissingGraph) {
  std::string text = edit(kRelu, "graph:\n  - {name: act, op: relu, in: [x], out: y}\n", "");
  auto errors = errors_of(text);
  EXPECT_TRUE(has_error(errors, "graph", "missing (required field)"));
  EXPECT_EQ(errors.size(), 1u) << all(errors);
}

// Regression: an absent list was sized, which threw out of the loader ("malformed document:
// invalid node") and dropped every error after it.
TEST(SpecLoader, MissingListsDoNotAbortValidation) {
  std::string text =
      edit(kConv, "inputs:\n  - {name: x, shape: [N, C_in, H, W], generator: uniform}\n", "");
  text = edit(text, "parameters:\n", "params:\n");
  text = edit(text, "level: 2", "level: two");
  auto errors = errors_of(text);
  EXPECT_TRUE(has_error(errors, "inputs", "missing (required field)"));
  EXPECT_TRUE(has_error(errors, "parameters", "missing (required field)"));
  EXPECT_TRUE(has_error(errors, "level", "expected an integer, got 'two'"));
  EXPECT_TRUE(has_error_containing(errors, "params", {"unknown field"}));
  EXPECT_TRUE(has_error(errors, "graph[0].in[0]",
                        "expected an input, a parameter or an earlier node's output, got 'x'"));
  for (const SpecError& e : errors)
    EXPECT_EQ(e.message.find("malformed"), std::string::npos) << e.to_string();
}

// Regression: a list entry that is not a map threw BadSubscript out of the loader.
TEST(SpecLoader, InputOrParameterThatIsNotAMap) {
  std::string text =
      edit(kConv, "  - {name: x, shape: [N, C_in, H, W], generator: uniform}", "  - x");
  text = edit(text,
              "  - {name: conv.bias, shape: [C_out], init: fan_in_uniform, fan_in_of: conv.weight}",
              "  - [conv.bias]");
  auto errors = errors_of(text);
  EXPECT_TRUE(has_error(errors, "inputs[0]", "expected a map {name, shape, generator}, got 'x'"));
  EXPECT_TRUE(has_error(errors, "parameters[1]",
                        "expected a map {name, shape, init[, fan_in_of]}, got a list of 1 items"));
  for (const SpecError& e : errors)
    EXPECT_EQ(e.message.find("malformed"), std::string::npos) << e.to_string();
}

TEST(SpecLoader, MissingInputShape) {
  std::string text =
      edit(kRelu, "{name: x, shape: [N, C], generator: uniform}", "{name: x, generator: uniform}");
  EXPECT_TRUE(has_error(errors_of(text), "inputs[0].shape", "missing (required field)"));
}

TEST(SpecLoader, UnknownTopLevelField) {
  std::string text = kRelu + std::string("author: me\n");
  EXPECT_TRUE(
      has_error_containing(errors_of(text), "author", {"unknown field (expected one of id,"}));
}

TEST(SpecLoader, LevelThatIsNotAnInteger) {
  std::string text = edit(kRelu, "level: 1", "level: two");
  EXPECT_TRUE(has_error(errors_of(text), "level", "expected an integer, got 'two'"));
}

TEST(SpecLoader, PresetSizeThatIsNotAnInteger) {
  std::string text = edit(kRelu, "full: {N: 4, C: 8}", "full: {N: 2.5, C: 8}");
  EXPECT_TRUE(has_error(errors_of(text), "presets.full.N", "expected an integer, got '2.5'"));
}

TEST(SpecLoader, ToleranceThatIsNotANumber) {
  std::string text = edit(kRelu, "{atol: 1.0e-4, rtol: 1.0e-4}", "{atol: x, rtol: 1.0e-4}");
  EXPECT_TRUE(has_error(errors_of(text), "tolerance.atol", "expected a number, got 'x'"));
}

TEST(SpecLoader, NegativeTolerance) {
  std::string text = edit(kRelu, "{atol: 1.0e-4, rtol: 1.0e-4}", "{atol: 1.0e-4, rtol: -1}");
  EXPECT_TRUE(has_error(errors_of(text), "tolerance.rtol", "expected a number >= 0"));
}

TEST(SpecLoader, VerificationOwnKernelShareDefaultsToHalfAndCanBeSet) {
  auto plain = parse_problem_spec(kRelu, kFile);
  KB_ASSERT_OK(plain);
  EXPECT_DOUBLE_EQ(plain.value()->verification.own_kernel_share_min, 0.5);
  const std::string tol = "tolerance: {atol: 1.0e-4, rtol: 1.0e-4}";
  auto set = parse_problem_spec(edit(kRelu, tol, tol + "\nverification: {own_kernel_share_min: 0.25}"), kFile);
  KB_ASSERT_OK(set);
  EXPECT_DOUBLE_EQ(set.value()->verification.own_kernel_share_min, 0.25);
}

TEST(SpecLoader, VerificationShareOutsideZeroToOneOrAnUnknownKey) {
  const std::string tol = "tolerance: {atol: 1.0e-4, rtol: 1.0e-4}";
  EXPECT_TRUE(has_error(errors_of(edit(kRelu, tol, tol + "\nverification: {own_kernel_share_min: 1.5}")),
                        "verification.own_kernel_share_min", "expected a number in [0, 1]"));
  EXPECT_TRUE(has_error(errors_of(edit(kRelu, tol, tol + "\nverification: {share: 0.5}")), "verification.share",
                        "unknown field (expected own_kernel_share_min)"));
}

TEST(SpecLoader, RobustnessSkipListsTheKindsThatDoNotApply) {
  std::string text =
      edit(kRelu, "output: y\n", "output: y\nrobustness: {skip: [shift, random_affine]}\n");
  Result<std::shared_ptr<const ProblemSpec>> spec = parse_problem_spec(text, kFile);
  KB_ASSERT_OK(spec);
  EXPECT_EQ(spec.value()->robustness_skip,
            (std::vector<Distribution>{Distribution::kShift, Distribution::kRandomAffine}));
  EXPECT_TRUE(parse_problem_spec(kRelu, kFile).value()->robustness_skip.empty());
}

TEST(SpecLoader, RobustnessSkipOfAnUnknownOrRepeatedKind) {
  std::string text =
      edit(kRelu, "output: y\n", "output: y\nrobustness: {skip: [shift, warp, shift]}\n");
  EXPECT_TRUE(has_error(errors_of(text), "robustness.skip[1]",
                        "expected shift, scale, centered or random_affine, got 'warp'"));
  EXPECT_TRUE(has_error(errors_of(text), "robustness.skip[2]", "'shift' is listed twice"));
  text = edit(kRelu, "output: y\n", "output: y\nrobustness: {only: [shift]}\n");
  EXPECT_TRUE(has_error(errors_of(text), "robustness.only", "unknown field (expected skip)"));
}

TEST(SpecLoader, StrideThatIsNotAList) {
  std::string text = edit(kConv, "stride: [1, 1]", "stride: 3");
  EXPECT_TRUE(has_error(errors_of(text), "graph[0].stride",
                        "expected a list of integer expressions, got '3'"));
}

TEST(SpecLoader, StrideWithTheWrongNumberOfEntries) {
  std::string text = edit(kConv, "stride: [1, 1]", "stride: [1, 1, 1]");
  EXPECT_TRUE(has_error(errors_of(text), "presets.full",
                        "shapes do not fit: graph[0] (conv): attribute 'stride': expected a list "
                        "of 2 integers (one per spatial dim), got 3 items [1, 1, 1]"));
}

TEST(SpecLoader, BoolAttributeThatIsNotABool) {
  std::string text = edit(kRelu, "{name: act, op: relu, in: [x], out: y}",
                          "{name: act, op: mean, in: [x], out: y, dims: [1], keepdim: maybe}");
  EXPECT_TRUE(
      has_error(errors_of(text), "graph[0].keepdim", "expected true or false, got 'maybe'"));
}

// ---- shapes --------------------------------------------------------------------------------

TEST(SpecLoader, ShapeExpressionThatDoesNotParse) {
  std::string text = edit(kConv, "shape: [N, C_in, H, W]", "shape: [N, C_in +, H, W]");
  EXPECT_TRUE(has_error(errors_of(text), "inputs[0].shape[1]",
                        "bad shape expression 'C_in +': expected an integer, a dim name, '-' or "
                        "'(' at column 7"));
}

TEST(SpecLoader, ShapeUsingAnUndeclaredDim) {
  std::string text = edit(kRelu, "shape: [N, C]", "shape: [N, C * K]");
  EXPECT_TRUE(has_error(errors_of(text), "inputs[0].shape", "uses 'K', which is not in dims"));
}

TEST(SpecLoader, DeclaredDimThatNothingUses) {
  std::string text = edit(
      edit(edit(kRelu, "dims: [N, C]", "dims: [N, C, H]"), "{N: 4, C: 8}", "{N: 4, C: 8, H: 3}"),
      "{N: 1, C: 2}", "{N: 1, C: 2, H: 1}");
  EXPECT_TRUE(
      has_error(errors_of(text), "dims", "'H' is declared but no shape or attribute uses it"));
}

TEST(SpecLoader, DimListedTwice) {
  std::string text = edit(kRelu, "dims: [N, C]", "dims: [N, C, N]");
  EXPECT_TRUE(has_error(errors_of(text), "dims", "a dim is listed twice"));
}

TEST(SpecLoader, PresetThatBindsAnUndeclaredDimOrMissesOne) {
  std::string text = edit(kRelu, "small: {N: 1, C: 2}", "small: {N: 1, K: 2}");
  auto errors = errors_of(text);
  EXPECT_TRUE(has_error(errors, "presets.small.K", "not a declared dim"));
  EXPECT_TRUE(has_error(errors, "presets.small.C", "missing (every dim must be bound)"));
}

TEST(SpecLoader, PresetSizeBelowOne) {
  std::string text = edit(kRelu, "small: {N: 1, C: 2}", "small: {N: 0, C: 2}");
  EXPECT_TRUE(has_error(errors_of(text), "presets.small.N", "expected an integer >= 1, got 0"));
}

TEST(SpecLoader, ShapeThatIsNotPositiveAtAPreset) {
  std::string text = edit(kRelu, "shape: [N, C]", "shape: [N, C - 2]");
  auto errors = errors_of(text);
  EXPECT_TRUE(
      has_error(errors, "presets.small",
                "shapes do not fit: inputs[0].shape[1]: expected a size >= 1, got C - 2 = 0"));
  EXPECT_EQ(errors.size(), 1u) << all(errors);  // full (C = 8) fits
}

TEST(SpecLoader, ShapeDivisionWithARemainder) {
  std::string text = edit(kRelu, "shape: [N, C]", "shape: [N, C / 4]");
  auto errors = errors_of(text);
  EXPECT_TRUE(has_error(errors, "presets.small",
                        "shapes do not fit: inputs[0].shape[1]: shape expression 'C / 4': 2 is not "
                        "divisible by 4"));
  EXPECT_EQ(errors.size(), 1u) << all(errors);  // full (C = 8) divides
}

// ---- shapes that do not fit the op ---------------------------------------------------------

TEST(SpecLoader, ConvWeightChannelsThatDoNotMatchTheInput) {
  std::string text = edit(kConv, "shape: [C_out, C_in, 3, 3]", "shape: [C_out, C_in / 2, 3, 3]");
  auto errors = errors_of(text);
  EXPECT_TRUE(
      has_error(errors, "presets.full",
                "shapes do not fit: graph[0] (conv): in[1] (conv.weight): expected a weight "
                "(O, C/groups, *K) with C/groups = 64/1 = 64, got (128, 32, 3, 3)"));
  EXPECT_TRUE(
      has_error_containing(errors, "presets.small", {"C/groups = 32/1 = 32, got (48, 16, 3, 3)"}));
}

TEST(SpecLoader, GroupsThatDoNotDivideTheChannels) {
  std::string text = edit(kConv, "groups: 1", "groups: 5");
  EXPECT_TRUE(has_error(errors_of(text), "presets.full",
                        "shapes do not fit: graph[0] (conv): x's channel count C = 64 is not "
                        "divisible by groups = 5"));
}

TEST(SpecLoader, KernelLargerThanTheInput) {
  std::string text = edit(kConv, "shape: [C_out, C_in, 3, 3]", "shape: [C_out, C_in, 3, 16]");
  auto errors = errors_of(text);
  EXPECT_TRUE(has_error(errors, "presets.small",
                        "shapes do not fit: graph[0] (conv): spatial dim 1: the kernel's extent "
                        "(dilation*(K-1)+1 = 16) is larger than the padded input (15 + 2*0 = 15), "
                        "so the output would be empty"));
  EXPECT_EQ(errors.size(), 1u) << all(errors);  // full (W = 128) fits
}

TEST(SpecLoader, LayerNormWeightThatDoesNotMatchTheLastDims) {
  std::string text =
      edit(edit(kRelu, "parameters: []",
                "parameters:\n"
                "  - {name: ln.weight, shape: [N], init: ones}\n"
                "  - {name: ln.bias, shape: [N], init: zeros}"),
           "{name: act, op: relu, in: [x], out: y}",
           "{name: ln, op: layer_norm, in: [x, ln.weight, ln.bias], out: y, eps: 1.0e-5}");
  EXPECT_TRUE(
      has_error(errors_of(text), "presets.full",
                "shapes do not fit: graph[0] (ln): in[1] (ln.weight): expected a weight whose "
                "shape equals the trailing dims of x (4, 8) (the normalized dims), got (4)"));
}

// ---- generators, inits, ops and attributes -------------------------------------------------

TEST(SpecLoader, UnknownGenerator) {
  std::string text = edit(kRelu, "generator: uniform", "generator: gaussian");
  EXPECT_TRUE(has_error(errors_of(text), "inputs[0].generator",
                        "expected one of normal, softmax_scaled_uniform, softmax_uniform, uniform, "
                        "got 'gaussian'"));
}

TEST(SpecLoader, UnknownInit) {
  std::string text = edit(kConv, "init: kaiming_uniform", "init: he_uniform");
  EXPECT_TRUE(has_error(errors_of(text), "parameters[0].init",
                        "expected one of fan_in_uniform, kaiming_uniform, normal, ones, "
                        "xavier_uniform, zeros, got 'he_uniform'"));
}

TEST(SpecLoader, FanInOfThatNamesNoEarlierParameter) {
  std::string text = edit(kConv, "fan_in_of: conv.weight", "fan_in_of: conv.weights");
  EXPECT_TRUE(has_error(errors_of(text), "parameters[1].fan_in_of",
                        "expected the name of an earlier parameter (fan_in_uniform takes its bound "
                        "from that weight), got 'conv.weights'"));
}

TEST(SpecLoader, UnknownOp) {
  std::string text = edit(kRelu, "op: relu", "op: rectify");
  EXPECT_TRUE(has_error_containing(
      errors_of(text), "graph[0].op",
      {"expected one of bmm, linear, conv, conv_transpose, relu,", "got 'rectify'"}));
}

TEST(SpecLoader, UnknownAttribute) {
  std::string text = edit(kRelu, "out: y}", "out: y, inplace: true}");
  EXPECT_TRUE(has_error(errors_of(text), "graph[0].inplace",
                        "not an attribute of op 'relu' (its attributes: none)"));
  text = edit(kConv, "groups: 1}", "groups: 1, bias: true}");
  EXPECT_TRUE(has_error(errors_of(text), "graph[0].bias",
                        "not an attribute of op 'conv' (its attributes: stride, padding, dilation, "
                        "groups)"));
}

TEST(SpecLoader, MissingRequiredAttribute) {
  std::string text = edit(kConv, ", groups: 1}", "}");
  EXPECT_TRUE(has_error(errors_of(text), "graph[0].groups", "missing (required by op 'conv')"));
}

TEST(SpecLoader, WrongNumberOfOpInputs) {
  std::string text = edit(kRelu, "in: [x]", "in: [x, x]");
  EXPECT_TRUE(has_error(errors_of(text), "graph[0].in", "op 'relu' takes 1 inputs, got 2"));
  text = edit(kConv, "in: [x, conv.weight, conv.bias]", "in: [x]");
  EXPECT_TRUE(has_error(errors_of(text), "graph[0].in", "op 'conv' takes 2 to 3 inputs, got 1"));
}

TEST(SpecLoader, NodeInputUsedBeforeItIsDefined) {
  std::string text = edit(kConv, "in: [y], out: z", "in: [out], out: z");
  EXPECT_TRUE(has_error(errors_of(text), "graph[1].in[0]",
                        "expected an input, a parameter or an earlier node's output, got 'out'"));
}

TEST(SpecLoader, DuplicateNodeNames) {
  std::string text = edit(kConv, "name: divide", "name: conv");
  EXPECT_TRUE(has_error(errors_of(text), "graph[2].name", "'conv' names two nodes"));
}

TEST(SpecLoader, NodeOutputDefinedTwice) {
  std::string text = edit(kConv, "out: z", "out: y");
  text = edit(text, "in: [z]", "in: [y]");
  EXPECT_TRUE(has_error(errors_of(text), "graph[1].out", "'y' is already defined"));
}

// ---- header fields -------------------------------------------------------------------------

TEST(SpecLoader, MissingFullOrSmallPreset) {
  std::string text = edit(kRelu, "  small: {N: 1, C: 2}\n", "");
  EXPECT_TRUE(has_error(errors_of(text), "presets", "missing the 'small' preset"));
  text = edit(kRelu, "  full: {N: 4, C: 8}\n", "  tiny: {N: 4, C: 8}\n");
  EXPECT_TRUE(has_error(errors_of(text), "presets", "missing the 'full' preset"));
}

TEST(SpecLoader, IdThatBreaksThePattern) {
  for (const char* id : {"L1_90", "L4_900", "l1_900", "L1_9000", "L1-900"}) {
    std::string text = edit(kRelu, "id: L1_900", std::string("id: ") + id);
    EXPECT_TRUE(
        has_error(errors_of(text), "id",
                  std::string("expected L<level>_<3 digits> (e.g. L2_017), got '") + id + "'"));
  }
}

TEST(SpecLoader, LevelThatDoesNotMatchTheId) {
  std::string text = edit(kRelu, "level: 1", "level: 2");
  EXPECT_TRUE(has_error(errors_of(text), "level", "expected 1 (the level in the id), got 2"));
}

TEST(SpecLoader, UnknownFamily) {
  std::string text = edit(kRelu, "family: activation", "family: pointwise");
  EXPECT_TRUE(has_error_containing(errors_of(text), "family",
                                   {"expected one of matmul, conv,", "got 'pointwise'"}));
}

TEST(SpecLoader, InvalidYamlNamesTheLine) {
  // Line 7 opens a flow map that line 8 does not close.
  std::string text = edit(kRelu, "full: {N: 4, C: 8}", "full: {N: 4, C: 8");
  std::vector<SpecError> errors = errors_of(text);
  ASSERT_EQ(errors.size(), 1u) << all(errors);
  EXPECT_EQ(errors[0].file, kFile);
  EXPECT_EQ(errors[0].field, "");
  const std::string& message = errors[0].message;
  EXPECT_EQ(message.rfind("not valid YAML: ", 0), 0u) << message;
  EXPECT_NE(message.find(" at line 8, column "), std::string::npos) << message;
  EXPECT_EQ(errors[0].to_string(), std::string(kFile) + ": " + message);
}

TEST(SpecLoader, DocumentThatIsNotAMap) {
  std::vector<SpecError> errors = errors_of("- just\n- a list\n");
  ASSERT_EQ(errors.size(), 1u) << all(errors);
  EXPECT_EQ(errors[0].to_string(),
            std::string(kFile) + ": expected a map of spec fields, got a list of 2 items");
}

// ---- several errors ------------------------------------------------------------------------

TEST(SpecLoader, ReportsEveryErrorAtOnce) {
  std::string text = edit(kRelu, "level: 1", "level: two");
  text = edit(text, "generator: uniform", "generator: gaussian");
  text = edit(text, "op: relu", "op: rectify");
  text = edit(text, "{atol: 1.0e-4,", "{atol: x,");
  std::vector<SpecError> errors = errors_of(text);
  EXPECT_EQ(errors.size(), 4u) << all(errors);
  EXPECT_TRUE(has_error_containing(errors, "level", {"got 'two'"}));
  EXPECT_TRUE(has_error_containing(errors, "inputs[0].generator", {"got 'gaussian'"}));
  EXPECT_TRUE(has_error_containing(errors, "graph[0].op", {"got 'rectify'"}));
  EXPECT_TRUE(has_error_containing(errors, "tolerance.atol", {"got 'x'"}));

  Result<std::shared_ptr<const ProblemSpec>> spec = parse_problem_spec(text, kFile);
  ASSERT_FALSE(spec.is_ok());
  EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument);
  std::stringstream lines(spec.status().message());
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    EXPECT_EQ(line.rfind(std::string(kFile) + ": ", 0), 0u) << line;
    ++count;
  }
  EXPECT_EQ(count, 4);
}

TEST(SpecLoader, ShapeErrorsAreReportedForEveryFailingPreset) {
  std::string text = edit(kRelu, "shape: [N, C]", "shape: [N, C / 3]");
  std::vector<SpecError> errors = errors_of(text);
  EXPECT_TRUE(has_error_containing(errors, "presets.full", {"8 is not divisible by 3"}));
  EXPECT_TRUE(has_error_containing(errors, "presets.small", {"2 is not divisible by 3"}));
}

}  // namespace
}  // namespace kb
