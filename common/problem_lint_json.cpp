// The lint report as JSON (problem_lint.h): what `kb-executor --lint` writes and `kb problems
// lint --device cuda` reads back.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "common/problem_lint.h"

namespace kb {
namespace {

using nlohmann::json;

// JSON has no infinity or NaN (nlohmann writes null): a worst ratio of inf must come back as inf.
json number(double value) {
  if (std::isfinite(value)) return value;
  if (std::isnan(value)) return "nan";
  return value > 0 ? "inf" : "-inf";
}

double number_from(const json& j) {
  if (j.is_number()) return j.get<double>();
  const std::string text = j.get<std::string>();
  if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (text == "inf") return std::numeric_limits<double>::infinity();
  if (text == "-inf") return -std::numeric_limits<double>::infinity();
  throw std::invalid_argument("not a number: '" + text + "'");
}

Severity severity_from(const std::string& name) {
  for (Severity s : {Severity::kInfo, Severity::kLow, Severity::kMedium, Severity::kHigh}) {
    if (name == severity_name(s)) return s;
  }
  throw std::invalid_argument("unknown severity '" + name + "'");
}

LintReport report_from(const json& j) {
  LintReport r;
  r.id = j.at("id").get<std::string>();
  r.dims = j.at("dims").get<Dims>();
  r.seeds = j.at("seeds").get<int>();
  r.elements = j.at("elements").get<int64_t>();
  r.near_zero_share = number_from(j.at("near_zero_share"));
  r.min = number_from(j.at("min"));
  r.max = number_from(j.at("max"));
  r.seed_std_min = number_from(j.at("seed_std_min"));
  for (const json& c : j.at("cheats")) {
    r.cheats.push_back(
        {.name = c.at("name").get<std::string>(), .worst_ratio = number_from(c.at("worst_ratio"))});
  }
  for (const json& s : j.at("sensitivity")) {
    r.sensitivity.push_back({.tensor = s.at("tensor").get<std::string>(),
                             .is_param = s.at("is_param").get<bool>(),
                             .constant_init = s.at("constant_init").get<bool>(),
                             .changed_share = number_from(s.at("changed_share"))});
  }
  for (const json& f : j.at("findings")) {
    r.findings.push_back({.severity = severity_from(f.at("severity").get<std::string>()),
                          .message = f.at("message").get<std::string>()});
  }
  return r;
}

}  // namespace

json to_json(const LintReport& r) {
  json j = {{"id", r.id},
            {"dims", r.dims},
            {"seeds", r.seeds},
            {"elements", r.elements},
            {"near_zero_share", number(r.near_zero_share)},
            {"min", number(r.min)},
            {"max", number(r.max)},
            {"seed_std_min", number(r.seed_std_min)},
            {"cheats", json::array()},
            {"sensitivity", json::array()},
            {"findings", json::array()}};
  for (const CheatResult& c : r.cheats) {
    j["cheats"].push_back({{"name", c.name}, {"worst_ratio", number(c.worst_ratio)}});
  }
  for (const Sensitivity& s : r.sensitivity) {
    j["sensitivity"].push_back({{"tensor", s.tensor},
                                {"is_param", s.is_param},
                                {"constant_init", s.constant_init},
                                {"changed_share", number(s.changed_share)}});
  }
  for (const LintFinding& f : r.findings) {
    j["findings"].push_back({{"severity", severity_name(f.severity)}, {"message", f.message}});
  }
  return j;
}

Result<LintReport> lint_report_from_json(const json& j) {
  try {
    return report_from(j);
  } catch (const std::exception& e) {
    return Status::invalid_argument(std::string("lint report: ") + e.what());
  }
}

}  // namespace kb
