#!/usr/bin/env bash
# Installs the Debian 12 packages that the deployment tests (tests/deploy, CTest label `deploy`)
# run for real: promtool (prometheus), systemd-analyze (systemd), mmdebstrap, podman and runc,
# Slurm (slurm-wlm, munge), curl, PyYAML for the Kubernetes check, Chromium (headless, for the
# dashboard's browser test), and PyTorch for the KernelBench importer's test (tests/import, label
# `import`; torch.fx traces the models). Without them those tests skip (exit 77); CI (.ci/run) installs them
# so that they run. Idempotent; needs root or sudo.
# The tests start their own munged/slurmctld/slurmd on private sockets and ports, never the
# system's; install-deps.sh installs without recommends, which keeps prometheus' and slurm's
# optional extras out.
set -euo pipefail
exec bash "$(dirname "$0")/install-deps.sh" \
  prometheus systemd mmdebstrap podman runc slurm-wlm munge curl python3-yaml fakeroot chromium \
  python3-torch
