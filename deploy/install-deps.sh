#!/usr/bin/env bash
# Installs the Debian 12 packages kbfleet needs to build, test and run. Idempotent: does nothing
# when every package is already installed. Needs root (CI runs as root) or sudo.
#
# usage: deploy/install-deps.sh [PACKAGE...]   (default: the build, test and run packages below;
#        deploy/install-test-deps.sh passes the deployment tests' own list)
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libzmq3-dev cppzmq-dev libpqxx-dev libyaml-cpp-dev libboost-dev libssl-dev
  nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev librandom123-dev libgtest-dev
  postgresql-15 python3 bubblewrap clang-format
)
[ $# -eq 0 ] || packages=("$@")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
