#!/usr/bin/env bash
# The GPU check: on a machine with a GPU, builds hookscope with CUDA
# in its own build directory; prints the MLP training step time GPU vs CPU,
# the largest |GPU - CPU| difference and NCCL allreduce bandwidth over the
# GPUs present (bench/bench_gpu.cpp); runs the GPU tests (doctest suite
# "gpu"). Meant to finish in under 5 minutes (each phase has a time limit).
#
#   scripts/gpu-check.sh              # build in build-gpu-check/
#   BUILD_DIR=/tmp/b scripts/gpu-check.sh
#
# Exit codes: 0 passed, or skipped because there is no GPU (it says so);
# 1 a GPU test failed or a GPU result differs from the CPU by more than 1e-4;
# 2 the build failed; 124 a phase ran out of time.
# GPU_CHECK_STRICT=1 makes "no GPU" exit 3 instead of 0.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
ROOT="$(pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-gpu-check}"
JOBS="${JOBS:-$(nproc)}"
start=$(date +%s)

no_gpu() {
  echo "gpu-check: SKIPPED: no usable GPU here ($1). Nothing was measured."
  [[ "${GPU_CHECK_STRICT:-0}" == "1" ]] && exit 3
  exit 0
}

phase() { echo; echo "==== $1 ($(( $(date +%s) - start )) s) ===="; }

# Cheap checks first, so a machine without a GPU does not build for minutes.
if ! command -v nvidia-smi >/dev/null 2>&1 && [[ ! -e /dev/nvidia0 ]]; then
  no_gpu "no nvidia-smi and no /dev/nvidia0"
fi
if command -v nvidia-smi >/dev/null 2>&1; then
  if ! gpus="$(nvidia-smi -L 2>&1)" || ! grep -q '^GPU ' <<<"$gpus"; then
    no_gpu "nvidia-smi lists no GPU: $(head -1 <<<"$gpus")"
  fi
  phase "GPUs"
  echo "$gpus"
fi
NVCC="${NVCC:-/usr/local/cuda/bin/nvcc}"
if [[ ! -x "$NVCC" ]] && ! command -v nvcc >/dev/null 2>&1; then
  echo "gpu-check: a GPU is present but nvcc is not (looked for $NVCC and nvcc on PATH)"
  exit 2
fi

phase "build (CUDA on, GUI off) in $BUILD_DIR"
if ! timeout 240 cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
     -DHOOKSCOPE_CUDA=ON -DHOOKSCOPE_GUI=OFF -DHOOKSCOPE_BENCH=ON >"$BUILD_DIR.cmake.log" 2>&1; then
  tail -30 "$BUILD_DIR.cmake.log"
  echo "gpu-check: FAILED: cmake (log: $BUILD_DIR.cmake.log)"
  exit 2
fi
grep -E 'hookscope: (CUDA|NCCL)' "$BUILD_DIR.cmake.log"
timeout 240 ninja -C "$BUILD_DIR" -j"$JOBS" hookscope_tests hookscope-cli bench_gpu
rc=$?
if [[ $rc -ne 0 ]]; then
  echo "gpu-check: FAILED: build (exit $rc)"
  [[ $rc -eq 124 ]] && exit 124
  exit 2
fi

# The figures first: bench_gpu also tells whether the CUDA runtime sees a device.
phase "MLP step time, |GPU - CPU|, allreduce bandwidth"
timeout 120 "$BUILD_DIR/bench/bench_gpu"
bench_rc=$?
if [[ $bench_rc -eq 3 ]]; then
  no_gpu "built, but the CUDA runtime sees no usable device (see the line above)"
fi

phase "GPU tests (doctest suite gpu)"
timeout 150 "$BUILD_DIR/tests/hookscope_tests" --test-suite=gpu --no-intro
tests_rc=$?

phase "summary"
echo "GPU tests: $([[ $tests_rc -eq 0 ]] && echo passed || echo "FAILED (exit $tests_rc)")"
echo "GPU vs CPU figures: $([[ $bench_rc -eq 0 ]] && echo "ok (within 1e-4)" || echo "FAILED (exit $bench_rc)")"
echo "total: $(( $(date +%s) - start )) s"
[[ $tests_rc -eq 124 || $bench_rc -eq 124 ]] && exit 124
[[ $tests_rc -ne 0 || $bench_rc -ne 0 ]] && exit 1
exit 0
