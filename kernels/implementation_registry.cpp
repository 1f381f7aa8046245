#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kernels/implementation.h"

namespace kb {
namespace {

std::map<std::pair<std::string, Variant>, ImplementationFactory>& registry() {
  static std::map<std::pair<std::string, Variant>, ImplementationFactory> factories;
  return factories;
}

template <typename Decls>
size_t index_of(const ProblemInstance& problem, const Decls& decls, std::string_view name) {
  for (size_t i = 0; i < decls.size(); ++i) {
    if (decls[i].name == name) return i;
  }
  std::fprintf(stderr, "kbfleet: %s has no tensor '%.*s'\n", problem.spec().id.c_str(),
               static_cast<int>(name.size()), name.data());
  std::abort();
}

}  // namespace

bool register_implementation(std::string_view problem_id, Variant variant,
                             ImplementationFactory factory) {
  auto [it, fresh] = registry().emplace(std::make_pair(std::string(problem_id), variant), factory);
  if (!fresh) {
    std::fprintf(stderr, "kbfleet: two %s implementations registered for %.*s\n",
                 variant == Variant::kReference ? "reference" : "custom",
                 static_cast<int>(problem_id.size()), problem_id.data());
    std::abort();
  }
  return true;
}

ImplementationFactory find_implementation(std::string_view problem_id, Variant variant) {
  auto it = registry().find(std::make_pair(std::string(problem_id), variant));
  return it == registry().end() ? nullptr : it->second;
}

std::vector<std::string> registered_problem_ids() {
  std::vector<std::string> ids;
  for (const auto& [key, factory] : registry()) {
    if (ids.empty() || ids.back() != key.first) ids.push_back(key.first);
  }
  return ids;
}

size_t input_index(const ProblemInstance& problem, std::string_view name) {
  return index_of(problem, problem.spec().inputs, name);
}

size_t param_index(const ProblemInstance& problem, std::string_view name) {
  return index_of(problem, problem.spec().params, name);
}

}  // namespace kb
