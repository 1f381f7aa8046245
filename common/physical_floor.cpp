#include "common/physical_floor.h"

#include <algorithm>
#include <array>

namespace kb {
namespace {

struct Row {
  const char* name_part;  // matched against the device name, first match wins
  double dram_bytes_per_s;
  double tf32_dense_flops;  // dense TF32 tensor-core peak (datasheet, without sparsity)
};

// Nominal datasheet figures. More specific names first (an "H100 PCIe" is not an SXM H100).
constexpr std::array<Row, 6> kTable = {{
    {"H200", 4.8e12, 494.7e12},
    {"H100 PCIe", 2.0e12, 378e12},
    {"H100 NVL", 3.9e12, 417.5e12},
    {"H100", 3.35e12, 494.7e12},
    {"A100", 2.039e12, 156e12},
    {"L40S", 0.864e12, 183e12},
}};

// Unknown GPUs: beyond any part we know (a B200's 8 TB/s; 7.6 TFLOP/s of dense TF32 per SM), so
// that the floor stays below the truth.
constexpr double kFallbackBytesPerS = 8e12;
constexpr double kFallbackTf32PerSm = 7.6e12;

}  // namespace

PhysicalPeaks nominal_peaks(const std::string& gpu_name, int sm_count) {
  for (const Row& row : kTable) {
    if (gpu_name.find(row.name_part) != std::string::npos) {
      return {row.dram_bytes_per_s, row.tf32_dense_flops / 3,
              std::string("nominal ") + row.name_part + " datasheet (peak DRAM; dense TF32 / 3)"};
    }
  }
  return {kFallbackBytesPerS, std::max(1, sm_count) * kFallbackTf32PerSm / 3,
          "unknown GPU: fallback above any known part (8 TB/s; 7.6 TFLOP/s TF32 per SM / 3)"};
}

double hard_floor_ms(double min_bytes, double flops, const PhysicalPeaks& peaks) {
  if (peaks.dram_bytes_per_s <= 0 || peaks.math_flops <= 0) return 0;
  return 1e3 * std::max(min_bytes / peaks.dram_bytes_per_s, flops / peaks.math_flops);
}

}  // namespace kb
