# Helpers for the deploy tests that run real daemons (sourced): a fresh database on the test
# PostgreSQL server (KB_TEST_PG_URL), a kb-executor shim that runs every job on the CPU device
# (so that GPU command lines run on a machine without a GPU), waiting, and cleanup.
# Callers set: tmp (a scratch directory), bin_dirs (where the built programs are).

skip() { echo "skip: $*"; exit 77; }
fail() {
  local log
  for log in "${tmp:-/nonexistent}"/*.log; do
    [[ -f $log ]] && { echo "--- $log (tail)"; tail -n 15 "$log"; }
  done
  echo "FAIL: $*"
  exit 1
}

pids=()
db_name=""
cleanup_stack() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [[ -n $db_name ]]; then
    psql -q "$KB_TEST_PG_URL" -c "DROP DATABASE IF EXISTS $db_name WITH (FORCE)" >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}

find_program() {  # find_program NAME: its path in bin_dirs
  local d
  for d in "${bin_dirs[@]}"; do [[ -x $d/$1 ]] && { realpath "$d/$1"; return 0; }; done
  fail "$1 is not built (looked in ${bin_dirs[*]})"
}

fresh_db() {  # prints the URL of a new, empty database
  db_name=kb_deploy_test_$$
  psql -q "$KB_TEST_PG_URL" -c "CREATE DATABASE $db_name" >/dev/null
  echo "${KB_TEST_PG_URL%/*}/$db_name"
}

cpu_executor_shim() {  # cpu_executor_shim PATH: a kb-executor that turns --device cuda into cpu
  local real
  real=$(find_program kb-executor)
  cat > "$1" <<SHIM
#!/usr/bin/env bash
exec "$real" "\${@/#cuda/cpu}"
SHIM
  chmod +x "$1"
  # The shim execs a kb-executor that the sandbox does not mount (a build tree may sit under /tmp,
  # which is private inside it): workers that use the shim run without the sandbox.
  export KB_SANDBOX=off
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: until COMMAND succeeds
  local seconds=$1 what=$2
  shift 2
  for _ in $(seq $((seconds * 10))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  fail "timed out after ${seconds}s waiting for $what"
}

endpoint_of() {  # endpoint_of ENDPOINTS_JSON KEY
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

metric_value() {  # metric_value URL 'NAME{LABELS}': the sample's value, or nothing
  curl -sf "$1/metrics" | awk -v m="$2" '$1 == m {print $2}'
}

idle_workers_are() {  # idle_workers_are URL N: the coordinator at URL counts N idle workers
  [[ $(metric_value "$1" 'kb_workers{state="idle"}') == "$2" ]]
}
