#!/usr/bin/env bash
# The GUI at scale: on a 1M-Function trace of EVENTS events (default
# 100M), made by make_scale_trace (memory-capped). Prints the medians of REPS
# runs of: bench_scale_open's stages (load, scene, box sizes, layout, seek,
# RSS, in wall and CPU seconds), the app's peak RSS and wall time to a
# screenshot (load + layout + first frames), and its median CPU frame time
# with the whole graph fitted and zoomed to one Function (--select).
#   bench/scale_gui.sh [EVENTS=100000000] [FUNCTIONS=1000000]
# bench_scale_open's lazy_seek lines are the seek of a zoomed view without the
# whole State (Note [Lazy state]); state_at is the whole State.
# Needs the GUI build and xvfb-run. Scratch goes to $SCALE_DIR (/tmp/hookscope_scale).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
EVENTS="${1:-100000000}"
FUNCTIONS="${2:-1000000}"
REPS="${REPS:-5}"
DIR="${SCALE_DIR:-/tmp/hookscope_scale}"
bench_build make_scale_trace bench_scale_open hookscope
mkdir -p "$DIR"
trace="$DIR/scale_${FUNCTIONS}_${EVENTS}.hstrace"
[[ -f "$trace" ]] || "$BUILD_DIR/bench/make_scale_trace" "$trace" "$FUNCTIONS" "$EVENTS"
# /usr/bin/time runs programs, not shell functions: the screenshot run spells it out.
gui() { xvfb-run -a -s "-screen 0 1600x1000x24" "$BUILD_DIR/app/hookscope" "$trace" "$@"; }
log="$DIR/runs.txt"
: > "$log"
for ((r = 0; r < REPS; ++r)); do
  "$BUILD_DIR/bench/bench_scale_open" "$trace" 20 >> "$log"
  /usr/bin/time -f "gui_screenshot_wall_s %e
gui_peak_rss_mib %M" -o "$DIR/time.txt" \
    xvfb-run -a -s "-screen 0 1600x1000x24" "$BUILD_DIR/app/hookscope" "$trace" --screenshot "$DIR/shot.png" > /dev/null
  awk '/rss/ {print $1, $2 / 1024; next} {print}' "$DIR/time.txt" >> "$log"
  gui --bench-frames 120 | sed -n 's/.*median CPU frame time \([0-9.]*\) ms.*/frame_whole_ms \1/p' >> "$log"
  gui --select 1000 --bench-frames 120 | sed -n 's/.*median CPU frame time \([0-9.]*\) ms.*/frame_zoomed_ms \1/p' >> "$log"
done
echo "==== $trace: medians of $REPS runs ===="
awk '{v[$1] = v[$1] " " $2} END {for (k in v) print k, v[k]}' "$log" | sort | while read -r key values; do
  echo "$key $(tr ' ' '\n' <<< "$values" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')  (runs:$values)"
done
