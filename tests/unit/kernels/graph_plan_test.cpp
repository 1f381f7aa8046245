// The buffer plan shared by both graph interpreters: every intermediate dies after its last
// reader, a reshape is a view of its input, the output lives in the caller's buffer.
#include "kernels/graph/graph_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "common/spec_loader.h"
#include "tests/support/assert_ok.h"
#include "tests/support/probe_specs.h"

namespace kb::graph {
namespace {

bool released_after(const GraphPlan& plan, size_t node, const std::string& tensor) {
  const auto& list = plan.release_after.at(node);
  return std::find(list.begin(), list.end(), plan.storage_of.at(tensor)) != list.end();
}

TEST(GraphPlan, AnIntermediateIsReleasedAfterItsLastReader) {
  const GraphPlan plan = plan_graph(testing::probe_instance(testing::kChainSpec));
  EXPECT_TRUE(released_after(plan, 1, "a"));  // read by `sum`, nobody after
  EXPECT_FALSE(released_after(plan, 0, "a"));
  EXPECT_EQ(plan.storages[plan.storage_of.at("a")].last_use, 1);
}

TEST(GraphPlan, AReshapeIsAViewThatKeepsItsStorageAliveUntilTheViewsLastReader) {
  const GraphPlan plan = plan_graph(testing::probe_instance(testing::kChainSpec));
  EXPECT_EQ(plan.storage_of.at("v"), plan.storage_of.at("b"));
  EXPECT_FALSE(released_after(plan, 2, "b"));
  EXPECT_TRUE(released_after(plan, 3, "b"));  // `squash` reads the view
}

TEST(GraphPlan, InputsAndTheOutputAreNeverReleased) {
  const GraphPlan plan = plan_graph(testing::probe_instance(testing::kChainSpec));
  EXPECT_EQ(plan.storages[plan.storage_of.at("x")].kind, StorageKind::kInput);
  EXPECT_EQ(plan.storages[plan.storage_of.at("out")].kind, StorageKind::kOutput);
  for (const auto& list : plan.release_after) {
    for (size_t s : list) EXPECT_EQ(plan.storages[s].kind, StorageKind::kIntermediate);
  }
  EXPECT_FALSE(plan.output_aliases_external);
}

TEST(GraphPlan, AnOutputThatViewsAnInputIsFlaggedForACopy) {
  const GraphPlan plan = plan_graph(testing::probe_instance(testing::kViewOnlySpec));
  EXPECT_TRUE(plan.output_aliases_external);
  EXPECT_EQ(plan.storage_of.at("out"), plan.storage_of.at("x"));
}

TEST(GraphPlan, ASuiteGraphFreesTheAttentionTokensAfterTheResidualAdd) {
  auto catalog = load_problem_catalog(default_problems_dir());
  KB_ASSERT_OK(catalog);
  const ProblemInstance p = ProblemInstance::create(catalog->problems.at("L3_031"), "odd").value();
  const GraphPlan plan = plan_graph(p);
  // view, permute, attn, residual, norm, permute_back, view_back: tokens are last read by `residual`.
  EXPECT_TRUE(released_after(plan, 3, "tokens"));
  // The last permute writes the output buffer directly; the final reshape is a view of it.
  EXPECT_EQ(plan.storages[plan.storage_of.at("channels_first")].kind, StorageKind::kOutput);
}

}  // namespace
}  // namespace kb::graph
