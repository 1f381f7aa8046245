#!/usr/bin/env bash
# Prints the path of a Debian 12 (bookworm) minbase root tarball holding what the given kbfleet
# .debs depend on, plus PostgreSQL 15 (the demo database image and the packages test share this
# one root: mmdebstrap takes minutes on CI's 2 cores, so it runs once). Made by mmdebstrap from
# the Debian mirror on first use, then cached in CACHE_DIR under a key of its package list.
# usage: debian-root.sh CACHE_DIR DEB...     (needs root and mmdebstrap)
set -euo pipefail
cache=${1:?usage: debian-root.sh CACHE_DIR DEB...}
shift
deps=$( (for d in "$@"; do dpkg-deb -f "$d" Depends; done; echo ", postgresql-15") | tr ',' '\n' |
       sed 's/(.*)//; s/ //g' | grep -v '^kbfleet' | grep -v '^$' | sort -u | paste -sd, -)
key=$(echo "$deps" | sha256sum | cut -c1-12)
tar=$cache/bookworm-$key.tar
if [[ ! -f $tar ]]; then
  mkdir -p "$cache"
  start=$(date +%s)
  mmdebstrap --variant=minbase --format=tar --include="$deps" bookworm "$tar.part" \
    "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian-security bookworm-security main" >"$tar.log" 2>&1 ||
    { tail -20 "$tar.log" >&2; exit 1; }
  mv "$tar.part" "$tar"
  echo "debian-root: made $tar in $(( $(date +%s) - start )) s ($deps)" >&2
fi
echo "$tar"
