# Sourced by the bench scripts: ROOT (the checkout), BUILD_DIR (default
# build/) and bench_build TARGET... which configures BUILD_DIR with the
# benchmarks on when it has no build yet, then builds the targets.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
bench_build() {
  if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
    cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DHOOKSCOPE_BENCH=ON
  fi
  ninja -C "$BUILD_DIR" "$@"
}
