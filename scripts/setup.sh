#!/usr/bin/env bash
# Installs, from Debian's archive only, the packages hookscope needs to build,
# test and run. Idempotent: packages already present are not touched and
# `apt-get update` runs only when something is missing.
#   scripts/setup.sh          build + tests + GUI
#   scripts/setup.sh --bench  also what the benchmarks compare against
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libopenblas-dev libzstd-dev libcli11-dev libfmt-dev nlohmann-json3-dev
  doctest-dev libbenchmark-dev libgloo-dev
  libimgui-dev libstb-dev libglfw3-dev python3-glad
  xvfb xauth fonts-dejavu-core help2man
  libtorch-dev python3-torch pybind11-dev python3-dev
  redis-server procps python3
  ccache       # scripts/test.sh compiles through it when present
  debootstrap  # fresh Debian roots: the package test (bookworm), the PyTorch 2.6 root (trixie)
  clang libclang-rt-14-dev  # libFuzzer + ASan/UBSan for .ci/run (scripts/fuzz.sh)
)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(graphviz python3-torch valgrind)  # valgrind: bench/torch_bridge_instructions.py
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
