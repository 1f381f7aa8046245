#!/usr/bin/env bash
# deploy/systemd: `systemd-analyze verify` accepts each unit with no warning at all (an unknown
# or misspelt key is only a warning to systemd, so any output fails the test). The template is
# verified as instance 0; ExecStart's program is pointed at the built binary, since verify checks
# that it exists and is executable. Exit 77 (skip) without systemd-analyze.
set -euo pipefail
units=${1:?usage: systemd_verify_test.sh UNITS_DIR BIN_DIR...}
shift
command -v systemd-analyze >/dev/null || { echo "skip: systemd-analyze not installed (Debian: systemd)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
find_bin() { for d in "$@"; do [[ -x $d/$prog ]] && { realpath "$d/$prog"; return; }; done; return 0; }
for unit in "$units"/*.service; do
  name=$(basename "$unit")
  [[ $name == *@.service ]] && name=${name/@.service/@0.service}
  prog=$(sed -n 's#^ExecStart=/usr/bin/\([^ ]*\).*#\1#p' "$unit")
  bin=$(find_bin "$@")
  [[ -n $bin ]] || { echo "FAIL: $prog (ExecStart of $unit) not built"; exit 1; }
  sed "s#/usr/bin/$prog#$bin#" "$unit" > "$tmp/$name"
  out=$(systemd-analyze verify "$tmp/$name" 2>&1) || { echo "$out"; echo "FAIL: $name"; exit 1; }
  if [[ -n $out ]]; then echo "$out"; echo "FAIL: $name: systemd-analyze warned"; exit 1; fi
  echo "ok: $name"
done
