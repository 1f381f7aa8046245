// ParityConvTranspose3d: the Implementation that runs a transposed convolution of rank 1 to 3
// (groups 1) through the per-class parity GEMM of parity_gather3d.cuh, or through the generic
// gather of ../conv_transpose_gather where that is faster or the plan does not apply. Used by
// L1_073 for every layer but its 32 -> 32-channel one (all_classes3d.cuh).
//
// Tile choice (per layer, at setup):
// - 512-row tiles (Tiles<kMainWM, ..>, weights packed per call by pack_weights_kernel) when that
//   grid fills the GPU: more than 2 CTAs per SM, the kernel's residency.
// - Else 128-row tiles (Tiles<kSmallWM, ..>), B gathered from w in the mainloop (no pack
//   launch). Tiny layers (N 2, C_in 13, C_out 7, 11 x 5 x 39: 72 CTAs of 512 rows, 0.72x the
//   reference) were latency-bound on the few CTAs that walk all 8 taps of the 8-tap class.
// - And, where even the 128-row grid is under one resident wave (4 CTAs per SM), each tile's
//   k-tiles (taps x 16-channel chunks) split over up to resident / tiles CTAs, each storing
//   partial sums that kernels/cores/split_sum.cuh adds into y in split order (deterministic).
//   The split shortens the longest CTA (8 taps x chunks k-tiles) to `span` k-tiles.
//
// Thread safety: one ParityConvTranspose3d per thread at a time.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "common/cuda/cuda_check.h"
#include "common/cuda/device_query.h"
#include "common/status.h"
#include "kernels/cores/conv_transpose3d_tf32x3/parity_gather3d.cuh"
#include "kernels/cores/conv_transpose_gather/gather.cuh"
#include "kernels/cores/split_sum.cuh"
#include "kernels/implementation.h"

namespace kb::custom::ct3d_gather {

// Runs conv_transpose node `node` (input x_name, weight w_name) as the parity GEMM when the plan
// applies, else as the generic gather. Channel tiles of 24 when C_out <= 24, else of 32.
class ParityConvTranspose3d : public Implementation {
 public:
  ParityConvTranspose3d(const char* node, const char* x_name, const char* w_name)
      : node_{node, x_name, w_name} {}
  ParityConvTranspose3d(const ParityConvTranspose3d&) = delete;
  ParityConvTranspose3d& operator=(const ParityConvTranspose3d&) = delete;
  ~ParityConvTranspose3d() override {
    KB_CUDA_WARN(cudaFree(packed_));
    KB_CUDA_WARN(cudaFree(partial_));
  }

  Status setup(const ProblemInstance& p, cudaStream_t /*stream*/) override {
    KB_TRY(node_.bind(p));
    fast_ = small_ = false;
    splits_ = 1, span_ = 1 << 30;
    narrow_ = node_.geometry.out_channels <= Tiles<kMainWM, 3>::kN;
    const int n_width = narrow_ ? Tiles<kMainWM, 3>::kN : Tiles<kMainWM, 4>::kN;
    // The generic gather is faster here (run() takes it while fast_ is false).
    if (gather::generic_is_faster(node_.geometry, gather::tile_waste(node_.geometry, n_width, kBK)))
      return Status::ok();
    Result<Plan> main = plan_parity_gemm(node_.geometry, n_width, Tiles<kMainWM, 3>::kTileM);
    if (!main.is_ok()) return Status::ok();
    KB_ASSIGN_OR_RETURN(const int sms, cuda::sm_count());
    const int64_t main_grid = main.value().m_tiles * main.value().n_tiles * main.value().classes;
    small_ = main_grid <= int64_t{Tiles<kMainWM, 3>::kMinBlocks} * sms;
    const Result<Plan> plan =
        small_ ? plan_parity_gemm(node_.geometry, n_width, Tiles<kSmallWM, 3>::kTileM) : main;
    fast_ = plan.is_ok();
    if (!fast_) return Status::ok();
    plan_ = plan.value();
    if (small_) choose_split(sms);
    return small_ ? prepare<kSmallWM>() : prepare<kMainWM>();
  }

  Status run(const ImplArgs& args, cudaStream_t stream) override {
    const float* x = node_.input(args);
    const float* w = node_.weight(args);
    if (!fast_) return gather::launch_generic(x, w, args.output.data, node_.geometry, stream);
    if (small_) {
      GemmParams gp{plan_, x, w, args.output.data};
      gp.splits = splits_, gp.span = span_, gp.partial = partial_;
      const Status launched =
          narrow_ ? launch<kSmallWM, 3>(gp, stream) : launch<kSmallWM, 4>(gp, stream);
      if (!launched.is_ok() || splits_ == 1) return launched;
      return split_sum::launch_split_sum(partial_, args.output.data, node_.geometry.output_numel(),
                                         splits_, stream);
    }
    const int64_t pack_total = int64_t{plan_.classes} * kMaxClassTaps * plan_.k_pad() * plan_.n_pad;
    const int64_t pack_blocks = std::min<int64_t>((pack_total + 255) / 256, int64_t{1} << 16);
    pack_weights_kernel<256>
        <<<static_cast<unsigned>(pack_blocks), 256, 0, stream>>>(w, packed_, plan_);
    KB_CUDA_TRY(cudaGetLastError());
    const GemmParams gp{plan_, x, packed_, args.output.data};
    return narrow_ ? launch<kMainWM, 3>(gp, stream) : launch<kMainWM, 4>(gp, stream);
  }

 private:
  // splits_ x span_ covers the longest class's k-tiles (8 taps x chunks at k 3, stride 2) with
  // spans of >= 2 k-tiles, while tiles x splits stays within one resident wave of the
  // 128-row kernel. N 2, C_in 27, C_out 13, 9 x 3 x 29: 104 tiles, 16 k-tiles -> 4 x 4.
  void choose_split(int sms) {
    const int64_t tiles = plan_.m_tiles * plan_.n_tiles * plan_.classes;
    const int64_t resident = int64_t{Tiles<kSmallWM, 3>::kMinBlocks} * sms;
    int k_max = 0;
    for (int c = 0; c < plan_.classes; ++c)
      k_max = std::max(k_max, plan_.class_taps(c) * plan_.chunks);
    const int64_t splits = std::min<int64_t>((k_max + 1) / 2, resident / tiles);
    if (splits <= 1) return;
    span_ = static_cast<int>((k_max + splits - 1) / splits);
    splits_ = (k_max + span_ - 1) / span_;
  }

  template <int kWM>
  Status prepare() {
    if (splits_ > 1)
      KB_CUDA_TRY(cudaMalloc(&partial_, sizeof(float) * static_cast<size_t>(splits_) *
                                            static_cast<size_t>(node_.geometry.output_numel())));
    if (!small_)
      KB_CUDA_TRY(cudaMalloc(
          &packed_, static_cast<size_t>(std::max<int64_t>(plan_.b_floats, 4)) * sizeof(float)));
    return narrow_ ? allow<Tiles<kWM, 3>>() : allow<Tiles<kWM, 4>>();
  }
  template <class T>
  Status allow() {
    KB_CUDA_TRY(cudaFuncSetAttribute(parity_gemm3d_kernel<T>,
                                     cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSmemBytes));
    KB_CUDA_TRY(cudaFuncSetAttribute(parity_gemm3d_kernel<T>,
                                     cudaFuncAttributePreferredSharedMemoryCarveout,
                                     cudaSharedmemCarveoutMaxShared));
    return Status::ok();
  }
  template <int kWM, int kNT>
  Status launch(const GemmParams& gp, cudaStream_t stream) {
    using T = Tiles<kWM, kNT>;
    const int64_t blocks = plan_.m_tiles * plan_.n_tiles * plan_.classes * splits_;
    parity_gemm3d_kernel<T><<<static_cast<unsigned>(blocks), kThreads, T::kSmemBytes, stream>>>(gp);
    KB_CUDA_TRY(cudaGetLastError());
    return Status::ok();
  }

  gather::ConvTransposeNode node_;
  bool fast_ = false, narrow_ = false, small_ = false;
  Plan plan_;
  int splits_ = 1, span_ = 1 << 30;  // GemmParams::splits / span
  float* packed_ = nullptr;          // (b_floats) for the 512-row tiles
  float* partial_ = nullptr;         // (splits, |y|) where splits_ > 1
};

}  // namespace kb::custom::ct3d_gather
