#!/usr/bin/env bash
# Installs the Debian 12 packages that the deployment tests (tests/deploy, CTest label `deploy`)
# run for real: promtool (prometheus), systemd-analyze (systemd), mmdebstrap, podman and runc,
# Slurm (slurm-wlm, munge), curl, and PyYAML for the Kubernetes check. Without them those tests
# skip (exit 77); CI (.ci/run) installs them so that they run. Idempotent; needs root or sudo.
set -euo pipefail

packages=(prometheus systemd mmdebstrap podman runc slurm-wlm munge curl python3-yaml fakeroot)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-test-deps: all ${#packages[@]} packages present"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-test-deps: installing ${missing[*]}"
$sudo apt-get update -qq
# --no-install-recommends keeps prometheus' and slurm's optional extras out. The tests start
# their own munged/slurmctld/slurmd on private sockets and ports, never the system's.
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
