#!/usr/bin/env bash
# Sets up, builds, and runs the main job: record the autograd demo headless and
# print what it recorded. Extra arguments go to `hookscope-cli record`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j"$(nproc)" --target hookscope-cli
exec ./build/app/hookscope-cli record autograd-demo "$@"
