// The hard physical floor's table and formula (common/physical_floor.h).
#include "common/physical_floor.h"

#include <gtest/gtest.h>

namespace kb {
namespace {

TEST(PhysicalFloor, H200IsItsNominalBandwidthAndAThirdOfItsTf32Peak) {
  const PhysicalPeaks p = nominal_peaks("NVIDIA H200", 132);
  EXPECT_DOUBLE_EQ(p.dram_bytes_per_s, 4.8e12);
  EXPECT_DOUBLE_EQ(p.math_flops, 494.7e12 / 3);
  EXPECT_NE(p.source.find("H200"), std::string::npos);
}

TEST(PhysicalFloor, AnH100PcieIsNotTakenForAnSxmPart) {
  EXPECT_DOUBLE_EQ(nominal_peaks("NVIDIA H100 PCIe", 114).dram_bytes_per_s, 2.0e12);
  EXPECT_DOUBLE_EQ(nominal_peaks("NVIDIA H100 80GB HBM3", 132).dram_bytes_per_s, 3.35e12);
}

// An unknown GPU must not get a floor above the truth: its rates exceed every known part's.
TEST(PhysicalFloor, AnUnknownGpuGetsRatesAboveEveryKnownPart) {
  const PhysicalPeaks unknown = nominal_peaks("Some Future GPU", 132);
  const PhysicalPeaks h200 = nominal_peaks("NVIDIA H200", 132);
  EXPECT_GT(unknown.dram_bytes_per_s, h200.dram_bytes_per_s);
  EXPECT_GT(unknown.math_flops, h200.math_flops);
  EXPECT_NE(unknown.source.find("unknown GPU"), std::string::npos);
}

TEST(PhysicalFloor, TheFloorIsTheSlowerOfBytesAndFlops) {
  const PhysicalPeaks p{1e12, 1e14, "test"};
  EXPECT_DOUBLE_EQ(hard_floor_ms(2e9, 1e10, p), 2.0);  // 2 ms of bytes, 0.1 ms of math
  EXPECT_DOUBLE_EQ(hard_floor_ms(1e6, 5e11, p), 5.0);  // math-bound
  EXPECT_DOUBLE_EQ(hard_floor_ms(2e9, 1e10, PhysicalPeaks{}), 0.0);  // no floor
}

}  // namespace
}  // namespace kb
