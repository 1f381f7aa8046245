// KB_HD: a function compiled for both the host and the device under nvcc, a plain inline one
// under a host compiler, so that index math and formulas shared by kernels and their host-side
// tests are written once. KB_UNROLL / KB_UNROLL_BY(n): `#pragma unroll` / `#pragma unroll n` in
// nvcc's device pass, nothing for a host compiler (which would warn of an unknown pragma).
//
// Thread safety: a macro.
#pragma once

#if defined(__CUDACC__)
#define KB_HD __host__ __device__ __forceinline__
#else
#define KB_HD inline
#endif

#define KB_PRAGMA(text) _Pragma(#text)
#if defined(__CUDA_ARCH__)  // nvcc's device pass (its host pass would warn too)
#define KB_UNROLL _Pragma("unroll")
#define KB_UNROLL_BY(n) KB_PRAGMA(unroll n)
#else
#define KB_UNROLL
#define KB_UNROLL_BY(n)
#endif
