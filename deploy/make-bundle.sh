#!/usr/bin/env bash
# Makes a relocatable bundle: the given binaries plus every shared library they need that is not
# part of glibc or the NVIDIA driver, and the problem specs. GPU nodes often lack packages
# (ZeroMQ, libpqxx, yaml-cpp): a bundle runs there with `bundle/run CMD ...`.
#
# usage: deploy/make-bundle.sh OUT_DIR BINARY... [--with-libs-matching REGEX]
set -euo pipefail

out=${1:?usage: make-bundle.sh OUT_DIR BINARY...}
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/bin" "$out/lib"

# Libraries every Linux host with an NVIDIA driver already has, in a version that must match the
# host (glibc, the driver): never bundled.
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libutil\.|libcuda\.|libnvidia-)'

for bin in "$@"; do
  cp -L "$bin" "$out/bin/"
  strip --strip-debug "$out/bin/$(basename "$bin")"
  ldd "$bin" | awk '/=> \// {print $1, $3}' | while read -r name path; do
    if ! [[ $name =~ $skip ]]; then cp -Ln "$path" "$out/lib/$name" 2>/dev/null || true; fi
  done
done
rm -rf "$out/problems" && cp -r "$repo/problems" "$out/problems"

cat > "$out/run" <<'RUN'
#!/usr/bin/env bash
# Runs a bundled program with the bundle's libraries and problem specs.
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KB_PROBLEMS_DIR="${KB_PROBLEMS_DIR:-$here/problems}"
prog=$1; shift
exec "$here/bin/$prog" "$@"
RUN
chmod +x "$out/run"
du -sh "$out" | awk '{print "bundle: " $1 " in '"$out"'"}'
