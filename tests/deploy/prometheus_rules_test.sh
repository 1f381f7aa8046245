#!/usr/bin/env bash
# deploy/prometheus: the scrape config and the alert rules are valid (promtool check), and the
# rules fire on the series they are meant for (promtool test rules). Exit 77 (skip) without promtool.
set -euo pipefail
dir=${1:?usage: prometheus_rules_test.sh DEPLOY_PROMETHEUS_DIR}
command -v promtool >/dev/null || { echo "skip: promtool not installed (Debian: prometheus)"; exit 77; }
cd "$dir"
promtool check config prometheus.yml
promtool check rules kbfleet-alerts.yml
promtool test rules kbfleet-alerts_test.yml
