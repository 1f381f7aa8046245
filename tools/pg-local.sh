#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests, the local stack and debugging.
#
# usage: tools/pg-local.sh start DIR    initdb DIR/data when DIR holds no cluster, start it on a
#                                       free loopback port (the same port again on a restart, so
#                                       clients' URLs stay valid), print the URL, write it to DIR/url
#        tools/pg-local.sh stop DIR     fast shutdown (no-op when not running)
#        tools/pg-local.sh url DIR      print the URL
#        tools/pg-local.sh status DIR   exit 0 when running
#        tools/pg-local.sh psql DIR [ARGS...]   psql on the cluster's postgres database
#
# The URL is postgresql://postgres@127.0.0.1:PORT/postgres (superuser `postgres`, trust auth on
# loopback only; the unix socket lies in DIR). fsync stays on: the fault tests stop the cluster and
# check that nothing committed was lost. PostgreSQL refuses to run as root, so as root the server
# runs as the `postgres` user (or `nobody` where there is none; KB_PG_USER chooses), which then
# owns DIR (DIR's parents must let it through).
# env: KB_PG_BIN (default /usr/lib/postgresql/15/bin, else pg_config --bindir).
set -euo pipefail

die() { echo "pg-local: $*" >&2; exit 1; }

pg_bin() {
  if [[ -n ${KB_PG_BIN:-} ]]; then echo "$KB_PG_BIN"; return; fi
  if [[ -x /usr/lib/postgresql/15/bin/initdb ]]; then echo /usr/lib/postgresql/15/bin; return; fi
  local d
  for d in /usr/lib/postgresql/*/bin; do [[ -x $d/initdb ]] && { echo "$d"; return; }; done
  command -v pg_config >/dev/null && { pg_config --bindir; return; }
  die "no PostgreSQL server binaries found (set KB_PG_BIN)"
}

# The user the server runs as when we are root: $KB_PG_USER, else `postgres`, else `nobody` (GPU
# nodes often have no PostgreSQL package and so no postgres user; any unprivileged user will do).
owner_user() {
  local u
  for u in ${KB_PG_USER:-} postgres nobody; do
    if id "$u" >/dev/null 2>&1; then echo "$u"; return; fi
  done
  die "running as root needs an unprivileged user to run the server (set KB_PG_USER)"
}

# Runs a command as the cluster's owner: owner_user when we are root, else ourselves.
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u "$(owner_user)" -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

port_in_use() {  # exit 0 when something listens on 127.0.0.1:$1
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

url_of() { echo "postgresql://postgres@127.0.0.1:$(cat "$1/port")/postgres"; }

is_running() { as_owner "$BIN/pg_ctl" status -D "$1/data" >/dev/null 2>&1; }

init_cluster() {
  local dir=$1
  as_owner "$BIN/initdb" -D "$dir/data" -U postgres -E UTF8 --locale=C \
    --auth-local=trust --auth-host=trust >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; die "initdb failed (log: $dir/initdb.log)"; }
  # Only loopback connections exist (listen_addresses below); pg_hba from initdb already trusts
  # 127.0.0.1/32 and ::1 with --auth-host=trust.
  as_owner tee -a "$dir/data/postgresql.conf" >/dev/null <<EOF
# pg-local.sh
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
fsync = on
max_connections = 200
logging_collector = off
EOF
}

cmd_start() {
  local dir=$1
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [[ $(id -u) -eq 0 ]]; then
    local user
    user=$(owner_user)
    chown "$user:" "$dir"
    runuser -u "$user" -- test -w "$dir" ||
      die "the $user user cannot write $dir (a parent directory is closed to it?)"
  fi
  [[ -f $dir/data/PG_VERSION ]] || init_cluster "$dir"
  if is_running "$dir"; then url_of "$dir" > "$dir/url"; cat "$dir/url"; return; fi
  local attempt port
  for attempt in 1 2 3 4 5; do
    if [[ -f $dir/port ]]; then
      port=$(cat "$dir/port")  # a restart keeps its port
    else
      port=$(free_port)
    fi
    if port_in_use "$port"; then
      [[ -f $dir/port ]] && die "port $port (from $dir/port) is taken by another process"
      continue
    fi
    if as_owner "$BIN/pg_ctl" start -w -t 60 -D "$dir/data" -l "$dir/server.log" \
        -o "-p $port" >/dev/null; then
      echo "$port" > "$dir/port"
      url_of "$dir" > "$dir/url"
      cat "$dir/url"
      return
    fi
    [[ -f $dir/port ]] && break
    sleep 0.2  # another process took the free port between our probe and the bind
  done
  tail -n 20 "$dir/server.log" >&2 || true
  die "could not start PostgreSQL in $dir (log: $dir/server.log)"
}

cmd_stop() {
  local dir=$1
  [[ -d $dir/data ]] || return 0
  is_running "$dir" || return 0
  as_owner "$BIN/pg_ctl" stop -w -m fast -D "$dir/data" >/dev/null
}

main() {
  [[ $# -ge 2 ]] || die "usage: $0 start|stop|url|status|psql DIR [ARGS...]"
  local cmd=$1 dir=$2
  shift 2
  BIN=$(pg_bin)
  case $cmd in
    start) cmd_start "$dir" ;;
    stop) cmd_stop "$dir" ;;
    url) [[ -f $dir/port ]] || die "no cluster was started in $dir"; url_of "$dir" ;;
    status) is_running "$dir" ;;
    psql)
      [[ -f $dir/port ]] || die "no cluster was started in $dir"
      local psql=psql
      command -v psql >/dev/null || psql=$BIN/psql
      exec "$psql" "$(url_of "$dir")" "$@" ;;
    *) die "unknown command '$cmd' (start|stop|url|status|psql)" ;;
  esac
}

main "$@"
