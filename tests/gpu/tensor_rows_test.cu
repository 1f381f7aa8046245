// kernels/cores/conv_transpose_gather/tensor_rows.cuh: plan_tensor_rows's layout invariants over
// many geometries (host arithmetic: the pitches' bank residues, the windows inside the staged x,
// the output rows covering every computed position, the lead), and which path each L1_075 preset
// takes (the GPU tests of the tensor rows are only as good as the presets that reach them).
// tools/emulate_tensor_rows.py models the kernel's index maps lane by lane.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cores/conv_transpose_gather/tensor_rows.cuh"
#include "tests/gpu/problem_cases.h"

namespace kb {
namespace {

using custom::gather::ConvTransposeGeometry;

// A 2-D layer with L1_075's column taps (5, 3, 1) and the given rows, channels and paddings.
ConvTransposeGeometry layer(int64_t cin_g, int64_t cout_g, int64_t groups, int64_t h, int64_t w,
                            int64_t pad_w, int64_t out_pad_w, int64_t stride_h, int64_t dil_h) {
  ConvTransposeGeometry g;
  g.rank = 2;
  g.batch = 2, g.groups = groups;
  g.in_channels = cin_g * groups, g.out_channels = cout_g * groups;
  g.in[1] = h, g.in[2] = w;
  g.kernel[1] = 3, g.kernel[2] = 5;
  g.stride[1] = stride_h, g.stride[2] = 3;
  g.dilation[1] = dil_h, g.dilation[2] = 1;
  g.padding[1] = 1, g.padding[2] = pad_w;
  g.out[1] = (h - 1) * stride_h - 2 + dil_h * 2 + 1;
  g.out[2] = (w - 1) * 3 - 2 * pad_w + 4 + out_pad_w + 1;
  return g;
}

TEST(TensorRowsPlan, LayoutInvariantsHoldOverGeometries) {
  constexpr int64_t kSmem = 227 * 1024;
  int planned = 0;
  for (int64_t cin_g : {1, 5, 8, 9, 32})
    for (int64_t cout_g : {3, 16, 44})
      for (int64_t w : {1, 3, 7, 61, 256, 300})
        for (int64_t pad_w : {0, 2, 5, 7, 9})
          for (int64_t out_pad : {0, 2})
            for (int64_t stride_h : {1, 2}) {
              const ConvTransposeGeometry g =
                  layer(cin_g, cout_g, 4, 9, w, pad_w, out_pad, stride_h, 2);
              if (g.out[2] < 1) continue;
              const std::string at = "cin_g " + std::to_string(cin_g) + " cout_g " +
                                     std::to_string(cout_g) + " W " + std::to_string(w) +
                                     " pad_w " + std::to_string(pad_w) + " out_pad " +
                                     std::to_string(out_pad);
              auto plan = custom::gather::plan_tensor_rows<5, 3, 1>(g, kSmem);
              if (!plan.is_ok()) {  // only rows of >= 256 positions x 32 channels outgrow it
                EXPECT_TRUE(cin_g == 32 && w >= 256) << at << ": " << plan.status().message();
                continue;
              }
              ++planned;
              const custom::gather::TensorRowParams& tp = plan.value().params;
              const custom::gather::RowGatherParams& p = tp.rows;
              const int lead = plan.value().lead;
              EXPECT_EQ(tp.iw_base % 4, 0) << at;
              EXPECT_TRUE(lead >= 0 && lead < custom::gather::kTensorLeads) << at;
              EXPECT_EQ(tp.iw_base + lead, p.q_min - 1) << at;  // window column 0 = qw - 1
              EXPECT_EQ(tp.x_pitch % 32, 8) << at;
              EXPECT_EQ(p.z_stride % 32, 4) << at;
              EXPECT_GE(tp.items * custom::gather::kTensorItemQ, p.q_count) << at;
              // The last lane's two 16-byte window loads stay inside its staged row.
              const int loads = (lead + custom::gather::kTensorTiles + 1 + 3) / 4;
              EXPECT_LE(custom::gather::kTensorItemQ * (tp.items - 1) + 28 + 4 * loads, tp.x_pitch)
                  << at;
              // Every computed output, margin and 16-byte phase included, lands inside its row.
              const int64_t last =
                  (p.q_min + int64_t{custom::gather::kTensorItemQ} * tp.items) * 3 - 1 - p.pad_w;
              EXPECT_LT(custom::gather::kZMargin<3> + 3 + last, p.z_stride) << at;
              EXPECT_GE(custom::gather::kZMargin<3> + p.q_min * 3 - p.pad_w, 0) << at;
              // The output rows alias the staged x only when one round of items covers the row.
              EXPECT_EQ(tp.z_offset == 0, tp.items <= custom::gather::kRowWarps) << at;
              EXPECT_LE(plan.value().smem_bytes, static_cast<size_t>(kSmem)) << at;
            }
  EXPECT_EQ(planned, 1422);  // of 1,800 (the rest: no output, or too wide for shared memory)
}

TEST(TensorRowsPlan, RefusesWhatItCannotRun) {
  EXPECT_FALSE(
      (custom::gather::plan_tensor_rows<5, 3, 1>(layer(33, 16, 1, 9, 64, 2, 0, 2, 2), 227 * 1024)
           .is_ok()));
  EXPECT_FALSE(
      (custom::gather::plan_tensor_rows<5, 3, 1>(layer(8, 16, 4, 9, 64, 2, 0, 2, 2), 16 * 1024)
           .is_ok()));
  ConvTransposeGeometry other_taps = layer(8, 16, 4, 9, 64, 2, 0, 2, 2);
  other_taps.stride[2] = 2;
  EXPECT_FALSE((custom::gather::plan_tensor_rows<5, 3, 1>(other_taps, 227 * 1024).is_ok()));
}

// full, robust, ragged and wide (> 8 M multiply-adds) run the tensor rows; small and odd do not.
TEST(TensorRows, L1_075PresetsTakeTheIntendedPath) {
  const auto& spec = gpu_test::catalog().problems.at("L1_075");
  int checked = 0;
  for (const Preset& preset : spec->presets) {
    ProblemInstance p = ProblemInstance::create(spec, preset.dims).value();
    custom::gather::TensorRowConvTranspose<5, 3, 1> impl("conv_transpose2d", "x",
                                                         "conv_transpose2d.weight");
    ASSERT_TRUE(impl.setup(p, nullptr).is_ok()) << preset.name;
    const bool expect_tensor = preset.name != "small" && preset.name != "odd";
    EXPECT_EQ(impl.uses_tensor_rows(), expect_tensor) << preset.name;
    ++checked;
  }
  EXPECT_EQ(checked, 6);
}

}  // namespace
}  // namespace kb
