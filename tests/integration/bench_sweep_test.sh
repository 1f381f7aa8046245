#!/usr/bin/env bash
# `kb bench --sweep`: on the CPU device (small preset), two random shapes of two problems run
# reference and custom through real kb-executor processes; the JSON has one ok row per shape with
# the shape's dims, and the text names the worst speedup per problem.
#
# usage: bench_sweep_test.sh KB_BIN
set -euo pipefail
kb=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kb-sweep.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$kb" bench L2_060,L1_098 --device cpu --sweep 2 --seed 5 --json-out "$tmp/sweep.json" >"$tmp/out.txt" 2>"$tmp/err.txt" ||
  { cat "$tmp/err.txt"; fail "kb bench --sweep exited $?"; }
python3 - "$tmp/sweep.json" <<'PY' || fail "the sweep's JSON"
import json, sys
doc = json.load(open(sys.argv[1]))
rows = doc["rows"]
assert doc["sweep"] == 2 and len(rows) == 4, rows
assert [r["problem_id"] for r in rows] == ["L2_060", "L2_060", "L1_098", "L1_098"], rows
for r in rows:
    assert r["result"]["status"] == "ok", r
    assert 0 < r["flop_share"] <= 1, r
    assert r["dims"].startswith("N="), r
PY
grep "^L2_060 .* [0-9.]*x .*\(met\|MISS\)" "$tmp/out.txt" >/dev/null || { cat "$tmp/out.txt"; fail "no verdict row for L2_060"; }
grep "problems meet the sweep goal" "$tmp/out.txt" >/dev/null || fail "no summary line"
echo "ok: 4 sweep jobs"
