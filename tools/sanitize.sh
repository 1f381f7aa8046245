#!/usr/bin/env bash
# The unit tests under a sanitizer: a CPU-only Debug build (KB_WITH_CUDA=OFF) with AddressSanitizer
# and UndefinedBehaviorSanitizer (`address`) or ThreadSanitizer (`thread`), then kb_unit_tests with
# every report written to a log. Not part of CI (the build alone takes 20-30 min on 2 cores: 18 min
# for thread here); run it after a change to the executor, the loader, the coordinator or the
# worker.
#
# usage: tools/sanitize.sh address|thread [BUILD_DIR] [-- GTEST_ARGS...]
#   BUILD_DIR defaults to build-address or build-thread beside the source tree.
#   The PostgreSQL tests use KB_TEST_PG_URL, else a throwaway cluster as in tools/test.sh
#   (tools/test-pg.bash); without either they skip.
#   exit 0: no report; 1: reports (their files are named); 2: usage; other: the build or tests failed.
#
# ThreadSanitizer cannot see the synchronization inside libzmq's and libsodium's own threads (the
# Debian libraries are not instrumented: their lock-free queues and CURVE buffers read as races
# with every message received), so tools/tsan-suppressions.txt leaves out reports with a frame in
# either library. A race that our code alone makes is still reported.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:-}
case $kind in
  address) flags="-fsanitize=address,undefined -fno-omit-frame-pointer -O1" ;;
  thread) flags="-fsanitize=thread -fno-omit-frame-pointer -O1" ;;
  *) echo "usage: tools/sanitize.sh address|thread [BUILD_DIR] [-- GTEST_ARGS...]" >&2; exit 2 ;;
esac
shift
build="$repo/build-$kind"
if [[ $# -gt 0 && $1 != -- ]]; then build=$1; shift; fi
[[ ${1:-} == -- ]] && shift

cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DKB_WITH_CUDA=OFF \
  "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_EXE_LINKER_FLAGS=${flags%% *}" \
  "-DCMAKE_SHARED_LINKER_FLAGS=${flags%% *}" >/dev/null
cmake --build "$build" --target kb_unit_tests

source "$repo/tools/test-pg.bash"
test_pg_ensure "$repo"
logs="$build/sanitizer-logs"
rm -rf "$logs" && mkdir -p "$logs"
export ASAN_OPTIONS="halt_on_error=0:log_path=$logs/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=0:log_path=$logs/ubsan"
export TSAN_OPTIONS="halt_on_error=0:second_deadlock_stack=1:log_path=$logs/tsan:suppressions=$repo/tools/tsan-suppressions.txt"
status=0
"$build/tests/kb_unit_tests" --gtest_brief=1 "$@" || status=$?

reports=$(find "$logs" -type f | sort)
if [[ -n $reports ]]; then
  echo "sanitize: $kind reports in:" >&2
  echo "$reports" >&2
  grep -h "^SUMMARY:" $reports | sort | uniq -c | sort -rn | head -20 >&2 || true
  exit 1
fi
[[ $status -eq 0 ]] || exit "$status"
echo "sanitize: kb_unit_tests under the $kind sanitizer: no report"
