// The Hopper warpgroup MMA (wgmma, sm_90a) for the 3xTF32 kernels: shared-memory matrix
// descriptors of K-major operand tiles (128-byte swizzled, or plain 8 x 16-byte core matrices),
// the m64n256k8 and m64n128k8 TF32 MMAs with both operands in shared memory, the m64n64k8 one
// with A from registers, and the warpgroup's fence / commit / wait. Their users: the GEMM
// mainloop wgmma_gemm.cuh (L1_003), the 3x3 conv cores (conv3x3_wgmma/, conv2d_tf32x3/,
// conv2d_pool_tf32x3/) and conv_transpose3d_tf32x3/wgmma_classes3d.cuh (L1_073).
//
// Compiled only where the compiler targets sm_90a (__CUDA_ARCH_FEAT_SM90_ALL): other targets get
// the declarations with bodies that trap, so a translation unit compiled for sm_90 and sm_90a at
// once builds, and its host code asks which one was loaded (loaded_here) before launching any.
//
// Operand layout (PTX ISA, "Shared memory matrix layout", K-major, 128-byte swizzle): a tile of
// R rows x 32 fp32 k, row r at byte 128 r, its 16-byte chunk c at chunk c ^ (r & 7); 8 rows (1,024
// bytes, 1,024-aligned) form one swizzle atom, atoms stacked along the rows (stride 1,024 bytes).
// The k8 step s of an instruction starts 32 s bytes into the row: the hardware applies the swizzle
// to the absolute address, so the descriptor's start address moves by 32 s bytes.
//
// Thread safety: device functions without state.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KB_WGMMA_ENABLED 1
#else
#define KB_WGMMA_ENABLED 0
#endif

// The 128 accumulators of an m64n256 fragment `d` as read-write asm operands %0..%127 (the MMA
// and the wait both name them: the compiler keeps them live and in place across the wait).
#define KB_WGMMA_ACC128(d) KB_WGMMA_ACC64(d), KB_WGMMA_ACC64((d + 64))

// The 64 accumulators of an m64n128 fragment `d`, likewise.
#define KB_WGMMA_ACC64(d) KB_WGMMA_ACC32(d), KB_WGMMA_ACC32((d + 32))

// The 32 accumulators of an m64n64 fragment `d`, likewise.
#define KB_WGMMA_ACC32(d)                                                                         \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),    \
      "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),  \
      "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),  \
      "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

namespace kb::tf32x3::wgmma {

constexpr int kSwizzleRowFloats = 32;    // one 128-byte row of the swizzled layout
constexpr int kSwizzleAtomBytes = 1024;  // 8 rows

// The float index of (row, k) in a K-major 128-byte-swizzled tile (k < 32).
__host__ __device__ constexpr int swizzled_index(int row, int k) {
  return row * kSwizzleRowFloats + ((((k >> 2) ^ (row & 7)) << 2) | (k & 3));
}
static_assert(swizzled_index(0, 5) == 5 && swizzled_index(1, 0) == 36 &&
                  swizzled_index(9, 31) == 9 * 32 + 24 + 3,
              "chunk c of row r at chunk c ^ (r & 7)");

// The descriptor of a K-major 128-byte-swizzled tile at `tile` (its first row 1,024-aligned, plus
// 32 s bytes for k8 step s): start address >> 4 (bits 0-13), leading offset unused by swizzled
// K-major layouts (1), stride between 8-row atoms >> 4 (bits 32-45), swizzle mode 128 B (bits
// 62-63 = 1).
__device__ __forceinline__ uint64_t swizzled_descriptor(const float* tile) {
  const auto addr = static_cast<uint32_t>(__cvta_generic_to_shared(tile));
  return uint64_t{(addr & 0x3ffffu) >> 4} | (uint64_t{1} << 16) |
         (uint64_t{kSwizzleAtomBytes >> 4} << 32) | (uint64_t{1} << 62);
}

// The descriptor of a K-major tile without swizzle at `tile` (16-byte aligned): core matrices of
// 8 rows x 16 bytes (4 fp32 k) stored as 128 contiguous bytes; k_stride_bytes from one core
// matrix to the next along K (the leading offset), row_stride_bytes from one 8-row group to the
// next along M / N (the stride offset); swizzle mode 0.
__device__ __forceinline__ uint64_t plain_descriptor(const float* tile, uint32_t k_stride_bytes,
                                                     uint32_t row_stride_bytes) {
  const auto addr = static_cast<uint32_t>(__cvta_generic_to_shared(tile));
  return uint64_t{(addr & 0x3ffffu) >> 4} | (uint64_t{(k_stride_bytes >> 4) & 0x3fffu} << 16) |
         (uint64_t{(row_stride_bytes >> 4) & 0x3fffu} << 32);
}

// Whether the loaded code of the including translation unit is its sm_90a build: a fat binary
// with sm_90 and sm_90a code may load either, and only the latter has wgmma. One kernel per
// translation unit (static), launched once by loaded_here().
static __global__ void probe_kernel(int* loaded) {
  *loaded = KB_WGMMA_ENABLED;
}
static inline cudaError_t loaded_here(bool* loaded) {
  int* flag = nullptr;
  cudaError_t err = cudaMalloc(&flag, sizeof(int));
  if (err != cudaSuccess) return err;
  probe_kernel<<<1, 1>>>(flag);
  int value = 0;
  err = cudaGetLastError();
  if (err == cudaSuccess) err = cudaMemcpy(&value, flag, sizeof(int), cudaMemcpyDeviceToHost);
  const cudaError_t freed = cudaFree(flag);
  *loaded = value == 1;
  return err != cudaSuccess ? err : freed;
}

// Orders this thread's earlier register writes (the accumulators) before the next wgmma.
__device__ __forceinline__ void fence() {
#if KB_WGMMA_ENABLED
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#else
  __trap();
#endif
}

// Closes the wgmmas issued since the last commit into one group.
__device__ __forceinline__ void commit_group() {
#if KB_WGMMA_ENABLED
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#else
  __trap();
#endif
}

// Waits until at most kPending of this warpgroup's committed groups are still running.
template <int kPending>
__device__ __forceinline__ void wait_group(float (&d)[128]) {
#if KB_WGMMA_ENABLED
  asm volatile("wgmma.wait_group.sync.aligned %128;"
               : KB_WGMMA_ACC128(d)
               : "n"(kPending)
               : "memory");
#else
  (void)d;
  __trap();
#endif
}

// The same for a kernel whose wgmmas write 64 accumulators.
template <int kPending>
__device__ __forceinline__ void wait_group(float (&d)[64]) {
#if KB_WGMMA_ENABLED
  asm volatile("wgmma.wait_group.sync.aligned %64;" : KB_WGMMA_ACC64(d) : "n"(kPending) : "memory");
#else
  (void)d;
  __trap();
#endif
}

// The same for a kernel whose wgmmas write 32 accumulators.
template <int kPending>
__device__ __forceinline__ void wait_group(float (&d)[32]) {
#if KB_WGMMA_ENABLED
  asm volatile("wgmma.wait_group.sync.aligned %32;" : KB_WGMMA_ACC32(d) : "n"(kPending) : "memory");
#else
  (void)d;
  __trap();
#endif
}

// Makes this thread's ordinary shared-memory stores visible to the async proxy (wgmma operands);
// a barrier after it publishes them to the warpgroups.
__device__ __forceinline__ void fence_operand_stores() {
#if KB_WGMMA_ENABLED
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#else
  __trap();
#endif
}

// d += a * b for one warpgroup: a 64 x 8 (descriptor a), b 256 x 8 K-major (descriptor b), d 64 x
// 256 fp32 in the accumulator fragment (thread t of the warpgroup: warp w = t / 32 holds rows 16 w
// + (t % 32) / 4 and + 8; d[4 i + j] is column 8 i + 2 (t % 4) + (j & 1) of row + 8 (j >> 1)).
// TF32 operands: the 13 low bits of each fp32 are ignored.
__device__ __forceinline__ void mma_m64n256k8(float (&d)[128], uint64_t a, uint64_t b) {
#if KB_WGMMA_ENABLED
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, "
      "%127"
      "}, %128, %129, p, 1, 1;\n}"
      : KB_WGMMA_ACC128(d)
      : "l"(a), "l"(b), "r"(1));  // scale-d 1: d += a * b
#else
  (void)d, (void)a, (void)b;
  __trap();
#endif
}

// d = a * b + (accumulate ? d : 0) for one warpgroup: a 64 x 8, b 128 x 8 K-major, d 64 x 128
// fp32 (the fragment of mma_m64n256k8 over 128 columns: d[4 i + j] is column 8 i + 2 (t % 4) +
// (j & 1)). accumulate false starts a sum without writing d first (no register write between
// two wgmmas on d, which would make ptxas wait for the pending ones).
__device__ __forceinline__ void mma_m64n128k8(float (&d)[64], uint64_t a, uint64_t b,
                                              bool accumulate = true) {
#if KB_WGMMA_ENABLED
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p, 1, 1;\n}"
      : KB_WGMMA_ACC64(d)
      : "l"(a), "l"(b), "r"(accumulate ? 1 : 0));
#else
  (void)d, (void)a, (void)b, (void)accumulate;
  __trap();
#endif
}

// d = a * b + (accumulate ? d : 0) for one warpgroup, A from registers: a is this thread's
// fragment of the 64 x 8 TF32 A (warp w = t / 32 % 4 holds rows 16 w .. 16 w + 15; with g = (t %
// 32) / 4 and c = t % 4: a[0] = (row g, k c), a[1] = (g + 8, c), a[2] = (g, c + 4), a[3] = (g + 8,
// c + 4), as mma.sync's m16n8k8 A), b a 64 x 8 K-major tile (descriptor), d 64 x 64 fp32 (the
// fragment of mma_m64n256k8 over 64 columns). The wgmma reads a asynchronously: the registers
// stay unchanged until a wait_group covers it (ptxas keeps them live or serializes, warning).
__device__ __forceinline__ void mma_m64n64k8_rs(float (&d)[32], const uint32_t (&a)[4], uint64_t b,
                                                bool accumulate = true) {
#if KB_WGMMA_ENABLED
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}"
      : KB_WGMMA_ACC32(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate ? 1 : 0));
#else
  (void)d, (void)a, (void)b, (void)accumulate;
  __trap();
#endif
}

}  // namespace kb::tf32x3::wgmma
