#!/usr/bin/env bash
# The dashboard in a real browser: headless Chromium loads every page of a kb-coordinator that
# serves a recorded history (tests/deploy/dashboard_seed.py, loaded with psql into a fresh
# database) through the read-only role. For each page: the DOM holds the expected numbers, the
# history chart has one point per result, the console logs no error (CSP refusals included), and
# the network log shows no request to anything but the coordinator on loopback. Screenshots go
# to $KB_DASHBOARD_SCREENSHOTS when set (docs/img/dashboard-*.png are made that way).
# usage: dashboard_browser_test.sh BIN_DIR...   env: KB_TEST_PG_URL (else skip)
set -euo pipefail
bin_dirs=("$@")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/stack_lib.sh"
[[ -n ${KB_TEST_PG_URL:-} ]] || skip "KB_TEST_PG_URL is not set (tools/test.sh sets it)"
browser=$(command -v chromium || command -v chromium-browser || true)
[[ -n $browser ]] || skip "chromium not installed (Debian: chromium; deploy/install-test-deps.sh)"
command -v psql >/dev/null || skip "psql not installed"
tmp=$(mktemp -d)
trap cleanup_stack EXIT
coordinator_bin=$(find_program kb-coordinator)

db_url=$(fresh_db)
"$coordinator_bin" --migrate --db "$db_url" > "$tmp/migrate.log" 2>&1 || fail "migrations failed"
python3 "$here/dashboard_seed.py" | psql -q -v ON_ERROR_STOP=1 "$db_url" > "$tmp/seed.log" 2>&1 ||
  fail "seeding failed"
psql -q "$db_url" -c "DO \$\$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kb_dashboard_test') THEN
    CREATE ROLE kb_dashboard_test LOGIN IN ROLE kb_readonly;
  END IF; END \$\$;" > /dev/null 2>&1 || true
ro_url=${db_url/\/\/postgres@/\/\/kb_dashboard_test@}
[[ $(psql -tA "$ro_url" -c "SELECT count(*) FROM results") == 12 ]] || fail "read-only role cannot read"

"$coordinator_bin" --db "$db_url" --dashboard-db "$ro_url" --endpoints-file "$tmp/endpoints.json" \
  > "$tmp/coordinator.log" 2>&1 &
pids+=($!)
wait_for 30 "the coordinator's endpoints file" test -s "$tmp/endpoints.json"
base="http://$(endpoint_of "$tmp/endpoints.json" http)"
echo "dashboard at $base"

# browse NAME PATH: DOM in $tmp/NAME.html, console in NAME.console, net log in NAME.net.json.
browse() {
  local name=$1 path=$2
  local flags=(--headless --no-sandbox --disable-gpu --no-first-run --disable-sync
               --disable-background-networking --disable-component-update --disable-default-apps
               --disable-extensions --hide-scrollbars --user-data-dir="$tmp/profile-$name"
               --enable-logging=stderr --v=0 --window-size=1200,860)
  "$browser" "${flags[@]}" --log-net-log="$tmp/$name.net.json" --dump-dom "$base$path" \
    > "$tmp/$name.html" 2> "$tmp/$name.console" || fail "$name: chromium failed"
  if [[ -n ${KB_DASHBOARD_SCREENSHOTS:-} ]]; then
    mkdir -p "$KB_DASHBOARD_SCREENSHOTS"
    "$browser" "${flags[@]}" --screenshot="$KB_DASHBOARD_SCREENSHOTS/dashboard-$name.png" \
      "$base$path" > /dev/null 2>&1 || fail "$name: screenshot failed"
  fi
  # Console messages (page errors, CSP refusals) reach stderr as CONSOLE lines.
  if grep -E "CONSOLE|Refused to|Uncaught" "$tmp/$name.console"; then fail "$name: console errors"; fi
  # Requests a page made carry its origin as initiator; the browser's own (component updater,
  # network time, account check) carry "not an origin" and are not the page's doing.
  python3 - "$tmp/$name.net.json" "$base" <<'PY' || fail "$name: the page made a request off loopback"
import json, sys
log = json.load(open(sys.argv[1]))
start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
page, browser = [], []
for e in log["events"]:
    p = e.get("params", {})
    if e["type"] == start and "url" in p:
        (browser if p.get("initiator") == "not an origin" else page).append(p["url"])
mine = [u for u in page + browser if u.startswith(sys.argv[2] + "/")]
outside = [u for u in page if not u.startswith(sys.argv[2] + "/")]
print("  requests: %d to the coordinator, %d from the page elsewhere %s, %d of the browser's own" %
      (len(mine), len(outside), outside, len(browser) - len([u for u in browser if u in mine])))
sys.exit(1 if outside or not mine else 0)
PY
}

expect() {  # expect NAME TEXT...: each TEXT is in the page's DOM
  local name=$1 text
  shift
  for text in "$@"; do
    grep -qF -- "$text" "$tmp/$name.html" || fail "$name: '$text' is not on the page"
  done
}

count() { grep -oF -- "$2" "$tmp/$1.html" | wc -l; }

browse runs /
expect runs "smoke3 · full" "c4c4c4c4c4" "NVIDIA H200" "0.667" "3/3"
[[ $(count runs '<a href="/runs/') == 4 ]] || fail "runs: expected 4 runs"

browse run /runs/4
expect run "max abs error 0.5 over tolerance" "1.600×" "[1.568, 1.632]" "w-h200-0" "mismatch"

browse history "/history/L1_003?gpu=NVIDIA+H200"
expect history "median (ms)" "c3c3c3c3c3...c4c4c4c4c4" "class=\"median-band\""
[[ $(count history '<circle class="pt') == 4 ]] || fail "history: expected 4 points"
[[ $(count history '<circle class="pt flagged"') == 1 ]] || fail "history: expected 1 flagged point"

browse regressions /regressions
expect regressions "Open (1)" "Cleared (1)" "+20.0%"

browse workers /workers
expect workers "w-a100-0" "quarantined" "NVIDIA A100"

browse compare "/compare?base=c1c1&head=c4c4"
expect compare "+25.00%" "status ok → mismatch"

# The JSON twins answer too (same numbers as kb's --json; tests/unit/coordinator/dashboard_test.cpp).
curl -sf "$base/runs/4?format=json" | python3 -c \
  'import json,sys; j=json.load(sys.stdin); assert abs(j["summary"]["fast_1"]-2/3) < 1e-9, j["summary"]' ||
  fail "runs/4?format=json"
csp=$(curl -sfI "$base/" | tr -d '\r' | sed -n 's/^Content-Security-Policy: //Ip')
[[ $csp == "default-src 'none'"* ]] || fail "no Content-Security-Policy on /: '$csp'"
echo "PASS: 6 pages in $browser, DOM, points, console and network checked"
