/* The kernel pack's C ABI, version 1.
 *
 * A kernel pack is a shared library holding, for every problem of the suite, its implementations:
 * `reference` (strict fp32, cuDNN/cuBLAS, as PyTorch eager), `custom` (our fused kernels, when
 * present) and the CPU pair `cpu_golden` / `cpu_fp32` (the golden model in double, and the same
 * algorithm in float, on host memory). A worker dlopen()s a pack, calls kb_pack_v1() and talks to
 * it only through this table, so one long-running worker can benchmark packs built from any
 * commit. C only: no C++ type crosses this boundary.
 *
 * Memory: tensors are dense, row-major fp32; device pointers for the GPU variants, host pointers
 * for the CPU variants. The pack never frees what the caller passes. Error text is written into
 * the caller's buffer (always NUL-terminated).
 * Thread safety: an instance is used by one thread at a time; create/destroy are thread-safe.
 */
#ifndef KBFLEET_KERNELS_PACK_ABI_H_
#define KBFLEET_KERNELS_PACK_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KB_PACK_ABI_VERSION 1u
#define KB_PACK_MAX_RANK 8

typedef enum {
  KB_PACK_OK = 0,
  KB_PACK_ERROR = 1,            /* runtime failure; the message says what */
  KB_PACK_NOT_IMPLEMENTED = 2,  /* the pack has no such variant for this problem */
  KB_PACK_UNSUPPORTED = 3,      /* the variant cannot handle these shapes */
} kb_pack_status_v1;

typedef enum {
  KB_VARIANT_REFERENCE = 0,
  KB_VARIANT_CUSTOM = 1,
  KB_VARIANT_CPU_GOLDEN = 2,
  KB_VARIANT_CPU_FP32 = 3,
} kb_variant_v1;

typedef struct {
  float* data;
  int32_t rank;
  int64_t shape[KB_PACK_MAX_RANK];
} kb_tensor_v1;

typedef struct {
  const char* name;
  int64_t value;
} kb_dim_v1;

typedef struct kb_instance_v1 kb_instance_v1; /* opaque */

typedef struct {
  uint32_t abi_version; /* KB_PACK_ABI_VERSION */
  const char* kbfleet_version;
  const char* commit;     /* git commit the pack was built from ("unknown" outside git) */
  const char* build_info; /* compiler, CUDA version and architectures */

  /* The problem table: the ids of every problem the pack holds an implementation of. */
  int32_t (*problem_count)(void);
  const char* (*problem_id)(int32_t index); /* NULL when index is out of range */

  /* 1 when the pack holds `variant` for `problem_id`, else 0. */
  int (*has_variant)(const char* problem_id, int32_t variant);

  /* Creates an instance of `variant` of the problem described by `spec_yaml` (the problem's spec
   * document, validated again inside the pack) with its dims bound to `dims`. GPU variants plan
   * on `stream` (a cudaStream_t; NULL for CPU variants). */
  int32_t (*create)(const char* spec_yaml, const char* spec_file, const kb_dim_v1* dims,
                    int32_t num_dims, int32_t variant, void* stream, kb_instance_v1** out,
                    char* error, size_t error_len);

  /* output = f(inputs, params), inputs and params in spec order. GPU variants enqueue on
   * `stream` and return without synchronizing. */
  int32_t (*run)(kb_instance_v1* instance, const kb_tensor_v1* inputs, int32_t num_inputs,
                 const kb_tensor_v1* params, int32_t num_params, const kb_tensor_v1* output,
                 void* stream, char* error, size_t error_len);

  void (*destroy)(kb_instance_v1* instance);
} kb_pack_v1_t;

/* The pack's entry point; the returned table lives as long as the library is loaded. */
const kb_pack_v1_t* kb_pack_v1(void);
typedef const kb_pack_v1_t* (*kb_pack_v1_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* KBFLEET_KERNELS_PACK_ABI_H_ */
