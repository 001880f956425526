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

# Sanitizer builds: core and the headless tests only (no GUI under Xvfb),
# no CUDA; ASan's own checks make the timed tests slower, not wrong.
# The torch tests under PyTorch 2.6 (label torch2, a Debian trixie root to
# download and build) are a step of their own in .ci/run.
extra=()
exclude=(-LE torch2)
if [[ -n "$sanitize" ]]; then
  extra=(-DHOOKSCOPE_GUI=OFF -DHOOKSCOPE_BENCH=OFF -DHOOKSCOPE_CUDA=OFF)
  exclude=(-LE "gui|gpu|torch2|install")  # install: packaging, not memory; package_deb takes minutes
fi
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$dir" -G Ninja -DHOOKSCOPE_SANITIZE="$sanitize" "${launcher[@]}" "${extra[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
[[ "$sanitize" == "thread" ]] && export TSAN_OPTIONS="suppressions=$PWD/scripts/tsan.supp ${TSAN_OPTIONS:-}"
cd "$dir"
ctest --output-on-failure -j"$(nproc)" "${exclude[@]}"
