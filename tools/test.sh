#!/usr/bin/env bash
# The test command (README): configure and build (CUDA code included whenever nvcc is found,
# compile-only without a GPU), then run every test through CTest. GPU tests (label `gpu`) skip
# cleanly without a GPU; the throughput and latency thresholds (label `perf`) run last, apart.
#
# usage: tools/test.sh [--build-only] [BUILD_DIR]     (default: build; --build-only: configure and
#        build, no tests)
# env:   KB_WERROR=ON to treat warnings as errors (CI), CTEST_ARGS for extra ctest flags,
#        KB_TEST_PG_URL: an admin URL of a PostgreSQL server for the store's tests. When unset and
#        PostgreSQL is installed, a throwaway cluster (tools/pg-local.sh) serves the run and is
#        removed afterwards; without either, those tests skip.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build_only=false
if [[ ${1:-} == --build-only ]]; then build_only=true; shift; fi
build=${1:-$repo/build}
jobs=$(nproc)

cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKB_WERROR="${KB_WERROR:-OFF}"
cmake --build "$build" -j "$jobs"
$build_only && exit 0

source "$repo/tools/test-pg.bash"
test_pg_ensure "$repo"

# Throughput and latency thresholds (label `perf`) last and reported apart; both runs must pass.
status=0
ctest --test-dir "$build" --output-on-failure -j "$jobs" -LE perf ${CTEST_ARGS:-} || status=$?
echo "test: perf thresholds (label perf), reported apart"
ctest --test-dir "$build" --output-on-failure -L perf ${CTEST_ARGS:-} || status=$?
exit $status
