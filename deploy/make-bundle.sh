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

# Never bundled: glibc and the driver (they must match the host), and cuBLAS/cuDNN (0.5-1 GB;
# every GPU node that runs CUDA work has them; `run` finds them, see below).
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libutil\.|libcuda\.|libnvidia-|libcublas|libcudnn)'

for bin in "$@"; do
  [[ $bin == *.so ]] && dest=lib || dest=bin
  cp -L "$bin" "$out/$dest/"
  strip --strip-debug "$out/$dest/$(basename "$bin")"
  ldd "$bin" | awk '/=> \// {print $1, $3}' | while read -r name path; do
    if ! [[ $name =~ $skip ]]; then cp -Ln "$path" "$out/lib/$name" 2>/dev/null || true; fi
  done
done
rm -rf "$out/problems" && cp -r "$repo/problems" "$out/problems"

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
prog=$1; shift
exec "$here/bin/$prog" "$@"
RUN
chmod +x "$out/run"
du -sh "$out" | awk '{print "bundle: " $1 " in '"$out"'"}'
