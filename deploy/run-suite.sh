#!/usr/bin/env bash
# The main job: builds kbfleet if needed, then verifies and times the whole kernelbench22 suite on
# this machine — on the local GPU at full size when there is one, else on the CPU device at the
# small sizes (clearly labelled `cpu`: golden model vs its fp32 twin, not GPU figures).
#
# usage: deploy/run-suite.sh [kb bench options...]     e.g. --json-out results.json, --aa
#
# Today each job runs in a fresh kb-executor process on this machine (kb bench). The distributed
# form — throwaway PostgreSQL, coordinator and one worker per GPU — replaces this script's body
# when the coordinator lands (see README.md, "Status").
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${KB_BUILD_DIR:-$repo/build}

if [ ! -x "$build/cli/kb" ] || [ ! -x "$build/worker/kb-executor" ]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" -j "$(nproc)" --target kb kb-executor kbpack
fi
exec "$build/cli/kb" bench kernelbench22 "$@"
