#!/usr/bin/env bash
# `kb bench --sweep`: on the CPU device (small preset), two random shapes of two problems run
# reference and custom through real kb-executor processes; the JSON has one ok row per shape with
# the shape's dims, and the text names the worst speedup per problem. `kb bench --dims`: the
# user's own shape runs instead of the preset, and a shape the spec refuses is `unsupported`,
# naming the dim. `--sweep-regime mixed` draws skinny shapes and says so in the JSON; without
# --sweep it is refused.
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
"$kb" bench L2_060 --device cpu --dims N=1,C_in=2,C_out=8,D=3,H=5,W=4 --seed 5 \
  --json-out "$tmp/dims.json" >"$tmp/out.txt" 2>"$tmp/err.txt" ||
  { cat "$tmp/err.txt"; fail "kb bench --dims exited $?"; }
python3 - "$tmp/dims.json" <<'PY' || fail "the --dims run's JSON"
import json, sys
doc = json.load(open(sys.argv[1]))
(r,) = doc["results"]
assert r["status"] == "ok", r
assert r["dims"] == {"N": 1, "C_in": 2, "C_out": 8, "D": 3, "H": 5, "W": 4}, r["dims"]
PY
"$kb" bench L1_098 --device cpu --sweep 2 --sweep-regime mixed --seed 5 --json-out "$tmp/mixed.json" \
  >"$tmp/out.txt" 2>"$tmp/err.txt" || { cat "$tmp/err.txt"; fail "kb bench --sweep-regime mixed exited $?"; }
python3 - "$tmp/mixed.json" <<'PY' || fail "the mixed sweep's JSON"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["regime"] == "mixed" and len(doc["rows"]) == 2, doc
assert all(r["result"]["status"] == "ok" for r in doc["rows"]), doc["rows"]
PY
if "$kb" bench L1_098 --device cpu --sweep-regime mixed >"$tmp/out.txt" 2>&1; then
  fail "--sweep-regime without --sweep was accepted"
fi
"$kb" bench L2_060 --device cpu --dims N=1,C_in=2 --seed 5 --json-out "$tmp/bad.json" \
  >"$tmp/out.txt" 2>"$tmp/err.txt" || { cat "$tmp/err.txt"; fail "kb bench --dims (bad) exited $?"; }
python3 - "$tmp/bad.json" <<'PY' || fail "a shape without all of the spec's dims"
import json, sys
(r,) = json.load(open(sys.argv[1]))["results"]
assert r["status"] == "unsupported" and "dims not bound: 'C_out', 'D', 'H', 'W'" in r["message"], r["message"]
PY
echo "ok: 6 sweep jobs (2 mixed) and 1 --dims job"
