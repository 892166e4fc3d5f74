#!/usr/bin/env bash
# Installs the Debian 12 packages Lowerscope needs to build, test and run (only those missing).
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build ccache pkg-config
  qt6-base-dev qt6-svg-dev qt6-charts-dev libqt6opengl6-dev libqscintilla2-qt6-dev
  graphviz libgraphviz-dev nlohmann-json3-dev libzip-dev libonnx-dev libprotobuf-dev protobuf-compiler
  llvm-14-dev libclang-14-dev libclang-cpp14-dev libomp-14-dev clang-14 libclang-rt-14-dev libopenblas-dev libfftw3-dev python3-dev
  xvfb xauth chromium
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages are installed"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
