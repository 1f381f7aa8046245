#!/usr/bin/env bash
# The test command (README): configure and build (CUDA code included whenever nvcc is found,
# compile-only without a GPU), then run every test through CTest. GPU tests (label `gpu`) skip
# cleanly without a GPU.
#
# usage: tools/test.sh [BUILD_DIR]     (default: build)
# env:   KB_WERROR=ON to treat warnings as errors (CI), CTEST_ARGS for extra ctest flags.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
jobs=$(nproc)

cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKB_WERROR="${KB_WERROR:-OFF}"
cmake --build "$build" -j "$jobs"
ctest --test-dir "$build" --output-on-failure -j "$jobs" ${CTEST_ARGS:-}
