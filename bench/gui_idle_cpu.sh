#!/usr/bin/env bash
# The idle GUI's CPU (Note [Idle frames] in app/app.h): the
# real hookscope in a window under Xvfb, a trace open and nothing moving;
# after it settles, the CPU time the app (and the X server) used over a
# quiet interval, as % of one core. Goal: the app <= 2%.
#   bench/gui_idle_cpu.sh                      # the recovery-none sample, 10 s, 3 runs
#   SECONDS_IDLE=20 RUNS=5 bench/gui_idle_cpu.sh some.hstrace --at 120
#   APP=/tmp/hookscope-before bench/gui_idle_cpu.sh   # another build's binary
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
APP="${APP:-$BUILD_DIR/app/hookscope}"
RUNS="${RUNS:-3}"
SECONDS_IDLE="${SECONDS_IDLE:-10}"
# Loading and the first layout are not idle: measuring starts after the
# first second in which the app used under 5% of a core (or after SETTLE_MAX
# seconds, when it never does: a busy idle app is then measured as it is).
SETTLE_MAX="${SETTLE_MAX:-30}"
SIZE="${SIZE:-1280x800}"
if [[ $# -eq 0 ]]; then
  set -- "$BUILD_DIR/share/hookscope/samples/recovery-none.hstrace"
fi
[[ -x "$APP" ]] || { echo "no $APP: build it first (cmake --build build --target hookscope)" >&2; exit 1; }
command -v xvfb-run >/dev/null || { echo "xvfb-run is not installed (scripts/setup.sh installs xvfb)" >&2; exit 1; }
TICK="$(getconf CLK_TCK)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# utime + stime of a process, in clock ticks (fields 14 and 15 of /proc/PID/stat).
cpu_ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }

results=()
for ((i = 1; i <= RUNS; i++)); do
  rm -f "$work/pid"
  # The app runs in the background of a shell inside xvfb-run, which holds
  # the display until the app is told to quit.
  XDG_CONFIG_HOME="$work/config" xvfb-run -a -s "-screen 0 ${SIZE}x24" \
    bash -c '"$0" --size "$1" "${@:2}" >/dev/null 2>&1 & echo $! > "'"$work"'/pid"; wait' \
    "$APP" "${SIZE}" "$@" &
  runner=$!
  for _ in $(seq 50); do [[ -s "$work/pid" ]] && break; sleep 0.1; done
  pid="$(cat "$work/pid")"
  xvfb="$(pgrep -n -x Xvfb -P "$runner" || true)"  # xvfb-run starts the server as its child
  for ((k = 0; k < SETTLE_MAX; k++)); do
    s0="$(cpu_ticks "$pid")"
    sleep 1
    (( ($(cpu_ticks "$pid") - s0) * 20 < TICK )) && break
  done
  a0="$(cpu_ticks "$pid")"
  x0="$([[ -n "$xvfb" ]] && cpu_ticks "$xvfb" || echo 0)"
  sleep "$SECONDS_IDLE"
  a1="$(cpu_ticks "$pid")"
  x1="$([[ -n "$xvfb" ]] && cpu_ticks "$xvfb" || echo 0)"
  kill "$pid" 2>/dev/null || true
  wait "$runner" 2>/dev/null || true
  app_pct="$(awk -v d="$((a1 - a0))" -v t="$TICK" -v s="$SECONDS_IDLE" 'BEGIN { printf "%.1f", 100 * d / t / s }')"
  x_pct="$(awk -v d="$((x1 - x0))" -v t="$TICK" -v s="$SECONDS_IDLE" 'BEGIN { printf "%.1f", 100 * d / t / s }')"
  echo "run $i: app ${app_pct}% of a core, Xvfb ${x_pct}% over ${SECONDS_IDLE} s idle"
  results+=("$app_pct")
done
printf '%s\n' "${results[@]}" | sort -g | awk '{a[NR]=$1} END {printf "median of %d runs: the idle app uses %.1f%% of a core (goal <= 2%%)\n", NR, a[int((NR+1)/2)]}'
