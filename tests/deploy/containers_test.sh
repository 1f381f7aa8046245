#!/usr/bin/env bash
# deploy/containers: builds the three images (the mmdebstrap root cached in $KB_DEPLOY_CACHE,
# then podman build --pull=never), brings the stack up with one CPU worker (stack.sh), runs the
# small kernelbench22 suite through it with the host's `kb` (22 of 22 must be done), and takes
# it down. Prints the build and run times. Needs root, mmdebstrap, podman, runc (exit 77 without).
# usage: containers_test.sh BUILD_DIR KB_PROGRAM
set -euo pipefail
build=$(cd "${1:?usage: containers_test.sh BUILD_DIR KB_PROGRAM}" && pwd)
kb=${2:?usage: containers_test.sh BUILD_DIR KB_PROGRAM}
here=$(cd "$(dirname "$0")/../../deploy/containers" && pwd)
skip() { echo "skip: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[[ $(id -u) == 0 ]] || skip "needs root"
for tool in mmdebstrap podman runc cpack curl; do command -v $tool >/dev/null || skip "$tool not installed"; done
tmp=$(mktemp -d)
trap '"$here/stack.sh" down >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
"$here/stack.sh" down >/dev/null 2>&1 || true

t0=$(date +%s)
"$here/build.sh" "$build" "${KB_DEPLOY_CACHE:-$build/deploy-cache}" || fail "build.sh"
t1=$(date +%s)

# A CUDA build's kb-executor needs NVIDIA's libraries, which the node brings: mount their
# directories into the worker, as the NVIDIA container toolkit would.
executor=$(find "$build" -name kb-executor -type f -perm -u+x | head -1)
cuda_libs=()
for dir in $(ldd "$executor" | awk '$1 ~ /^lib(cu|nv)/ && $3 ~ /^\// {print $3}' | xargs -r -n1 dirname | sort -u); do
  cuda_libs+=(--cuda-libs "$dir")
done
"$here/stack.sh" up --workers 1 --device cpu "${cuda_libs[@]}" || fail "stack.sh up"
eval "$("$here/stack.sh" env)"
for _ in $(seq 300); do
  curl -sf http://127.0.0.1:9469/metrics | grep '^kb_workers{state="idle"} 1$' >/dev/null && break
  sleep 0.1
done
curl -sf http://127.0.0.1:9469/metrics | grep '^kb_workers{state="idle"} 1$' >/dev/null ||
  { podman logs kbfleet-worker-0 2>&1 | tail -20; fail "the worker container did not register"; }
set +e
"$kb" submit kernelbench22 --preset small --time-cap 3 --timeout 60 --wait > "$tmp/submit.log" 2>&1
rc=$?
set -e
t2=$(date +%s)
tail -5 "$tmp/submit.log"
[[ $rc == 0 ]] || { podman logs kbfleet-coordinator 2>&1 | tail -20; fail "kb submit --wait exited $rc"; }
done_jobs=$(podman exec kbfleet-postgres /usr/lib/postgresql/15/bin/psql -qAt -h 127.0.0.1 -p "${KB_STACK_PG_PORT:-55432}" -U postgres kbfleet \
  -c "SELECT count(*) FROM jobs WHERE state = 'done'")
[[ $done_jobs == 22 ]] || fail "expected 22 of 22 done, got $done_jobs"
echo "ok: images built in $((t1 - t0)) s; stack up and 22 of 22 done in $((t2 - t1)) s"
