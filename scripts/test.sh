#!/usr/bin/env bash
# Sets up (Debian packages), builds and runs the whole test suite headless.
#   scripts/test.sh                 the default build in build/
#   HOOKSCOPE_SANITIZE=address scripts/test.sh   ASan+UBSan build in build-asan/
#   HOOKSCOPE_SANITIZE=thread  scripts/test.sh   TSan build in build-tsan/
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

sanitize="${HOOKSCOPE_SANITIZE:-}"
dir=build
[[ "$sanitize" == "address" ]] && dir=build-asan
[[ "$sanitize" == "thread" ]] && dir=build-tsan

cmake -S . -B "$dir" -G Ninja -DHOOKSCOPE_SANITIZE="$sanitize" >/dev/null
cmake --build "$dir" -j"$(nproc)"
cd "$dir"
ctest --output-on-failure -j"$(nproc)"
