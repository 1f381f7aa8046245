// Small problem specs for the graph executor's tests (the plan, the CPU interpreter, the device
// reference), and the instance they make. One copy here, so that a change to the spec format
// changes them once.
#pragma once

#include <gtest/gtest.h>

#include "common/problem_spec.h"
#include "common/spec_loader.h"

namespace kb::testing {

// out = sigmoid(reshape(relu(x) + x)): a view in the middle, an input read twice. Normal inputs,
// so that relu changes something. small: x is (2, 3), out has 6 elements.
inline constexpr char kChainSpec[] = R"yaml(id: L1_901
name: Chain
level: 1
family: activation
dims: [N, C]
presets:
  full: {N: 4, C: 6}
  small: {N: 2, C: 3}
inputs:
  - {name: x, shape: [N, C], generator: normal}
parameters: []
graph:
  - {name: act, op: relu, in: [x], out: a}
  - {name: sum, op: add, in: [a, x], out: b}
  - {name: view, op: reshape, in: [b], out: v, shape: [N * C]}
  - {name: squash, op: sigmoid, in: [v], out: out}
output: out
)yaml";

// The output is a view of the input (the interpreter must copy). small: x is (3, 5), out (5, 3).
inline constexpr char kViewOnlySpec[] = R"yaml(id: L1_902
name: ViewOnly
level: 1
family: activation
dims: [N, C]
presets:
  full: {N: 4, C: 6}
  small: {N: 3, C: 5}
inputs:
  - {name: x, shape: [N, C], generator: uniform}
parameters: []
graph:
  - {name: view, op: reshape, in: [x], out: out, shape: [C, N]}
output: out
)yaml";

// The spec parsed and instantiated at `preset`; a failure is a test failure.
inline ProblemInstance probe_instance(const char* yaml, const char* preset = "small") {
  auto spec = parse_problem_spec(yaml, "problems/L1_900_probe.yaml");
  EXPECT_TRUE(spec.is_ok()) << spec.status().to_string();
  return ProblemInstance::create(spec.value(), preset).value();
}

}  // namespace kb::testing
