#!/usr/bin/env bash
# Builds the kbfleet images from Debian packages only: a Debian 12 root made by mmdebstrap (the
# libraries the packages depend on; PostgreSQL 15 for the demo database), imported into podman,
# then `podman build --pull=never` with the kbfleet .debs (made here by cpack from BUILD_DIR).
#
#   localhost/kbfleet-coordinator:VERSION  kb-coordinator (+ kb)
#   localhost/kbfleet-worker:VERSION       kb-worker, kb-executor (CUDA libraries: see its recipe)
#   localhost/kbfleet-postgres:VERSION     PostgreSQL 15 for the demo stack
#
# usage: deploy/containers/build.sh BUILD_DIR [CACHE_DIR]
#   CACHE_DIR (default BUILD_DIR/deploy-cache) keeps the mmdebstrap roots between runs, keyed by
#   their package lists. Needs root, mmdebstrap, podman and runc.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: build.sh BUILD_DIR [CACHE_DIR]}" && pwd)
cache=${2:-$build/deploy-cache}
. "$here/images.env"
. "$here/podman-env.sh"
say() { echo "containers: $*" >&2; }
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$cache"

say "packages (cpack)"
(cd "$ctx" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$ctx/pkgs" >"$ctx/cpack.log" 2>&1) ||
  { cat "$ctx/cpack.log"; exit 1; }
cp "$ctx"/pkgs/*.deb "$ctx/"
cp "$here"/Containerfile.* "$here/postgres-entrypoint.sh" "$ctx/"

# One Debian root for all three images (debian-root.sh): the packages' libraries and PostgreSQL.
root=$("$here/debian-root.sh" "$cache" "$ctx"/*.deb)
podman import --quiet "$root" localhost/kbfleet-runtime:latest >/dev/null

for what in coordinator worker postgres; do
  var=KB_IMAGE_${what^^}
  image=localhost/${!var}:$version
  say "podman build $image"
  podman build --pull=never --quiet -f "$ctx/Containerfile.$what" -t "$image" "$ctx" >/dev/null
done
say "built ${KB_IMAGE_COORDINATOR}, ${KB_IMAGE_WORKER}, ${KB_IMAGE_POSTGRES} at $version"
