// The hard physical floor of a problem on a GPU: no correct kernel can finish faster than its
// minimum bytes at the GPU's nominal peak DRAM bandwidth, nor its FLOPs at the fastest math the
// tolerance allows — 3xTF32 on tensor cores (three TF32 products per fp32 product, so a third of
// the dense TF32 tensor-core peak), not fp32 FMA. A custom median below the floor is
// `implausible`: the kernel skipped work, or the timing missed some of it.
//
// The fp32 roofline of the result (JobResult::floor_ms: fp32 FMA and measured copy bandwidth) is
// a different figure: a goal for kernels, which a kernel may beat with tensor cores.
//
// The rates are nominal datasheet figures from a small table by GPU name; an unknown GPU gets
// deliberately high rates (a low floor), so that the floor never condemns an honest kernel.
//
// Thread safety: pure functions.
#pragma once

#include <string>

namespace kb {

struct PhysicalPeaks {
  double dram_bytes_per_s = 0;  // 0: no floor
  double math_flops = 0;        // 3xTF32 tensor-core FLOP/s
  std::string source;           // which table row, for the result's environment
};

// `gpu_name` as cudaDeviceProp::name reports it ("NVIDIA H200"); `sm_count` scales the fallback.
PhysicalPeaks nominal_peaks(const std::string& gpu_name, int sm_count);

// max(min_bytes / bandwidth, flops / math) in milliseconds; 0 when the peaks are 0.
double hard_floor_ms(double min_bytes, double flops, const PhysicalPeaks& peaks);

}  // namespace kb
