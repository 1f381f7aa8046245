// The problem lint's renderings (the statistics are common/problem_lint.h's): one block per
// problem for a terminal, and docs/problem-quality.md's table and findings.
//
// Thread safety: pure functions of their arguments.
#pragma once

#include <string>
#include <vector>

#include "common/problem_lint.h"

namespace kb::cli {

// One line per problem and the findings below, for a terminal.
std::string lint_text(const LintReport& report);
// docs/problem-quality.md: the suite's table, then the findings per problem. `reference` says
// what ran ("the golden model on the CPU", "the reference pack on an NVIDIA H200").
std::string lint_markdown(const std::vector<LintReport>& reports, const std::string& preset,
                          const std::string& command,
                          const std::string& reference = "the golden model on the CPU");

}  // namespace kb::cli
