#!/usr/bin/env bash
# The main job on a local stack: a throwaway PostgreSQL cluster, kb-coordinator, one kb-worker per
# local GPU (one CPU worker when there is none), `kb submit SUITE --wait` (progress, then the
# results table), and everything shut down again in reverse order — unless --keep.
#
# usage: deploy/local-stack.sh [options] [-- extra `kb submit` options]
#   --preset P       size preset (default: full on GPUs, small on CPU workers)
#   --suite S        suite or comma-separated problem ids (default: kernelbench22)
#   --device D       auto (default), cuda or cpu: which workers to start
#   --workers N      CPU workers to start when there is no GPU (default: 1)
#   --gpu-all        one `kb-worker --gpu all` (a child worker per visible GPU under one parent,
#                    the way a packaged node runs) instead of one kb-worker per GPU
#   --time-cap S     timing cap per job in seconds (default: 15 on GPUs, 3 on the CPU)
#   --state DIR      keep the cluster, logs and worker state here (default: a new temp dir,
#                    removed at the end when the run succeeded); reusing DIR reuses the database
#   --keep           leave the stack running and print the environment to use it
#   --stop DIR       stop a stack left running with --keep --state DIR (or the dir it printed)
#   --bin DIR        use the binaries in DIR (kb, kb-coordinator, kb-worker, kb-executor)
#
# Binaries: the bundle's (when this script sits in a bundle made by deploy/make-bundle.sh), else
# --bin DIR, else the build tree ($KB_BUILD_DIR, default build/), built here when missing.
# Logs: STATE/coordinator.log, STATE/worker-*.log, STATE/pg/server.log.
# Exit code: kb submit's (0: every job done, 1: a job failed or the stack failed, 2: bad options).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
say() { echo "local-stack: $*" >&2; }
die() { say "$1"; exit "${2:-1}"; }

preset="" suite=kernelbench22 device=auto cpu_workers=1 time_cap="" state="" keep=0 bin_dir="" gpu_all=0
submit_extra=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --preset) preset=${2:?--preset needs a value}; shift 2 ;;
    --suite) suite=${2:?--suite needs a value}; shift 2 ;;
    --device) device=${2:?--device needs auto, cuda or cpu}; shift 2 ;;
    --workers) cpu_workers=${2:?--workers needs a count}; shift 2 ;;
    --gpu-all) gpu_all=1; shift ;;
    --time-cap) time_cap=${2:?--time-cap needs seconds}; shift 2 ;;
    --state) state=${2:?--state needs a directory}; shift 2 ;;
    --keep) keep=1; shift ;;
    --stop) stop_dir=${2:?--stop needs the state directory}; shift 2 ;;
    --bin) bin_dir=${2:?--bin needs a directory}; shift 2 ;;
    -h|--help) sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; submit_extra=("$@"); break ;;
    *) die "unknown option '$1' (see --help)" 2 ;;
  esac
done
[[ $device =~ ^(auto|cuda|cpu)$ ]] || die "--device must be auto, cuda or cpu, not '$device'" 2
[[ $cpu_workers =~ ^[1-9][0-9]*$ ]] || die "--workers must be a positive count, not '$cpu_workers'" 2

# --- where the programs are --------------------------------------------------------------------
# Each program is an array (a bundle runs them through its `run` wrapper, which sets the library
# path and the problem specs).
if [[ -x $here/run && -x $here/bin/kb-coordinator ]]; then  # inside a bundle
  mode=bundle
  KB=("$here/run" kb) COORD=("$here/run" kb-coordinator) WORKER=("$here/run" kb-worker)
  pg_local=$here/tools/pg-local.sh
  export KB_PG_BIN=${KB_PG_BIN:-$here/pgsql/lib/postgresql/15/bin}
  export KB_SCHEMAS_DIR=${KB_SCHEMAS_DIR:-$here/schemas}
  export LD_LIBRARY_PATH="$here/pgsql/lib/deps:$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  mode=tree
  repo=$(cd "$here/.." && pwd)
  pg_local=$repo/tools/pg-local.sh
  if [[ -n $bin_dir ]]; then
    KB=("$bin_dir/kb") COORD=("$bin_dir/kb-coordinator") WORKER=("$bin_dir/kb-worker")
  else
    build=${KB_BUILD_DIR:-$repo/build}
    KB=("$build/cli/kb") COORD=("$build/coordinator/kb-coordinator") WORKER=("$build/worker/kb-worker")
  fi
fi

stop_stack() {  # stop_stack DIR: workers, then the coordinator, then PostgreSQL
  local dir=$1 pid name
  for name in workers coordinator; do
    [[ -f $dir/$name.pids ]] || continue
    while read -r pid; do kill -TERM "$pid" 2>/dev/null || true; done < "$dir/$name.pids"
    # SIGTERM drains the coordinator (bounded by its own 10 s flush); give every process 15 s.
    for _ in $(seq 150); do
      local alive=0
      while read -r pid; do kill -0 "$pid" 2>/dev/null && alive=1; done < "$dir/$name.pids"
      [[ $alive == 0 ]] && break
      sleep 0.1
    done
    while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done < "$dir/$name.pids"
    rm -f "$dir/$name.pids"
  done
  [[ -d $dir/pg ]] && "$pg_local" stop "$dir/pg" || true
}

if [[ -n ${stop_dir:-} ]]; then
  stop_stack "$stop_dir"
  say "stopped the stack in $stop_dir"
  exit 0
fi

if [[ $mode == tree && -z $bin_dir ]]; then
  if [[ ! -x ${KB[0]} || ! -x ${COORD[0]} || ! -x ${WORKER[0]} || ! -x $build/executor/kb-executor ||
        ! -f $build/kernels/libkbpack.so || ! -f $build/kernels/libkbref.so ]]; then
    say "building kbfleet in $build"
    cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$build" -j "$(nproc)" --target kb kb-coordinator kb-worker kb-executor kbpack kbref
  fi
fi
for prog in "${KB[-1]}" "${COORD[-1]}" "${WORKER[-1]}"; do
  [[ $mode == bundle ]] && prog=$here/bin/$prog
  [[ -x $prog ]] || die "missing program $prog (build it, or pass --bin DIR)"
done

# --- state, workers' kind, preset ----------------------------------------------------------------
created_state=0
if [[ -z $state ]]; then
  state=$(mktemp -d "${TMPDIR:-/tmp}/kbfleet-stack.XXXXXX")
  created_state=1
fi
mkdir -p "$state"
state=$(cd "$state" && pwd)
chmod 755 "$state"  # the postgres user (when we are root) must reach $state/pg

gpus=0
if [[ $device != cpu ]] && command -v nvidia-smi >/dev/null; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi
[[ $device == cuda && $gpus == 0 ]] && die "--device cuda, but nvidia-smi lists no GPU" 2
if [[ $gpus -gt 0 ]]; then
  preset=${preset:-full}
  time_cap=${time_cap:-15}
  say "$gpus GPU(s): one worker per GPU at the $preset preset"
else
  preset=${preset:-small}
  time_cap=${time_cap:-3}
  if [[ $device == cpu ]]; then
    say "CPU workers ($cpu_workers) at the $preset preset"
  else
    say "no GPU: CPU workers at the $preset preset ($cpu_workers worker(s); CPU times, not GPU figures)"
  fi
fi

# --- shutdown, in reverse order ------------------------------------------------------------------
rc=""
kb_pid=""
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  [[ -n $rc ]] || rc=$status
  [[ -n $kb_pid ]] && kill -TERM "$kb_pid" 2>/dev/null || true
  if [[ $keep == 1 && ${stack_up:-0} == 1 ]]; then
    cat >&2 <<EOF
local-stack: left running (state in $state). To use it:
  export KB_COORDINATOR=$clients_endpoint
  export KB_DB_URL=$ro_url
  kb runs; kb workers; kb submit smoke --preset $preset --wait
  dashboard: http://$(endpoint http)/
Stop it with: $0 --stop $state
EOF
    exit "$rc"
  fi
  say "shutting down"
  stop_stack "$state"
  if [[ $rc == 0 && $created_state == 1 ]]; then
    rm -rf "$state"
  else
    say "logs and state kept in $state"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'rc=130; exit 130' INT
trap 'rc=143; exit 143' TERM

# --- PostgreSQL, coordinator, workers ------------------------------------------------------------
db_url=$("$pg_local" start "$state/pg") || die "PostgreSQL did not start (log: $state/pg/server.log)"
say "PostgreSQL at $db_url"

rm -f "$state/endpoints.json"
# The dashboard reads as kb_cli (created below, once the migrations made kb_readonly; the
# dashboard connects on its first request).
"${COORD[@]}" --db "$db_url" --dashboard-db "${db_url/postgres@/kb_cli@}" \
  --endpoints-file "$state/endpoints.json" >"$state/coordinator.log" 2>&1 &
echo $! >> "$state/coordinator.pids"
coordinator_pid=$!
for _ in $(seq 600); do
  [[ -s $state/endpoints.json ]] && break
  kill -0 "$coordinator_pid" 2>/dev/null ||
    { tail -n 20 "$state/coordinator.log" >&2; die "kb-coordinator exited (log: $state/coordinator.log)"; }
  sleep 0.1
done
[[ -s $state/endpoints.json ]] || die "kb-coordinator wrote no endpoints file in 60 s (log: $state/coordinator.log)"
endpoint() { sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p" "$state/endpoints.json"; }
clients_endpoint=$(endpoint clients)
workers_endpoint=$(endpoint workers)
say "kb-coordinator (pid $coordinator_pid): workers $workers_endpoint, clients $clients_endpoint, dashboard http://$(endpoint http)/"

# The CLI reads with a read-only login role; kb_readonly comes from the migrations, which the
# coordinator has applied by the time its endpoints file exists.
"$pg_local" psql "$state/pg" -v ON_ERROR_STOP=1 -q -c "DO \$\$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kb_cli') THEN
    CREATE ROLE kb_cli LOGIN IN ROLE kb_readonly;
  END IF; END \$\$;" >/dev/null || die "could not create the read-only role kb_cli"
ro_url=${db_url/postgres@/kb_cli@}

start_worker() {  # start_worker NAME ARGS...
  local name=$1
  shift
  "${WORKER[@]}" --coordinator "$workers_endpoint" --name "$name" --state-dir "$state/worker-$name" "$@" \
    >"$state/worker-$name.log" 2>&1 &
  echo $! >> "$state/workers.pids"
}
if [[ $gpus -gt 0 && $gpu_all == 1 ]]; then
  start_worker local-gpu --gpu all
elif [[ $gpus -gt 0 ]]; then
  for ((i = 0; i < gpus; i++)); do start_worker "local-gpu$i" --gpu "$i"; done
else
  for ((i = 0; i < cpu_workers; i++)); do start_worker "local-cpu$i" --device cpu; done
fi
stack_up=1

# --- the run ------------------------------------------------------------------------------------
export KB_COORDINATOR=$clients_endpoint KB_DB_URL=$ro_url
start_ns=$(date +%s%N)
# kb runs in the background so that a coordinator that dies mid-run ends the wait.
"${KB[@]}" submit "$suite" --preset "$preset" --time-cap "$time_cap" --wait "${submit_extra[@]}" &
kb_pid=$!
while kill -0 "$kb_pid" 2>/dev/null; do
  if ! kill -0 "$coordinator_pid" 2>/dev/null; then
    tail -n 20 "$state/coordinator.log" >&2
    kill -TERM "$kb_pid" 2>/dev/null || true
    rc=1
    die "kb-coordinator died during the run (log: $state/coordinator.log)"
  fi
  sleep 0.5
done
set +e
wait "$kb_pid"
rc=$?
set -e
kb_pid=""
elapsed_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
say "submit to last result: $((elapsed_ms / 1000)).$(( (elapsed_ms % 1000) / 100 )) s (exit code $rc)"
exit "$rc"
