#!/usr/bin/env bash
# The Debian packages (CPack): builds kbfleet-{common,worker,coordinator,cli}, installs them with
# dpkg into a fresh Debian 12 root made by mmdebstrap, and runs `kb-worker --version`,
# `kb-coordinator --version` and `kb --help` there; checks the maintainer scripts made the
# kbfleet user and that the units and config files are in place.
# The base root (deploy/containers/debian-root.sh: minbase + the libraries the packages depend
# on) is made once by mmdebstrap and cached in $KB_DEPLOY_CACHE (default BUILD_DIR/deploy-cache;
# CI keeps it beside its ccache, so a fresh clone does not rebuild it).
# Needs root (chroot), mmdebstrap, dpkg-deb; exit 77 (skip) without them.
# usage: packages_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "${1:?usage: packages_test.sh BUILD_DIR}" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
skip() { echo "skip: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[[ $(id -u) == 0 ]] || skip "needs root (chroot)"
for tool in mmdebstrap dpkg-deb cpack; do command -v $tool >/dev/null || skip "$tool not installed"; done
tmp=$(mktemp -d)
trap 'umount "$tmp/root/proc" 2>/dev/null || true; rm -rf "$tmp"' EXIT
t0=$(date +%s)

(cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/pkgs" >"$tmp/cpack.log" 2>&1) ||
  { cat "$tmp/cpack.log"; fail "cpack"; }
debs=("$tmp"/pkgs/*.deb)
[[ ${#debs[@]} == 4 ]] || fail "expected 4 packages, got ${#debs[@]}: ${debs[*]}"
t1=$(date +%s)

base=$("$repo/deploy/containers/debian-root.sh" "${KB_DEPLOY_CACHE:-$build/deploy-cache}" "${debs[@]}") || fail "debian-root.sh"
t2=$(date +%s)

root=$tmp/root
mkdir "$root"
tar -C "$root" -xf "$base"
mount -t proc proc "$root/proc"  # the programs find their data from /proc/self/exe
cp "${debs[@]}" "$root/tmp/"
chroot "$root" sh -c 'dpkg -i /tmp/*.deb' >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; fail "dpkg -i"; }
# A CUDA build's programs also need NVIDIA's libraries, which a GPU node brings itself (the CUDA
# toolkit or NVIDIA's packages, not Debian's): copy them from this machine as such a node would
# have them. Anything else missing is a missing Depends and fails the test.
for prog in kb kb-worker kb-coordinator kb-executor; do
  chroot "$root" ldd "/usr/bin/$prog" | awk '/not found/ {print $1}' | while read -r lib; do
    [[ $lib =~ ^lib(cu|nv) ]] || fail "/usr/bin/$prog needs $lib, which no Depends brings"
    host=$(ldd "$(find "$build" -name "$prog" -type f -perm -u+x | head -1)" | awk -v l="$lib" '$1 == l {print $3}')
    [[ -n $host ]] || fail "$lib not found on this machine either"
    mkdir -p "$root/usr/local/lib" && cp -L "$host" "$root/usr/local/lib/"
  done
done
chroot "$root" ldconfig
# grep reads to the end (no -q): under pipefail, `grep -q` leaving early makes a writer of more
# than one pipe buffer die of SIGPIPE and the check fail although the line was there.
chroot "$root" kb-worker --version | grep "^kb-worker " >/dev/null || fail "kb-worker --version"
chroot "$root" kb-coordinator --version | grep "^kb-coordinator " >/dev/null || fail "kb-coordinator --version"
chroot "$root" kb --help | grep "Usage" >/dev/null || fail "kb --help"
chroot "$root" getent passwd kbfleet >/dev/null || fail "no kbfleet user"
for f in /lib/systemd/system/kb-worker@.service /lib/systemd/system/kb-coordinator.service \
         /etc/kbfleet/worker.yaml /etc/kbfleet/coordinator.yaml /usr/share/kbfleet/problems/suites.yaml; do
  [[ -e $root$f ]] || fail "$f is not installed"
done
# The installed programs find the packaged problem specs without any environment.
chroot "$root" kb problems list | grep L1_003 >/dev/null || fail "kb problems list in the installed root"
t3=$(date +%s)
echo "ok: 4 packages installed and ran; cpack $((t1 - t0)) s, base root $((t2 - t1)) s, install and run $((t3 - t2)) s"
