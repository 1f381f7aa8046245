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
    auto mixed = draw_sweep_shapes(spec(id), "full", 8, 42, SweepRegime::kMixed);
    KB_ASSERT_OK(mixed);
    EXPECT_EQ(shapes->size(), 8u) << id;
    EXPECT_EQ(mixed->size(), 8u) << id;
    shapes->insert(shapes->end(), mixed->begin(), mixed->end());
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

TEST(ShapeSweepTest, TheMixedRegimeDrawsSkinnyShapes) {
  // L1_003 under full (batch 128, M 512, K 1024, N 2048): a shape is skinny when one dim is under
  // 1/8 of its full value and another in its top half.
  auto mixed = draw_sweep_shapes(spec("L1_003"), "full", 12, 7, SweepRegime::kMixed);
  auto alternate = draw_sweep_shapes(spec("L1_003"), "full", 12, 7);
  KB_ASSERT_OK(mixed);
  KB_ASSERT_OK(alternate);
  const Dims full = spec("L1_003")->find_preset("full")->dims;
  auto skinny = [&](const std::vector<SweepShape>& shapes) {
    int n = 0;
    for (const SweepShape& s : shapes) {
      bool small = false, big = false;
      for (const auto& [name, v] : s.dims) {
        small |= 8 * v < full.at(name);
        big |= 2 * v >= full.at(name);
      }
      n += small && big;
      EXPECT_FALSE(s.large) << "no mixed shape counts as drawn large";
    }
    return n;
  };
  EXPECT_EQ(mixed->size(), 12u);
  EXPECT_GE(skinny(mixed.value()), 8);
  EXPECT_EQ(draw_sweep_shapes(spec("L1_003"), "full", 12, 7, SweepRegime::kMixed)->at(3).dims,
            mixed->at(3).dims)
      << "deterministic";
  EXPECT_NE(mixed->at(1).dims, alternate->at(1).dims);
}

TEST(ShapeSweepTest, RegimesParseByName) {
  EXPECT_EQ(parse_sweep_regime("mixed").value(), SweepRegime::kMixed);
  EXPECT_EQ(parse_sweep_regime("alternate").value(), SweepRegime::kAlternate);
  EXPECT_EQ(to_string(SweepRegime::kMixed), "mixed");
  EXPECT_EQ(parse_sweep_regime("skinny").status().message(),
            "sweep regime 'skinny': expected alternate or mixed");
}

}  // namespace
}  // namespace kb
