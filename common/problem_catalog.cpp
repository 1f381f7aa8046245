// The suite directory: every problem spec plus suites.yaml (declared in spec_loader.h).
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/config_file.h"
#include "common/spec_loader.h"

namespace kb {
namespace {

namespace fs = std::filesystem;

Status load_suites(const std::string& path, ProblemCatalog& catalog) {
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return Status::invalid_argument(path + ": not valid YAML: " + e.msg);
  }
  YAML::Node suites = doc["suites"];
  if (!suites || !suites.IsMap()) {
    return Status::invalid_argument(path + ": suites: expected a map of suite name to list of ids");
  }
  for (const auto& kv : suites) {
    const std::string name = kv.first.Scalar();
    const std::string field = path + ": suites." + name;
    if (!kv.second.IsSequence()) return Status::invalid_argument(field + ": expected a list of ids");
    std::vector<std::string> ids;
    for (const auto& id_node : kv.second) {
      std::string id = id_node.Scalar();
      if (!catalog.problems.count(id)) {
        return Status::invalid_argument(field + ": expected ids of specs in the directory, got '" + id + "'");
      }
      if (std::find(ids.begin(), ids.end(), id) != ids.end()) {
        return Status::invalid_argument(field + ": '" + id + "' is listed twice");
      }
      ids.push_back(id);
    }
    catalog.suites[name] = std::move(ids);
  }
  return Status::ok();
}

}  // namespace

const ProblemSpec* ProblemCatalog::find(const std::string& id) const {
  auto it = problems.find(id);
  return it == problems.end() ? nullptr : it->second.get();
}

Result<std::vector<std::string>> ProblemCatalog::resolve(const std::string& name_or_ids) const {
  if (auto it = suites.find(name_or_ids); it != suites.end()) return it->second;
  std::vector<std::string> ids;
  std::stringstream in(name_or_ids);
  std::string id;
  while (std::getline(in, id, ',')) {
    id.erase(0, id.find_first_not_of(" \t"));  // "L1_003, L2_017" is a list of two ids
    id.erase(id.find_last_not_of(" \t") + 1);
    if (id.empty()) continue;
    if (!problems.count(id)) {
      std::string known;
      for (const auto& [name, list] : suites) known += (known.empty() ? "" : ", ") + name;
      return Status::not_found("'" + id + "' is neither a problem id nor a suite (suites: " + known + ")");
    }
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);  // each id once
  }
  if (ids.empty()) return Status::invalid_argument("no problems named");
  return ids;
}

Result<ProblemCatalog> load_problem_catalog(const std::string& directory) {
  std::error_code ec;
  if (!fs::is_directory(directory, ec)) return Status::not_found(directory + ": not a directory");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(directory, ec)) {
    const fs::path& p = entry.path();
    if (p.extension() == ".yaml" && p.filename() != "suites.yaml") files.push_back(p);
  }
  std::sort(files.begin(), files.end());
  ProblemCatalog catalog;
  std::map<std::string, std::string> file_of;
  std::string errors;
  for (const fs::path& path : files) {
    Result<std::shared_ptr<const ProblemSpec>> spec = load_problem_spec(path.string());
    if (!spec.is_ok()) {
      errors += (errors.empty() ? "" : "\n") + spec.status().message();
      continue;
    }
    const std::string& id = spec.value()->id;
    if (path.filename().string().rfind(id + "_", 0) != 0) {
      errors += (errors.empty() ? "" : "\n") + path.string() + ": id: expected the file name to start with '" + id + "_'";
    }
    if (auto [it, fresh] = file_of.emplace(id, path.string()); !fresh) {
      errors += (errors.empty() ? "" : "\n") + path.string() + ": id: '" + id + "' is already the id of " + it->second;
      continue;
    }
    catalog.problems[id] = spec.value();
  }
  if (!errors.empty()) return Status::invalid_argument(errors);
  const fs::path suites = fs::path(directory) / "suites.yaml";
  if (fs::exists(suites)) {
    if (Status s = load_suites(suites.string(), catalog); !s.is_ok()) return s;
  }
  return catalog;
}

std::string default_problems_dir() {
  if (const char* env = std::getenv("KB_PROBLEMS_DIR"); env && *env) return env;
  if (auto installed = installed_data_path("problems")) return *installed;  // a Debian package
  return KB_DEFAULT_PROBLEMS_DIR;
}

}  // namespace kb
