#!/usr/bin/env bash
# Sets up (Debian packages), builds and runs the whole test suite headless.
#   scripts/test.sh                 the default build in build/
#   HOOKSCOPE_SANITIZE=address scripts/test.sh   ASan+UBSan build in build-asan/
#   HOOKSCOPE_SANITIZE=thread  scripts/test.sh   TSan build in build-tsan/
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

sanitize="${HOOKSCOPE_SANITIZE:-}"
# The torch tests under PyTorch 2.6 (label torch2, a Debian trixie root to
# download and build) are a step of their own in .ci/run. Sanitizer builds
# (scripts/configure.sh: core and the headless tests, no CUDA) leave out the
# GUI's tests, and packaging (install: not memory; package_deb takes
# minutes); ASan's own checks make the timed tests slower, not wrong.
exclude=(-LE torch2)
[[ -n "$sanitize" ]] && exclude=(-LE "gui|gpu|torch2|install")
dir="$(scripts/configure.sh "$sanitize")"
cmake --build "$dir" -j"$(nproc)"
[[ "$sanitize" == "thread" ]] && export TSAN_OPTIONS="suppressions=$PWD/scripts/tsan.supp ${TSAN_OPTIONS:-}"
cd "$dir"
ctest --output-on-failure -j"$(nproc)" "${exclude[@]}"
