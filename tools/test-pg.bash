# Sourced by tools/test.sh and tools/sanitize.sh: the PostgreSQL server their store tests use.
#
# test_pg_ensure REPO: when KB_TEST_PG_URL is unset and PostgreSQL's server binaries are installed,
# starts a throwaway cluster (tools/pg-local.sh) in a fresh temporary directory, exports its URL as
# KB_TEST_PG_URL and stops and removes it when the calling script exits (an EXIT trap: the caller
# must not set its own). Without a URL and without PostgreSQL the store tests skip.
test_pg_ensure() {
  local repo=$1
  [[ -z ${KB_TEST_PG_URL:-} ]] || return 0
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || return 0
  test_pg_dir=$(mktemp -d "${TMPDIR:-/tmp}/kbtest-pg.XXXXXX")
  test_pg_repo=$repo
  trap '"$test_pg_repo/tools/pg-local.sh" stop "$test_pg_dir" >/dev/null 2>&1 || true; rm -rf "$test_pg_dir"' EXIT
  KB_TEST_PG_URL=$("$repo/tools/pg-local.sh" start "$test_pg_dir")
  export KB_TEST_PG_URL
  echo "test: PostgreSQL for the tests at $KB_TEST_PG_URL"
}
