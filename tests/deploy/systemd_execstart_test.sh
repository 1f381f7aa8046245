#!/usr/bin/env bash
# Runs each systemd unit's ExecStart line as written (specifiers expanded as systemd would: %i=0,
# %H=this host, %S=a scratch state root; /usr/bin and /etc/kbfleet mapped to the build tree and a
# scratch config directory) against a fresh database: the worker registers with the coordinator,
# both /healthz answer, both /metrics pass `promtool check metrics`, every log line has a
# timestamp, level and component, and SIGTERM stops both cleanly.
# The worker's unit asks for GPU 0; its config points `executor:` at a shim that runs the CPU
# device, so this runs on CI's GPU-less machines.
# usage: systemd_execstart_test.sh UNITS_DIR BIN_DIR...   env: KB_TEST_PG_URL (else skip)
set -euo pipefail
units=${1:?usage: systemd_execstart_test.sh UNITS_DIR BIN_DIR...}
shift
bin_dirs=("$@")
. "$(dirname "$0")/stack_lib.sh"
[[ -n ${KB_TEST_PG_URL:-} ]] || skip "KB_TEST_PG_URL is not set (tools/test.sh sets it)"
command -v promtool >/dev/null || skip "promtool not installed (Debian: prometheus)"
command -v curl >/dev/null || skip "curl not installed"
tmp=$(mktemp -d)
trap cleanup_stack EXIT
etc=$tmp/etc/kbfleet state=$tmp/state
mkdir -p "$etc" "$state/kbfleet/coordinator" "$state/kbfleet/worker-0"

exec_start() {  # exec_start UNIT: its ExecStart, expanded
  local line
  line=$(sed -n 's/^ExecStart=//p' "$1")
  line=${line//%i/0}
  line=${line//%H/$(hostname)}
  line=${line//%S/$state}
  line=${line//\/etc\/kbfleet/$etc}
  local prog=${line%% *}
  echo "$(find_program "$(basename "$prog")")${line#"$prog"}"
}

db_url=$(fresh_db)
cat > "$etc/coordinator.yaml" <<YAML
db: $db_url
http_bind: 127.0.0.1:0
YAML
read -ra coordinator <<< "$(exec_start "$units/kb-coordinator.service")"
echo "coordinator: ${coordinator[*]}"
"${coordinator[@]}" > "$tmp/coordinator.log" 2>&1 &
pids+=($!)
endpoints=$state/kbfleet/coordinator/endpoints.json
wait_for 30 "the coordinator's endpoints file" test -s "$endpoints"
coord_http=http://$(endpoint_of "$endpoints" http)

cpu_executor_shim "$tmp/kb-executor-cpu"
cat > "$etc/worker.yaml" <<YAML
coordinator: $(endpoint_of "$endpoints" workers)
executor: $tmp/kb-executor-cpu
YAML
read -ra worker <<< "$(exec_start "$units/kb-worker@.service")"
echo "worker: ${worker[*]}"
"${worker[@]}" > "$tmp/worker.log" 2>&1 &
pids+=($!)
worker_http=http://127.0.0.1:9470  # the unit's --http-bind 127.0.0.1:947%i
wait_for 30 "the worker to register" idle_workers_are "$coord_http" 1
curl -sf "$coord_http/healthz" >/dev/null || fail "coordinator /healthz"
wait_for 10 "worker /healthz" curl -sf "$worker_http/healthz"
curl -sf "$coord_http/metrics" | promtool check metrics || fail "promtool on the coordinator's /metrics"
curl -sf "$worker_http/metrics" | promtool check metrics || fail "promtool on the worker's /metrics"
# The worker publishes its session states every 500 ms: give it a few periods after registering.
worker_shows_registered() {
  curl -sf "$worker_http/metrics" | grep '^kb_worker_sessions{state="registered"} 1$' >/dev/null
}
wait_for 5 "the worker's /metrics to show its registered session" worker_shows_registered

kill -TERM "${pids[@]}"
for pid in "${pids[@]}"; do
  wait "$pid" || fail "pid $pid exited with $? after SIGTERM"
done
pids=()
line_format='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z (trace|debug|info|warning|error|critical) kb-(coordinator|worker): '
for log in coordinator worker; do
  bad=$(grep -Evc "$line_format" "$tmp/$log.log" || true)
  [[ $bad == 0 ]] || { cat "$tmp/$log.log"; fail "$bad line(s) of the $log's log lack timestamp, level or component"; }
done
grep -q "$(hostname)-gpu0" "$tmp/worker.log" || fail "the worker did not take its unit's name"
echo "ok: both units' ExecStart ran; promtool passed on both /metrics"
