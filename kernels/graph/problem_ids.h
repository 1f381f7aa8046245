// The ids of the problem specs this build was configured with (problems/L*.yaml, collected by
// kernels/CMakeLists.txt): the problems the graph interpreters register a golden model and a
// reference for. A new spec file is a new problem after re-running CMake (the glob re-checks).
//
// Thread safety: immutable static data.
#pragma once

#include <span>
#include <string_view>

namespace kb::graph {

// Sorted.
std::span<const std::string_view> configured_problem_ids();

}  // namespace kb::graph
