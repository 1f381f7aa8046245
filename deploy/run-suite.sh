#!/usr/bin/env bash
# The main job: builds kbfleet if needed, then runs the whole kernelbench22 suite on this machine
# through a local stack (deploy/local-stack.sh): a throwaway PostgreSQL cluster, kb-coordinator,
# one kb-worker per local GPU at full size — or, without a GPU, a CPU worker at the small sizes
# (clearly labelled `cpu`: golden model vs its fp32 twin, not GPU figures) — then
# `kb submit kernelbench22 --wait` and the results table, and shuts the stack down.
#
# usage: deploy/run-suite.sh [local-stack.sh options...]   e.g. --keep, --preset odd, --state DIR
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${KB_BUILD_DIR:-$repo/build}

if [ ! -x "$build/cli/kb" ] || [ ! -x "$build/coordinator/kb-coordinator" ] ||
   [ ! -x "$build/worker/kb-worker" ] || [ ! -x "$build/executor/kb-executor" ]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" -j "$(nproc)" --target kb kb-coordinator kb-worker kb-executor kbpack kbref
fi
export KB_BUILD_DIR=$build
exec "$repo/deploy/local-stack.sh" "$@"
