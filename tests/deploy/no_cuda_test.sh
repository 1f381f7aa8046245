#!/usr/bin/env bash
# kb, kb-worker and kb-coordinator load no CUDA library: no libcuda, libcudart, libcupti, libcudnn,
# libcublas or libnvrtc among the libraries the dynamic loader resolves for them (ldd), and no
# CUDA runtime symbol in their own dynamic symbol tables. Only kb-executor and the kernel packs
# may (executor/CMakeLists.txt). A host without a GPU driver can then run them, and a CUDA fault
# can only take down a one-job kb-executor child.
#
# usage: no_cuda_test.sh PROGRAM...
set -euo pipefail
status=0
for prog in "$@"; do
  [[ -x $prog ]] || { echo "no_cuda_test: $prog is not built" >&2; exit 1; }
  cuda_libs=$(ldd "$prog" | awk '$1 ~ /^lib(cuda|cudart|cupti|cudnn|cublas|cublasLt|nvrtc|nvidia-ml)[.-]/ {print $1}')
  cuda_syms=$(nm -D --undefined-only "$prog" | awk '$2 ~ /^(cuda|cu|cudnn|cublas|cupti)[A-Z]/ {print $2}' | head -5)
  if [[ -n $cuda_libs || -n $cuda_syms ]]; then
    echo "no_cuda_test: $(basename "$prog") loads CUDA: ${cuda_libs//$'\n'/ } ${cuda_syms//$'\n'/ }" >&2
    status=1
  else
    echo "no_cuda_test: $(basename "$prog"): no CUDA library, no CUDA symbol"
  fi
done
exit $status
