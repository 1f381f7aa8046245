// KB_HD: a function compiled for both the host and the device under nvcc, a plain inline one
// under a host compiler, so that index math and formulas shared by kernels and their host-side
// tests are written once.
//
// Thread safety: a macro.
#pragma once

#if defined(__CUDACC__)
#define KB_HD __host__ __device__ __forceinline__
#else
#define KB_HD inline
#endif
