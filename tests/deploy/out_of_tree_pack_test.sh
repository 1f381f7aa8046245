#!/usr/bin/env bash
# A candidate pack built outside the tree, as docs/writing-a-kernel.md tells a kernel engineer:
# `cmake --install --component dev` into a temp prefix, docs/examples/out-of-tree-pack configured
# and built against it with find_package(kbfleet) + kbfleet_add_pack (CUDA compile-only without a
# GPU), its table checked (custom L1_098 only, no reference, cpu_fp32 twins, kb_pack_v1 the only
# export), then `kb submit --pack` through a local stack on the CPU device: the run carries the
# pack's hash and its jobs end `ok`.
# usage: out_of_tree_pack_test.sh BUILD_DIR SOURCE_DIR   (skips without a CUDA build or PostgreSQL)
set -euo pipefail
build=$(realpath "$1") src=$(realpath "$2")
skip() { echo "skip: $*"; exit 77; }
fail() { echo "FAIL: $*"; [[ -f ${tmp:-}/stack.out ]] && tail -n 30 "$tmp/stack.out"; exit 1; }
[[ -f $build/kernels/libkb_impl_registry.a ]] || skip "kbfleet was built without CUDA: its packs hold no custom"
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || skip "PostgreSQL is not installed"
tmp=$(mktemp -d)
chmod 755 "$tmp"  # the postgres user (when we are root) must reach the local stack's cluster
stack=$tmp/stack
# The prefix and the example's build at a fixed place inside the build tree, so that ccache
# (CCACHE_BASEDIR) finds the example's objects again on the next run.
work=$build/tests/deploy/out-of-tree-pack
rm -rf "$work"
trap 'KB_BUILD_DIR=$build bash "$src/deploy/local-stack.sh" --stop "$stack" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
start=$(date +%s)

cmake --install "$build" --prefix "$work/prefix" --component dev > "$tmp/install.log"
# Every file under the prefix: a destination that is not relative would write outside it.
if grep -v "^-- Install configuration" "$tmp/install.log" | grep -qv -e "-- Installing: $work/prefix/" -e "-- Up-to-date: $work/prefix/"; then
  cat "$tmp/install.log"
  fail "the dev component installs outside the prefix"
fi
[[ -f $work/prefix/lib/cmake/kbfleet/kbfleetConfig.cmake && -f $work/prefix/include/kbfleet/kernels/implementation.h ]] ||
  fail "the dev component installed no package config or headers"

launchers=()
if command -v ccache >/dev/null; then
  launchers=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$src/docs/examples/out-of-tree-pack" -B "$work/example" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CUDA_COMPILER="${CUDACXX:-/usr/local/cuda/bin/nvcc}" \
  "${launchers[@]}" > "$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; fail "configure"; }
cmake --build "$work/example" > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "build"; }
pack=$work/example/libmy_kernels.so
built=$(date +%s)

exports=$(nm -D --defined-only "$pack" | awk '$2 == "T" || $2 == "D" || $2 == "B" {print $3}' | sort -u)
[[ $exports == kb_pack_v1 ]] || fail "the pack exports more than kb_pack_v1: $exports"
specs=$(find "$src/problems" -maxdepth 1 -name 'L*.yaml' | wc -l)  # one table entry per spec
python3 - "$pack" "$specs" <<'PY' || fail "the pack's table"
import ctypes, sys
class Table(ctypes.Structure):
    _fields_ = [("abi", ctypes.c_uint32), ("version", ctypes.c_char_p), ("commit", ctypes.c_char_p),
                ("build", ctypes.c_char_p), ("count", ctypes.CFUNCTYPE(ctypes.c_int32)),
                ("problem", ctypes.CFUNCTYPE(ctypes.c_char_p, ctypes.c_int32)),
                ("has", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_int32))]
lib = ctypes.CDLL(sys.argv[1])
lib.kb_pack_v1.restype = ctypes.POINTER(Table)
t = lib.kb_pack_v1().contents
REFERENCE, CUSTOM, GOLDEN, FP32 = 0, 1, 2, 3
got = {(p, v): t.has(p, v) for p in (b"L1_098", b"L2_017") for v in (REFERENCE, CUSTOM, GOLDEN, FP32)}
want = {(b"L1_098", CUSTOM): 1, (b"L1_098", FP32): 1, (b"L2_017", FP32): 1}
assert t.abi == 1, t.abi
assert all(got[k] == want.get(k, 0) for k in got), got
assert t.count() == int(sys.argv[2]), (t.count(), sys.argv[2])
print("pack table ok:", t.version.decode(), t.build.decode())
PY

# --timeout: storing a 14 MB pack takes the coordinator a few seconds on busy cores.
KB_BUILD_DIR=$build bash "$src/deploy/local-stack.sh" --device cpu --suite L1_098,L2_017 --time-cap 1 \
  --state "$stack" --keep -- --pack "$pack" --timeout 60 > "$tmp/stack.out" 2>&1 || fail "kb submit --pack through the local stack"
sha=$(sha256sum "$pack" | cut -d' ' -f1)
ok=$("$src/tools/pg-local.sh" psql "$stack/pg" -tA -c "SELECT count(*) FROM results r JOIN runs u ON u.id = r.run_id
       WHERE u.pack_hash = '$sha' AND r.status = 'ok' AND r.device_kind = 'cpu'")
[[ $ok == 2 ]] || fail "expected 2 ok results of pack $sha, found '$ok'"
echo "ok: installed, built the example in $((built - start)) s, ran L1_098 and L2_017 with it on the CPU device ($(( $(date +%s) - start )) s in all)"
