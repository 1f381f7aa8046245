#!/usr/bin/env bash
# deploy/slurm/kb-worker.sbatch on a real single-node Slurm (slurm_cluster.sh): an array of three
# worker jobs (--gres=gpu:1 each; the CPU device inside) joins a coordinator; the small
# kernelbench22 suite is submitted; one worker job is scancelled while it runs a job; that job is
# retried by another worker, and the run ends with 22 of 22 done, one result each.
# Prints the times of Slurm's start-up and of the run.
# usage: slurm_test.sh SBATCH_SCRIPT BIN_DIR...   env: KB_TEST_PG_URL
# Needs root, slurm-wlm and munge (exit 77 without them).
set -euo pipefail
sbatch_script=$(cd "$(dirname "${1:?usage: slurm_test.sh SBATCH_SCRIPT BIN_DIR...}")" && pwd)/$(basename "$1")
shift
bin_dirs=("$@")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/stack_lib.sh"
. "$here/slurm_cluster.sh"
[[ -n ${KB_TEST_PG_URL:-} ]] || skip "KB_TEST_PG_URL is not set (tools/test.sh sets it)"
[[ $(id -u) == 0 ]] || skip "needs root (munged, slurmctld and slurmd run as root)"
for tool in slurmctld slurmd munged sbatch curl; do command -v $tool >/dev/null || skip "$tool not installed"; done
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'slurm_down; cleanup_stack' EXIT
kb=$(find_program kb)
psql_db() { psql -qAt "$db_url" -c "$1"; }

db_url=$(fresh_db)
"$(find_program kb-coordinator)" --db "$db_url" --endpoints-file "$tmp/endpoints.json" \
  --heartbeat-ms 500 > "$tmp/coordinator.log" 2>&1 &
pids+=($!)
wait_for 30 "the coordinator" test -s "$tmp/endpoints.json"
coord_http=http://$(endpoint_of "$tmp/endpoints.json" http)

slurm_up "$tmp/slurm" || fail "Slurm did not come up"
echo "slurm: up in $slurm_up_ms ms"
array=$(sbatch --parsable --array=0-2 --gres=gpu:1 --chdir="$tmp" --output="$tmp/worker-%A_%a.out" \
  --export="ALL,KB_COORDINATOR=$(endpoint_of "$tmp/endpoints.json" workers),KB_WORKER=$(find_program kb-worker),KB_DEVICE=cpu,KB_STATE_ROOT=$tmp/state" \
  "$sbatch_script")
echo "slurm: worker array $array"
wait_for 60 "three Slurm workers to register" idle_workers_are "$coord_http" 3

export KB_COORDINATOR=$(endpoint_of "$tmp/endpoints.json" clients) KB_DB_URL=$db_url
t0=$(date +%s%N)
run=$("$kb" submit kernelbench22 --preset small --time-cap 3 --timeout 60 | grep -Eo '[0-9]+' | head -1)
[[ -n $run ]] || fail "kb submit printed no run id"

# Cancel a worker while it holds a running job: the job must go to another worker.
victim="" victim_job=""
for _ in $(seq 300); do
  row=$(psql_db "SELECT w.name, j.id FROM jobs j JOIN workers w ON w.id = j.worker_id
                 WHERE j.run_id = $run AND j.state = 'leased' AND w.name LIKE 'slurm-$array-%'
                 ORDER BY j.leased_at LIMIT 1" || true)
  [[ -n $row ]] && { victim=${row%%|*}; victim_job=${row##*|}; break; }
  sleep 0.1
done
[[ -n $victim ]] || fail "no worker was seen running a job"
task=${victim##*-}
scancel "${array}_$task"
echo "slurm: scancelled ${array}_$task ($victim) while it ran job $victim_job"

for _ in $(seq 1200); do
  [[ $(psql_db "SELECT state FROM runs WHERE id = $run") == done ]] && break
  sleep 0.25
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
done_jobs=$(psql_db "SELECT count(*) FROM jobs WHERE run_id = $run AND state = 'done'")
results=$(psql_db "SELECT count(*) FROM results WHERE run_id = $run")
echo "slurm: run $run: $done_jobs of 22 done, $results results, in $ms ms"
[[ $done_jobs == 22 && $results == 22 ]] || { tail -20 "$tmp/coordinator.log"; fail "expected 22 of 22 done"; }
retried=$(psql_db "SELECT w.name || ' attempt ' || r.attempt FROM results r JOIN workers w ON w.id = r.worker_id
                   WHERE r.job_id = $victim_job")
echo "slurm: job $victim_job finished on $retried"
[[ $retried != "$victim "* ]] || fail "job $victim_job was not retried elsewhere"
[[ ${retried##* } -ge 2 ]] || fail "job $victim_job has no second attempt"
echo "ok: Slurm start-up $slurm_up_ms ms; 22 of 22 done in $ms ms with one worker cancelled mid-run"
