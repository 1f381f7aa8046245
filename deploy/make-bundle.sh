#!/usr/bin/env bash
# Makes a relocatable bundle: the given binaries plus every shared library they need that is not
# part of glibc or the NVIDIA driver, and the problem specs. GPU nodes often lack packages
# (ZeroMQ, libpqxx, yaml-cpp, libsodium, PostgreSQL): a bundle runs there with `bundle/run CMD ...`.
#
# When kb-coordinator is among the binaries, the bundle can also run the local stack
# (deploy/local-stack.sh: `OUT/run local-stack ...` or `OUT/local-stack.sh ...`): it then carries
# the migrations (schemas/), tools/pg-local.sh and PostgreSQL's server binaries, modules and share
# directory with their libraries (pgsql/, laid out as under /usr so that initdb and postgres find
# share/ and lib/ relative to their own path).
#
# usage: deploy/make-bundle.sh OUT_DIR BINARY...
#   e.g. deploy/make-bundle.sh /tmp/kbfleet build/cli/kb build/coordinator/kb-coordinator \
#          build/worker/kb-worker build/executor/kb-executor build/kernels/libkbpack.so build/kernels/libkbref.so
# env: KB_PG_BIN (default /usr/lib/postgresql/15/bin): the PostgreSQL to bundle.
set -euo pipefail

out=${1:?usage: make-bundle.sh OUT_DIR BINARY...}
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out/bin" "$out/lib"

# Never bundled: glibc and the driver (they must match the host), and cuBLAS/cuDNN (0.5-1 GB;
# every GPU node that runs CUDA work has them; `run` finds them, see below).
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libutil\.|libresolv\.|libnsl\.|libanl\.|libcuda\.|libnvidia-|libcublas|libcudnn)'

copy_deps() {  # copy_deps FILE DEST_DIR: the non-system shared libraries FILE needs
  ldd "$1" | awk '/=> \// {print $1, $3}' | while read -r name path; do
    if ! [[ $name =~ $skip ]]; then cp -Ln "$path" "$2/$name" 2>/dev/null || true; fi
  done
}

with_stack=0
for bin in "$@"; do
  [[ $bin == *.so ]] && dest=lib || dest=bin
  cp -L "$bin" "$out/$dest/"
  strip --strip-debug "$out/$dest/$(basename "$bin")"
  # The reference pack travels with its pin (docs/sandbox.md), re-pinned to the stripped bytes that
  # the bundle ships: a pin copied as built would refuse the stripped pack.
  if [[ -f $bin.sha256 ]]; then
    sha256sum "$out/$dest/$(basename "$bin")" | awk '{print $1}' > "$out/$dest/$(basename "$bin").sha256"
  fi
  copy_deps "$bin" "$out/lib"
  [[ $(basename "$bin") == kb-coordinator ]] && with_stack=1
done
rm -rf "$out/problems" && cp -r "$repo/problems" "$out/problems"

if [[ $with_stack == 1 ]]; then
  rm -rf "$out/schemas" "$out/tools" && mkdir -p "$out/tools"
  cp -r "$repo/schemas" "$out/schemas"
  cp "$repo/tools/pg-local.sh" "$out/tools/"
  cp "$repo/deploy/local-stack.sh" "$out/local-stack.sh"
  # PostgreSQL, relocatable: initdb and postgres find share/ and the modules' lib/ relative to
  # their own directory (the same relative layout as /usr/lib/postgresql/15/bin ->
  # /usr/share/postgresql/15), so pgsql/ mirrors /usr. The JIT (llvmjit, bitcode: LLVM is large)
  # stays behind; PostgreSQL runs without it.
  pg_bin=${KB_PG_BIN:-/usr/lib/postgresql/15/bin}
  pg_version=$(basename "$(dirname "$pg_bin")")
  pg=$out/pgsql
  rm -rf "$pg" && mkdir -p "$pg/lib/postgresql/$pg_version/bin" "$pg/lib/postgresql/$pg_version/lib" \
    "$pg/share/postgresql" "$pg/lib/deps"
  for tool in initdb pg_ctl postgres psql pg_isready; do
    cp -L "$pg_bin/$tool" "$pg/lib/postgresql/$pg_version/bin/"
    copy_deps "$pg_bin/$tool" "$pg/lib/deps"
  done
  for module in "$pg_bin"/../lib/*.so; do
    [[ $(basename "$module") == llvmjit* ]] && continue
    cp -L "$module" "$pg/lib/postgresql/$pg_version/lib/"
    copy_deps "$module" "$pg/lib/deps"
  done
  pg_share=$("$pg_bin/pg_config" --sharedir 2>/dev/null || echo "/usr/share/postgresql/$pg_version")
  cp -r "$pg_share" "$pg/share/postgresql/$pg_version"
  rm -rf "$pg/share/postgresql/$pg_version/man"
fi

cat > "$out/run" <<'RUN'
#!/usr/bin/env bash
# Runs a bundled program with the bundle's libraries and problem specs.
here=$(cd "$(dirname "$0")" && pwd)
libs="$here/lib"
# cuBLAS and cuDNN come from the node: the CUDA toolkit, the system, or a Python wheel.
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu \
         $(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) + "/lib")' 2>/dev/null) \
         $(python3 -c 'import nvidia.cublas, os; print(os.path.dirname(nvidia.cublas.__file__) + "/lib")' 2>/dev/null); do
  if ls "$d"/libcudnn.so.9 "$d"/libcublas.so.13 >/dev/null 2>&1; then libs="$libs:$d"; fi
done
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KB_PROBLEMS_DIR="${KB_PROBLEMS_DIR:-$here/problems}"
# The packs the GPU tests open by their build-tree paths, when the bundle carries them.
for pack in REF:libkbref.so BAD:libkbpack_bad_variants.so; do
  var=KB_${pack%%:*}_PACK file=$here/lib/${pack#*:}
  if [[ -z ${!var} && -f $file ]]; then export "$var=$file"; fi
done
prog=${1:?usage: run PROGRAM ARGS... (a program of bin/, or local-stack)}; shift
[[ $prog == local-stack ]] && exec "$here/local-stack.sh" "$@"
exec "$here/bin/$prog" "$@"
RUN
chmod +x "$out/run"
du -sh "$out" | awk '{print "bundle: " $1 " in '"$out"'"}'
