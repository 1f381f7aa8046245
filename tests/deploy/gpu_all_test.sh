#!/usr/bin/env bash
# `kb-worker --gpu all`: with CUDA_VISIBLE_DEVICES=0,1 one parent starts two child workers (GPU 0
# and 1, each registered with the coordinator under its own name); SIGTERM to the parent reaches
# both children, and the parent exits 0 once they have; with no GPU visible it exits 1 at once.
# The children's executor is a shim that runs the CPU device (no GPU on CI).
# usage: gpu_all_test.sh BIN_DIR...   env: KB_TEST_PG_URL (else skip)
set -euo pipefail
bin_dirs=("$@")
. "$(dirname "$0")/stack_lib.sh"
[[ -n ${KB_TEST_PG_URL:-} ]] || skip "KB_TEST_PG_URL is not set (tools/test.sh sets it)"
command -v curl >/dev/null || skip "curl not installed"
tmp=$(mktemp -d)
trap cleanup_stack EXIT
worker=$(find_program kb-worker)

if CUDA_VISIBLE_DEVICES= "$worker" --gpu all --coordinator tcp://127.0.0.1:1 > "$tmp/none.log" 2>&1; then
  fail "--gpu all with no visible GPU exited 0"
fi
grep -q "no GPU visible" "$tmp/none.log" || { cat "$tmp/none.log"; fail "no reason given"; }

db_url=$(fresh_db)
"$(find_program kb-coordinator)" --db "$db_url" --endpoints-file "$tmp/endpoints.json" \
  > "$tmp/coordinator.log" 2>&1 &
pids+=($!)
wait_for 30 "the coordinator's endpoints file" test -s "$tmp/endpoints.json"
coord_http=http://$(endpoint_of "$tmp/endpoints.json" http)
cpu_executor_shim "$tmp/kb-executor-cpu"

CUDA_VISIBLE_DEVICES=0,1 "$worker" --gpu all --name fleet --coordinator "$(endpoint_of "$tmp/endpoints.json" workers)" \
  --executor "$tmp/kb-executor-cpu" --state-dir "$tmp/worker" > "$tmp/worker.log" 2>&1 &
parent=$!
pids+=("$parent")
wait_for 30 "two workers to register" idle_workers_are "$coord_http" 2
children=$(pgrep -P "$parent" | wc -l)
[[ $children == 2 ]] || fail "expected 2 child workers, found $children"
for gpu in 0 1; do
  grep -q "fleet-gpu$gpu" "$tmp/worker.log" || fail "no child named fleet-gpu$gpu"
  [[ -d $tmp/worker/gpu$gpu/results ]] || fail "child $gpu has no state directory of its own"
done

start=$(date +%s%N)
kill -TERM "$parent"
set +e
wait "$parent"
rc=$?
set -e
pids=("${pids[0]}")
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[[ $rc == 0 ]] || { cat "$tmp/worker.log"; fail "the parent exited $rc after SIGTERM"; }
[[ -z $(pgrep -f "$tmp/worker/gpu" || true) ]] || fail "a child outlived its parent"
grep -q "forwarding to 2 child" "$tmp/worker.log" || fail "the parent did not forward SIGTERM"
echo "ok: --gpu all ran 2 children; SIGTERM to exit of all in $ms ms"
