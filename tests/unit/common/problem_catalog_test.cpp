// The suite directory (common/problem_catalog.cpp, declared in common/spec_loader.h): duplicate
// ids, file names, suites.yaml, resolve(); and the real problems/ directory.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "common/spec_loader.h"
#include "tests/support/assert_ok.h"
#include "tests/support/temp_dir.h"

namespace kb {
namespace {

namespace fs = std::filesystem;

// A minimal valid spec with the given id (level 1).
std::string spec_text(const std::string& id) {
  return "id: " + id + R"yaml(
name: Probe
level: 1
family: activation
dims: [N]
presets:
  full: {N: 8}
  small: {N: 2}
inputs:
  - {name: x, shape: [N], generator: uniform}
parameters: []
graph:
  - {name: act, op: relu, in: [x], out: y}
output: y
)yaml";
}

class ProblemCatalogTest : public testing::Test {
 protected:
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name) << text;
  }
  Result<ProblemCatalog> load() const { return load_problem_catalog(dir_.string()); }

  ::kb::test::TempDir dir_{"kb-catalog-test"};
};

TEST_F(ProblemCatalogTest, LoadsEverySpecAndTheSuites) {
  write("L1_001_a.yaml", spec_text("L1_001"));
  write("L1_002_b.yaml", spec_text("L1_002"));
  write("suites.yaml", "suites:\n  all: [L1_001, L1_002]\n  one: [L1_002]\n");
  Result<ProblemCatalog> catalog = load();
  KB_ASSERT_OK(catalog);
  EXPECT_EQ(catalog->problems.size(), 2u);
  ASSERT_NE(catalog->find("L1_002"), nullptr);
  EXPECT_EQ(catalog->find("L1_002")->file, path("L1_002_b.yaml"));
  EXPECT_EQ(catalog->find("L1_003"), nullptr);
  EXPECT_EQ(catalog->suites.at("all"), (std::vector<std::string>{"L1_001", "L1_002"}));
  EXPECT_EQ(catalog->suites.at("one"), (std::vector<std::string>{"L1_002"}));
}

TEST_F(ProblemCatalogTest, SuitesFileIsOptionalAndOtherFilesAreIgnored) {
  write("L1_001_a.yaml", spec_text("L1_001"));
  write("README.md", "not a spec");
  Result<ProblemCatalog> catalog = load();
  KB_ASSERT_OK(catalog);
  EXPECT_EQ(catalog->problems.size(), 1u);
  EXPECT_TRUE(catalog->suites.empty());
}

TEST_F(ProblemCatalogTest, DuplicateIdNamesBothFiles) {
  write("L1_001_a.yaml", spec_text("L1_001"));
  write("L1_001_b.yaml", spec_text("L1_001"));
  Result<ProblemCatalog> catalog = load();
  ASSERT_FALSE(catalog.is_ok());
  EXPECT_EQ(catalog.status().message(),
            path("L1_001_b.yaml") + ": id: 'L1_001' is already the id of " + path("L1_001_a.yaml"));
}

TEST_F(ProblemCatalogTest, FileNameMustStartWithTheId) {
  write("L1_002_a.yaml", spec_text("L1_001"));
  Result<ProblemCatalog> catalog = load();
  ASSERT_FALSE(catalog.is_ok());
  EXPECT_EQ(catalog.status().message(),
            path("L1_002_a.yaml") + ": id: expected the file name to start with 'L1_001_'");
}

TEST_F(ProblemCatalogTest, InvalidSpecsAreAllReported) {
  write("L1_001_a.yaml", spec_text("L1_001") + "bogus: 1\n");
  write("L1_002_b.yaml", spec_text("L1_002") + "other: 2\n");
  Result<ProblemCatalog> catalog = load();
  ASSERT_FALSE(catalog.is_ok());
  const std::string& message = catalog.status().message();
  EXPECT_NE(message.find(path("L1_001_a.yaml") + ": bogus: unknown field"), std::string::npos)
      << message;
  EXPECT_NE(message.find(path("L1_002_b.yaml") + ": other: unknown field"), std::string::npos)
      << message;
}

TEST_F(ProblemCatalogTest, SuiteNamingAnUnknownId) {
  write("L1_001_a.yaml", spec_text("L1_001"));
  write("suites.yaml", "suites:\n  smoke: [L1_001, L1_999]\n");
  Result<ProblemCatalog> catalog = load();
  ASSERT_FALSE(catalog.is_ok());
  EXPECT_EQ(
      catalog.status().message(),
      path("suites.yaml") + ": suites.smoke: expected ids of specs in the directory, got 'L1_999'");
}

TEST_F(ProblemCatalogTest, SuiteNamingAnIdTwice) {
  write("L1_001_a.yaml", spec_text("L1_001"));
  write("suites.yaml", "suites:\n  smoke: [L1_001, L1_001]\n");
  Result<ProblemCatalog> catalog = load();
  ASSERT_FALSE(catalog.is_ok());
  EXPECT_EQ(catalog.status().message(),
            path("suites.yaml") + ": suites.smoke: 'L1_001' is listed twice");
}

TEST_F(ProblemCatalogTest, SuitesFileWithoutASuitesMap) {
  write("L1_001_a.yaml", spec_text("L1_001"));
  write("suites.yaml", "smoke: [L1_001]\n");
  Result<ProblemCatalog> catalog = load();
  ASSERT_FALSE(catalog.is_ok());
  EXPECT_EQ(catalog.status().message(),
            path("suites.yaml") + ": suites: expected a map of suite name to list of ids");
}

TEST_F(ProblemCatalogTest, NotADirectory) {
  Result<ProblemCatalog> catalog = load_problem_catalog(path("absent"));
  ASSERT_FALSE(catalog.is_ok());
  EXPECT_EQ(catalog.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(catalog.status().message(), path("absent") + ": not a directory");
}

TEST_F(ProblemCatalogTest, ResolvesASuiteACommaListAndRejectsUnknowns) {
  write("L1_001_a.yaml", spec_text("L1_001"));
  write("L1_002_b.yaml", spec_text("L1_002"));
  write("L1_003_c.yaml", spec_text("L1_003"));
  write("suites.yaml", "suites:\n  pair: [L1_003, L1_001]\n");
  Result<ProblemCatalog> catalog = load();
  KB_ASSERT_OK(catalog);

  Result<std::vector<std::string>> suite = catalog->resolve("pair");
  KB_ASSERT_OK(suite);
  EXPECT_EQ(suite.value(), (std::vector<std::string>{"L1_003", "L1_001"}));  // the suite's order

  Result<std::vector<std::string>> list = catalog->resolve("L1_002,L1_001");
  KB_ASSERT_OK(list);
  EXPECT_EQ(list.value(), (std::vector<std::string>{"L1_002", "L1_001"}));
  // An id named again is one job, not one more (a SUBMIT of 75,000 copies made as many jobs).
  Result<std::vector<std::string>> repeated = catalog->resolve("L1_002,L1_001,L1_002, L1_001");
  KB_ASSERT_OK(repeated);
  EXPECT_EQ(repeated.value(), (std::vector<std::string>{"L1_002", "L1_001"}));

  Result<std::vector<std::string>> single = catalog->resolve("L1_003");
  KB_ASSERT_OK(single);
  EXPECT_EQ(single.value(), (std::vector<std::string>{"L1_003"}));

  Result<std::vector<std::string>> unknown = catalog->resolve("L1_001,L9_999");
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().message(),
            "'L9_999' is neither a problem id nor a suite (suites: pair)");

  Result<std::vector<std::string>> empty = catalog->resolve("");
  ASSERT_FALSE(empty.is_ok());
  EXPECT_EQ(empty.status().message(), "no problems named");
}

// ---- the real suite ------------------------------------------------------------------------

TEST(ProblemCatalogReal, LoadsTheProblemsAndTheSuites) {
  Result<ProblemCatalog> catalog = load_problem_catalog(std::string(KB_SOURCE_DIR) + "/problems");
  KB_ASSERT_OK(catalog);
  for (const auto& [id, spec] : catalog->problems) {
    EXPECT_EQ(spec->id, id);
    EXPECT_NE(spec->find_preset("full"), nullptr) << id;
    EXPECT_NE(spec->find_preset("small"), nullptr) << id;
  }

  ASSERT_EQ(catalog->suites.count("kernelbench22"), 1u);
  const std::vector<std::string>& all = catalog->suites.at("kernelbench22");
  EXPECT_EQ(all.size(), 22u);
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end())) << "kernelbench22 is in KernelBench order";
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), 22u);

  // One spec per id: the imported suite shares kernelbench22's level 1-2 specs, and every other
  // problem in the directory is an imported one of it (tools/kernelbench_suite.py).
  ASSERT_EQ(catalog->suites.count("kernelbench-l1l2"), 1u);
  const std::vector<std::string>& imported = catalog->suites.at("kernelbench-l1l2");
  const std::set<std::string> members(imported.begin(), imported.end());
  EXPECT_TRUE(std::is_sorted(imported.begin(), imported.end()));
  for (const auto& [id, spec] : catalog->problems) {
    // No upstream code in the tree: every problem names its KernelBench file instead.
    EXPECT_EQ(spec->upstream.repo, "ScalingIntelligence/KernelBench") << id;
    EXPECT_FALSE(spec->upstream.path.empty()) << id;
    if (spec->level <= 2) {
      EXPECT_EQ(members.count(id), 1u) << id << " is level 1-2";
    }
  }
  EXPECT_EQ(catalog->problems.size(), 22u + imported.size() - 19u);  // 19 shared (levels 1-2)

  ASSERT_EQ(catalog->suites.count("smoke"), 1u);
  const std::vector<std::string>& smoke = catalog->suites.at("smoke");
  EXPECT_FALSE(smoke.empty());
  for (const std::string& id : smoke) EXPECT_NE(catalog->find(id), nullptr) << id;

  Result<std::vector<std::string>> resolved = catalog->resolve("smoke");
  KB_ASSERT_OK(resolved);
  EXPECT_EQ(resolved.value(), smoke);
}

}  // namespace
}  // namespace kb
