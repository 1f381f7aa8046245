// Loading and validating problem specs (schemas/problem-spec.md) and suites.
//
// The loader parses a YAML document into a ProblemSpec and validates it completely: fields and
// their types, shape expressions, generators and inits, graph nodes against the op catalog, and
// shape inference for every preset. Every problem found is reported, not only the first, each as
// "<file>: <field path>: expected <what>, got <what>".
//
// Thread safety: free functions without shared state.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/problem_spec.h"
#include "common/status.h"

namespace kb {

struct SpecError {
  std::string file;
  std::string field;    // "graph[0].stride", "presets.small.N", "" for the whole document
  std::string message;  // "expected ..., got ..."
  std::string to_string() const;  // "<file>: <field>: <message>"
};

// Parses and validates one document. `file` is used in messages (the path, as given).
// On failure the Status message holds every SpecError, one per line.
Result<std::shared_ptr<const ProblemSpec>> parse_problem_spec(const std::string& yaml_text,
                                                              const std::string& file);
Result<std::shared_ptr<const ProblemSpec>> load_problem_spec(const std::string& path);
// The detailed form: the errors of one document (empty when it is valid).
std::vector<SpecError> validate_problem_spec(const std::string& yaml_text, const std::string& file);

// All problems of a directory (every *.yaml but suites.yaml), keyed by id. Fails on any invalid
// spec, on a duplicate id (naming both files) and on a file name that does not start with its id.
struct ProblemCatalog {
  std::map<std::string, std::shared_ptr<const ProblemSpec>> problems;
  std::map<std::string, std::vector<std::string>> suites;  // from suites.yaml, when present

  const ProblemSpec* find(const std::string& id) const;
  // The ids of `name_or_ids`: a suite name, or a comma-separated list of ids (each once, in the
  // order first named). Fails on unknowns.
  Result<std::vector<std::string>> resolve(const std::string& name_or_ids) const;
};
Result<ProblemCatalog> load_problem_catalog(const std::string& directory);

// Where the suite lives: $KB_PROBLEMS_DIR, else the source tree's problems/ (compiled in).
std::string default_problems_dir();

}  // namespace kb
