#!/bin/sh
# Creates the cluster on first start (database kbfleet), then runs postgres in the foreground.
set -e
bin=/usr/lib/postgresql/15/bin
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -n "${POSTGRES_PASSWORD:-}" ]; then
    echo "$POSTGRES_PASSWORD" > /tmp/pwfile
    "$bin/initdb" -D "$PGDATA" -U postgres --auth=scram-sha-256 --pwfile=/tmp/pwfile >/dev/null
    rm -f /tmp/pwfile
  else
    "$bin/initdb" -D "$PGDATA" -U postgres --auth=trust >/dev/null
  fi
  echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
  echo "port = ${POSTGRES_PORT:-5432}" >> "$PGDATA/postgresql.conf"
  auth=trust; [ -n "${POSTGRES_PASSWORD:-}" ] && auth=scram-sha-256
  echo "host all all 0.0.0.0/0 $auth" >> "$PGDATA/pg_hba.conf"
  "$bin/pg_ctl" -D "$PGDATA" -o "-c listen_addresses='' -k /tmp" -w start >/dev/null
  "$bin/psql" -q -h /tmp -p "${POSTGRES_PORT:-5432}" -U postgres -c "CREATE DATABASE kbfleet"
  "$bin/pg_ctl" -D "$PGDATA" -w stop >/dev/null
fi
exec "$bin/postgres" -D "$PGDATA" -k /tmp
