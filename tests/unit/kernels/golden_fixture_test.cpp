// The golden models against real PyTorch: every fixture under tests/fixtures/oracle/<ID>/ was
// written by tools/pytorch_oracle.py, which ran KernelBench's own model (restored from the seed)
// in float64 on the inputs and parameters our generator draws. Here each case is regenerated
// (the fixture's checksums guard against generator drift), the golden model runs, and its output
// must match PyTorch's to a relative error of 1e-6. PyTorch is never needed here: the fixtures
// are committed (tools/README.md says how to regenerate them).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/npy.h"
#include "common/spec_loader.h"
#include "common/tensor_generator.h"
#include "kernels/cpu_model.h"
#include "tests/support/assert_ok.h"

namespace kb {
namespace {

namespace fs = std::filesystem;

// Both sides are float64 computations of the same fp32 inputs; only summation order differs.
constexpr double kMaxRelativeError = 1e-6;
// Elements far below the tensor's scale (exact zeros of a transposed conv, cancellations) are
// judged against 1e-6 of the largest |expected| instead of their own magnitude.
constexpr double kScaleFloor = 1e-6;
constexpr double kTinyFloor = 1e-30;
constexpr int kMinCasesPerProblem = 2;

const fs::path kOracleDir = fs::path(KB_FIXTURES_DIR) / "oracle";

struct FixtureCase {
  std::string id;         // "L2_017"
  std::string name;       // "odd"
  fs::path json_path;     // oracle/L2_017/odd.json
  fs::path expected_npy;  // oracle/L2_017/odd.npy
};

// How gtest names a failing case: "L2_017/odd", not the struct's bytes.
void PrintTo(const FixtureCase& c, std::ostream* os) {
  *os << c.id << "/" << c.name;
}

std::vector<FixtureCase> fixture_cases() {
  std::vector<FixtureCase> cases;
  if (!fs::is_directory(kOracleDir)) return cases;  // FixtureSet.CoversEveryProblem reports it
  for (const auto& problem_dir : fs::directory_iterator(kOracleDir)) {
    if (!problem_dir.is_directory()) continue;
    for (const auto& file : fs::directory_iterator(problem_dir.path())) {
      if (file.path().extension() != ".json") continue;
      fs::path npy = file.path();
      npy.replace_extension(".npy");
      cases.push_back(
          {problem_dir.path().filename().string(), file.path().stem().string(), file.path(), npy});
    }
  }
  std::sort(cases.begin(), cases.end(),
            [](const FixtureCase& a, const FixtureCase& b) { return a.json_path < b.json_path; });
  return cases;
}

const Result<ProblemCatalog>& catalog() {
  static const Result<ProblemCatalog> kCatalog = load_problem_catalog(default_problems_dir());
  return kCatalog;
}

// The fields of <case>.json that the test needs.
struct FixtureRecord {
  Dims dims;
  GeneratorKey key;
  std::map<std::string, std::string> checksums;  // tensor name -> tensor_checksum
  Shape output_shape;
};

Result<FixtureRecord> read_record(const fs::path& path) {
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::invalid_argument(path.string() + ": not a JSON object");
  }
  for (const char* field : {"dims", "seed", "trial", "checksums", "output_shape"}) {
    if (!doc.contains(field)) {
      return Status::invalid_argument(path.string() + ": missing \"" + field + "\"");
    }
  }
  FixtureRecord record;
  record.dims = doc["dims"].get<Dims>();
  record.key = {.seed = doc["seed"].get<uint64_t>(), .trial = doc["trial"].get<uint32_t>()};
  record.checksums = doc["checksums"].get<std::map<std::string, std::string>>();
  record.output_shape = doc["output_shape"].get<Shape>();
  return record;
}

struct ErrorReport {
  double max_relative = 0;
  size_t worst = 0;
};

// max over elements of |g - e| / max(|e|, kScaleFloor * max|e|, kTinyFloor).
ErrorReport relative_error(const HostTensor<double>& golden, const HostTensor<double>& expected) {
  double scale = 0;
  for (double e : expected.data) scale = std::max(scale, std::abs(e));
  const double floor = std::max(kScaleFloor * scale, kTinyFloor);
  ErrorReport report;
  for (size_t i = 0; i < expected.data.size(); ++i) {
    const double e = expected.data[i];
    const double error = std::abs(golden.data[i] - e) / std::max(std::abs(e), floor);
    if (!(error <= report.max_relative)) {  // also catches NaN
      report.max_relative = error;
      report.worst = i;
    }
  }
  return report;
}

TEST(FixtureSet, CoversEveryProblem) {
  KB_ASSERT_OK(catalog());
  std::map<std::string, int> cases_per_problem;
  for (const FixtureCase& c : fixture_cases()) ++cases_per_problem[c.id];
  for (const auto& [id, spec] : catalog().value().problems) {
    EXPECT_GE(cases_per_problem[id], kMinCasesPerProblem)
        << id << " has too few oracle fixtures in " << kOracleDir
        << "; run tools/pytorch_oracle.py --only " << id;
  }
  const auto suite = catalog().value().suites.find("kernelbench22");
  ASSERT_NE(suite, catalog().value().suites.end()) << "no kernelbench22 suite";
  EXPECT_EQ(suite->second.size(), 22u);
  for (const std::string& id : suite->second) {
    EXPECT_GE(cases_per_problem[id], kMinCasesPerProblem) << id << " (kernelbench22)";
  }
}

class GoldenFixtureTest : public testing::TestWithParam<FixtureCase> {};

TEST_P(GoldenFixtureTest, GoldenModelMatchesPyTorch) {
  const FixtureCase& c = GetParam();
  KB_ASSERT_OK(catalog());
  const ProblemCatalog& problems = catalog().value();
  ASSERT_TRUE(problems.problems.count(c.id)) << "fixture for unknown problem " << c.id;
  Result<FixtureRecord> record = read_record(c.json_path);
  KB_ASSERT_OK(record);
  Result<ProblemInstance> instance =
      ProblemInstance::create(problems.problems.at(c.id), record->dims);
  KB_ASSERT_OK(instance);

  const TensorSet tensors = generate_tensors(instance.value(), record->key);
  EXPECT_EQ(tensors.all().size(), record->checksums.size()) << "the spec's tensors changed";
  for (const auto& [name, checksum] : record->checksums) {
    ASSERT_TRUE(tensors.contains(name)) << "the spec has no tensor " << name;
    EXPECT_EQ(tensor_checksum(tensors.get(name)), checksum)
        << "generator drift: " << name << " differs from the values PyTorch saw";
  }

  const CpuModel* model = find_cpu_model(c.id);
  ASSERT_NE(model, nullptr) << "no golden model registered for " << c.id;
  const HostTensor<double> golden = model->golden(instance.value(), tensors);
  Result<HostTensor<double>> expected = read_npy(c.expected_npy.string());
  KB_ASSERT_OK(expected);
  ASSERT_EQ(expected->shape, record->output_shape) << c.expected_npy;
  ASSERT_EQ(golden.shape, expected->shape) << "golden " << shape_to_string(golden.shape)
                                           << ", PyTorch " << shape_to_string(expected->shape);

  const ErrorReport error = relative_error(golden, expected.value());
  RecordProperty("max_relative_error", std::to_string(error.max_relative));
  std::printf("[  oracle  ] %s/%s %s: max relative error %.3g\n", c.id.c_str(), c.name.c_str(),
              shape_to_string(golden.shape).c_str(), error.max_relative);
  EXPECT_LE(error.max_relative, kMaxRelativeError)
      << "element " << error.worst << ": golden " << golden.data[error.worst] << ", PyTorch "
      << expected->data[error.worst];
}

// FixtureSet.CoversEveryProblem reports a missing fixture directory.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GoldenFixtureTest);
INSTANTIATE_TEST_SUITE_P(Oracle, GoldenFixtureTest, testing::ValuesIn(fixture_cases()),
                         [](const testing::TestParamInfo<FixtureCase>& test) {
                           std::string name = test.param.id + "_" + test.param.name;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace kb
