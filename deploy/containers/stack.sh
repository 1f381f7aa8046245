#!/usr/bin/env bash
# The kbfleet stack in containers, compose-style: PostgreSQL, kb-coordinator and N workers from
# the images build.sh makes, on the host's network (so nothing leaves loopback and no CURVE keys
# are needed; across machines use the Kubernetes manifests or CURVE, see deploy/README.md).
#
# usage: deploy/containers/stack.sh up [--workers N] [--device cpu|cuda] [--cuda-libs DIR]...
#        deploy/containers/stack.sh down
#        deploy/containers/stack.sh env        # the KB_* lines for `kb` on this host
# --device cpu (default) runs CPU workers; cuda runs one `kb-worker --gpu all` per container and
# passes the GPUs through (--device nvidia.com/gpu=all with the NVIDIA container toolkit's CDI).
# --cuda-libs DIR mounts a host directory of CUDA libraries (cuDNN, cuBLAS, CUPTI) into the
# workers, read-only, for a kb-executor built with CUDA.
# Ports: PostgreSQL $KB_STACK_PG_PORT (55432), workers 5555, clients 5556, coordinator /metrics
# 9469, worker I's /metrics 9480+I.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/images.env"
. "$here/podman-env.sh"
say() { echo "stack: $*" >&2; }
version=${KB_VERSION:-$(podman image ls --format '{{.Tag}}' "localhost/$KB_IMAGE_COORDINATOR" | head -1)}
pg_port=${KB_STACK_PG_PORT:-55432}
db_url=postgresql://postgres@127.0.0.1:$pg_port/kbfleet
workers_ep=tcp://127.0.0.1:$KB_PORT_WORKERS clients_ep=tcp://127.0.0.1:$KB_PORT_CLIENTS

cmd=${1:-}
shift || true
case $cmd in
  up)
    workers=1 device=cpu cuda_mounts=()
    while [[ $# -gt 0 ]]; do
      case $1 in
        --workers) workers=$2; shift 2 ;;
        --device) device=$2; shift 2 ;;
        --cuda-libs) cuda_mounts+=(-v "$2:/opt/cuda-libs/$(basename "$2"):ro"); cuda_path+="${cuda_path:+:}/opt/cuda-libs/$(basename "$2")"; shift 2 ;;
        *) say "unknown option $1"; exit 2 ;;
      esac
    done
    [[ -n $version ]] || { say "no images: run deploy/containers/build.sh BUILD_DIR first"; exit 1; }
    podman run -d --name kbfleet-postgres --network host -e POSTGRES_PORT="$pg_port" \
      "localhost/$KB_IMAGE_POSTGRES:$version" >/dev/null
    for _ in $(seq 300); do
      podman exec kbfleet-postgres /usr/lib/postgresql/15/bin/pg_isready -q -h 127.0.0.1 -p "$pg_port" -d kbfleet && break
      sleep 0.1
    done
    podman run -d --name kbfleet-coordinator --network host "localhost/$KB_IMAGE_COORDINATOR:$version" \
      --db "$db_url" --workers-bind "$workers_ep" --clients-bind "$clients_ep" \
      --http-bind "127.0.0.1:$KB_PORT_COORDINATOR_HTTP" >/dev/null
    for _ in $(seq 300); do
      curl -sf "http://127.0.0.1:$KB_PORT_COORDINATOR_HTTP/healthz" >/dev/null && break
      sleep 0.1
    done
    for ((i = 0; i < workers; i++)); do
      args=(--coordinator "$workers_ep" --state-dir /var/lib/kbfleet/worker --http-bind "127.0.0.1:$((9480 + i))")
      run=(--network host)
      if [[ $device == cuda ]]; then
        args+=(--gpu all --name "container$i")
        run+=(--device nvidia.com/gpu=all)
      else
        args+=(--device cpu --name "container-cpu$i")
      fi
      [[ ${#cuda_mounts[@]} -gt 0 ]] && run+=("${cuda_mounts[@]}" -e "LD_LIBRARY_PATH=$cuda_path")
      podman run -d --name "kbfleet-worker-$i" "${run[@]}" "localhost/$KB_IMAGE_WORKER:$version" "${args[@]}" >/dev/null
    done
    say "up: postgres, coordinator, $workers $device worker(s) ($version)"
    ;;
  down)
    for c in $(podman ps -a --format '{{.Names}}' | grep '^kbfleet-worker-' || true) kbfleet-coordinator kbfleet-postgres; do
      podman stop -t 30 "$c" >/dev/null 2>&1 || true
      podman rm -f "$c" >/dev/null 2>&1 || true
    done
    say "down"
    ;;
  env)
    echo "export KB_COORDINATOR=$clients_ep KB_DB_URL=$db_url"
    ;;
  *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
