#!/usr/bin/env bash
# Fetches, on this machine (Debian's archive reachable), the .deb files of what the
# GPU checks build with and the GPU machine lacks: nlohmann-json and Eigen (headers)
# and GoogleTest (its sources, built there with that machine's compiler); for the
# dayzero command's closed loop there, CLI11 and Boost (headers) and yaml-cpp (and its
# shared library). They go to gpu-deps/ (git-ignored, ~12 MB), which the device run
# carries; tests/gpu/run.sh unpacks them with dpkg -x into a prefix of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p gpu-deps
cd gpu-deps
for pkg in nlohmann-json3-dev libeigen3-dev googletest libcli11-dev libboost1.74-dev libyaml-cpp-dev libyaml-cpp0.7; do
  if ! ls "${pkg}"_*.deb >/dev/null 2>&1; then
    apt-get download "$pkg" 2>&1 | grep -v "^W: Download is performed unsandboxed" || true
  fi
done
ls -l ./*.deb
