# A real single-node Slurm (Debian's slurm-wlm) in a scratch directory, for the deploy tests
# (sourced). munged, slurmctld and slurmd run as root; the node has three fake GPUs (gres/gpu,
# File= symlinks to /dev/null, AutoDetect=off) and claims 8 CPUs (config_overrides) so that three
# one-GPU jobs run at once on a 2-core machine. SLURM_CONF points every Slurm command at it.
# slurm_up DIR: start it (sets slurm_up_ms to the time it took); slurm_down: stop what it started.

slurm_pids=()
slurm_up() {
  local dir=$1 host
  host=$(hostname -s)
  mkdir -p "$dir"/{ctld,spool,munge,run}
  for i in 0 1 2; do ln -sf /dev/null "$dir/gpu$i"; done
  # munge: its own key, socket and state, so that a system munged (if any) is left alone.
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$dir/munge/munge.key"
  cat > "$dir/slurm.conf" <<CONF
ClusterName=kbtest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobRequeue=1
KillWait=10
SchedulerParameters=sched_interval=1
NodeName=$host CPUs=8 RealMemory=2000 Gres=gpu:3 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  cat > "$dir/gres.conf" <<CONF
AutoDetect=off
Name=gpu File=$dir/gpu[0-2]
CONF
  export SLURM_CONF=$dir/slurm.conf
  local t0
  t0=$(date +%s%N)
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/seed"
  slurm_pids+=("$(cat "$dir/munge/munged.pid")")
  slurmctld -f "$SLURM_CONF"
  slurmd -f "$SLURM_CONF"
  for _ in $(seq 300); do
    [[ -s $dir/run/slurmctld.pid && -s $dir/run/slurmd.pid ]] &&
      sinfo -h -o '%t' 2>/dev/null | grep -qx 'idle' && break
    sleep 0.1
  done
  slurm_pids+=("$(cat "$dir/run/slurmctld.pid" 2>/dev/null)" "$(cat "$dir/run/slurmd.pid" 2>/dev/null)")
  sinfo -h -o '%t' | grep -qx idle || { tail -5 "$dir"/slurm*.log; return 1; }
  slurm_up_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
}

slurm_down() {
  local pid
  # The jobs first: their slurmstepd and its tasks (kb-worker) outlive slurmd when it stops first
  # (seen after a passing run: two workers still running, parented to init).
  if [[ ${#slurm_pids[@]} -gt 0 ]]; then
    scancel --full --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 100); do [[ -z $(squeue -h -o %A 2>/dev/null) ]] && break; sleep 0.1; done
  fi
  for pid in "${slurm_pids[@]}"; do [[ -n $pid ]] && kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${slurm_pids[@]}"; do
    [[ -n $pid ]] || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  slurm_pids=()
}
