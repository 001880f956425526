#!/usr/bin/env bash
# Builds and runs the benchmarks; prints every benchmark's aggregates, then the medians.
#   bench/run.sh                      # every benchmark binary, 5 repetitions
#   BENCHES="bench_hooks bench_ddp" bench/run.sh   # some of them
#   REPS=3 bench/run.sh --benchmark_filter=DelPostHook   # extra args go to both binaries
# Build type: the project default (RelWithDebInfo, -O2; it shares the warm ccache), or
# BUILD_TYPE=Release. Set BUILD_DIR to use another tree (a separate one for benchmarks).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
REPS="${REPS:-5}"
BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}"
JOBS="${JOBS:-1}"

if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DHOOKSCOPE_GUI=OFF -DHOOKSCOPE_BENCH=ON \
    -DCMAKE_BUILD_TYPE="$BUILD_TYPE"
fi
BENCHES_SET="${BENCHES:+1}"
# One benchmark program a line, so that lines added by several branches merge.
ALL_BENCHES=(
  bench_hooks
  bench_engine
  bench_trace
  bench_analysis
  bench_diff
  bench_export
  bench_ddp
  bench_layout
  bench_playback
)
BENCHES="${BENCHES:-${ALL_BENCHES[*]}}"
# shellcheck disable=SC2086
ninja -C "$BUILD_DIR" -j"$JOBS" $BENCHES

OUT_DIR="$(mktemp -d)"
trap 'rm -rf "$OUT_DIR"' EXIT
status=0
for bin in $BENCHES; do
  echo "==== $bin (repetitions=$REPS) ===="
  "$BUILD_DIR/bench/$bin" --benchmark_repetitions="$REPS" \
    --benchmark_report_aggregates_only=true "$@" | tee "$OUT_DIR/$bin.txt" || status=1
done

# The GPU check's figures: a plain program (scripts/gpu-check.sh); exit 3 means no GPU.
if [[ " $BENCHES " == *" bench_gpu "* ]] || [[ -z "${BENCHES_SET:-}" ]]; then
  ninja -C "$BUILD_DIR" -j"$JOBS" bench_gpu
  echo "==== bench_gpu ===="
  rc=0
  "$BUILD_DIR/bench/bench_gpu" || rc=$?
  if [[ $rc -eq 3 ]]; then echo "bench_gpu: no GPU here, skipped"; elif [[ $rc -ne 0 ]]; then status=1; fi
fi

# The DDP step against PyTorch's, interleaved rounds (the figure docs/performance.md quotes).
if [[ -z "${BENCHES_SET:-}" ]]; then
  echo "==== bench/ddp_vs_torch.sh $REPS ===="
  BUILD_DIR="$BUILD_DIR" "$ROOT/bench/ddp_vs_torch.sh" "$REPS" || status=1
fi

echo
echo "==== medians of $REPS repetitions ===="
grep -h '_median' "$OUT_DIR"/*.txt | sed 's/_median / /'
[[ -n "${BENCHES_SET:-}" ]] || { ninja -C "$BUILD_DIR" -j"$JOBS" bench_layout_scale && "$BUILD_DIR/bench/bench_layout_scale" --benchmark_repetitions="$REPS" --benchmark_report_aggregates_only=true | grep -E 'Benchmark|_median' || status=1; }  # layout at 1M Functions (bench/scale_gui.sh: the GUI on 100M events)
exit $status
