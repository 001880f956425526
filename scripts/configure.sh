#!/usr/bin/env bash
# Configures one of the project's build folders and prints its name; shared
# by scripts/test.sh and scripts/fuzz.sh so that both configure build-asan/
# alike (a second configuration would recompile everything).
#   scripts/configure.sh            build/       the default build
#   scripts/configure.sh address    build-asan/  ASan+UBSan, with clang (when
#                                   installed) also the fuzz build (Note [One
#                                   sanitizer build], CMakeLists.txt)
#   scripts/configure.sh thread     build-tsan/  TSan
# Sanitizer builds: core and the headless tests only (no GUI under Xvfb, no
# benchmarks, no CUDA).
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize="${1:-}"
case "$sanitize" in
  "") dir=build ;;
  address) dir=build-asan ;;
  thread) dir=build-tsan ;;
  *) echo "configure: unknown sanitizer '$sanitize' (address or thread)" >&2; exit 2 ;;
esac
args=(-DHOOKSCOPE_SANITIZE="$sanitize")
if [[ -n "$sanitize" ]]; then
  args+=(-DHOOKSCOPE_GUI=OFF -DHOOKSCOPE_BENCH=OFF -DHOOKSCOPE_CUDA=OFF)
fi
if [[ "$sanitize" == address ]] && command -v clang++ >/dev/null; then
  args+=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
  # A build-asan/ configured with gcc before: CMake cannot change compilers
  # in place, so it starts over.
  cached="$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$dir/CMakeCache.txt" 2>/dev/null || true)"
  if [[ -n "$cached" && "$cached" != *clang++* ]]; then
    rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
  fi
fi
if command -v ccache >/dev/null; then
  args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$dir" -G Ninja "${args[@]}" >/dev/null
echo "$dir"
