#!/usr/bin/env bash
# Installs the Debian packages DayZero builds and tests with.
# Idempotent and non-interactive: asks apt only for what is missing, and does
# nothing at all (no apt-get update) when everything is already there.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  nlohmann-json3-dev   # JSON for configs, plans, results
  libcli11-dev         # the dayzero command line
  libeigen3-dev        # CPU backend kernels
  libboost-graph-dev   # cluster topology graphs
  libyaml-cpp-dev      # deploy/: TensorRT-LLM extra-options YAML
  libgtest-dev libgmock-dev  # unit tests
  libopenmpi-dev openmpi-bin  # executor/ MPI communicator (optional: built only when found)
  qt6-base-dev qt6-charts-dev libqt6opengl6-dev qt6-qpa-plugins libgl-dev fonts-dejavu-core  # gui/ desktop app (offscreen for tests)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
