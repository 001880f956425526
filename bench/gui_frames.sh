#!/usr/bin/env bash
# The GUI frame-time figure: a 20k-Function graph with a 10M-event
# trace, `hookscope --bench-frames` under Xvfb, repeated; prints each run and
# the median of the medians.
#   bench/gui_frames.sh                 # 5 runs of 300 frames
#   bench/gui_frames.sh --play 120000   # playing 2,000 events a frame (a seek every frame)
#   RUNS=3 FRAMES=200 bench/gui_frames.sh
#   FUNCTIONS=5000 EVENTS=1000000 bench/gui_frames.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
RUNS="${RUNS:-5}"
FRAMES="${FRAMES:-300}"
FUNCTIONS="${FUNCTIONS:-20000}"
EVENTS="${EVENTS:-10000000}"
TRACE="${TRACE:-${TMPDIR:-/tmp}/hookscope_gui_${FUNCTIONS}f_${EVENTS}e.hstrace}"

bench_build hookscope make_gui_trace
[[ -f "$TRACE" ]] || "$BUILD_DIR/bench/make_gui_trace" "$TRACE" "$FUNCTIONS" "$EVENTS"

medians=()
for ((i = 1; i <= RUNS; i++)); do
  line="$(xvfb-run -a -s "-screen 0 1600x1000x24" "$BUILD_DIR/app/hookscope" "$TRACE" \
            --bench-frames "$FRAMES" "$@" | grep 'median CPU frame time')"
  echo "run $i: $line"
  medians+=("$(sed -E 's/.*median CPU frame time ([0-9.]+) ms.*/\1/' <<<"$line")")
done
printf '%s\n' "${medians[@]}" | sort -g | awk '{a[NR]=$1} END {printf "median of %d runs: %.3f ms per frame (target <= 8 ms)\n", NR, a[int((NR+1)/2)]}'
