// The sweep's shapes: valid for their spec, within the full preset's cost, odd where a size is
// free, channel counts no tile of 8 divides where the spec allows, and reproducible by seed.
#include "common/shape_sweep.h"

#include <gtest/gtest.h>

#include <set>

#include "common/install_paths.h"
#include "common/spec_loader.h"
#include "tests/support/assert_ok.h"

namespace kb {
namespace {

const ProblemCatalog& catalog() {
  static const ProblemCatalog kCatalog = load_problem_catalog(default_problems_dir()).value();
  return kCatalog;
}

std::shared_ptr<const ProblemSpec> spec(const std::string& id) {
  return catalog().problems.at(id);
}

TEST(ShapeSweepTest, EveryShapeOfEverySuiteProblemIsValidAndNoCostlierThanTheFullPreset) {
  for (const std::string& id : catalog().suites.at("kernelbench22")) {
    auto shapes = draw_sweep_shapes(spec(id), "full", 8, 42);
    KB_ASSERT_OK(shapes);
    EXPECT_EQ(shapes->size(), 8u) << id;
    const Cost full = ProblemInstance::create(spec(id), "full").value().cost();
    for (const SweepShape& s : shapes.value()) {
      auto inst = ProblemInstance::create(spec(id), s.dims);
      KB_ASSERT_OK(inst);
      EXPECT_LE(inst->cost().flops, full.flops) << id;
      EXPECT_LE(inst->cost().min_bytes, full.min_bytes) << id;
      EXPECT_NEAR(s.flop_share, inst->cost().flops / full.flops, 1e-12) << id;
    }
  }
}

TEST(ShapeSweepTest, SizesAreOddBatchesReachOneAndChannelsAvoidMultiplesOfEight) {
  auto shapes = draw_sweep_shapes(spec("L2_060"), "full", 40, 7);  // C_out: GroupNorm(4) divides it
  KB_ASSERT_OK(shapes);
  std::set<int64_t> batches;
  for (const SweepShape& s : shapes.value()) {
    for (const char* size : {"D", "H", "W"}) EXPECT_EQ(s.dims.at(size) % 2, 1) << size;
    EXPECT_NE(s.dims.at("C_in") % 8, 0);
    EXPECT_NE(s.dims.at("C_out") % 8, 0);
    EXPECT_EQ(s.dims.at("C_out") % 4, 0);
    batches.insert(s.dims.at("N"));
  }
  EXPECT_EQ(*batches.begin(), 1);
  EXPECT_GT(batches.size(), 5u);
}

TEST(ShapeSweepTest, ChannelsTheSpecTiesToMultiplesOfEightStillGetDrawn) {
  auto shapes = draw_sweep_shapes(spec("L2_021"), "full", 6, 3);  // GroupNorm(8 groups) over C_out
  KB_ASSERT_OK(shapes);
  EXPECT_EQ(shapes->size(), 6u);
  for (const SweepShape& s : shapes.value()) EXPECT_EQ(s.dims.at("C_out") % 8, 0);
}

TEST(ShapeSweepTest, TheSameSeedDrawsTheSameShapesAndHalfAreLarge) {
  auto a = draw_sweep_shapes(spec("L1_003"), "full", 6, 11),
       b = draw_sweep_shapes(spec("L1_003"), "full", 6, 11);
  auto c = draw_sweep_shapes(spec("L1_003"), "full", 6, 12);
  KB_ASSERT_OK(a);
  KB_ASSERT_OK(c);
  int large = 0;
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ(a.value()[i].dims, b.value()[i].dims);
    large += a.value()[i].large;
  }
  EXPECT_EQ(large, 3);
  EXPECT_NE(a.value()[0].dims, c.value()[0].dims);
  EXPECT_EQ(dims_argument(*spec("L1_003"), a.value()[0].dims).rfind("batch=", 0), 0u);
}

}  // namespace
}  // namespace kb
