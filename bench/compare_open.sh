#!/usr/bin/env bash
# The GUI's --compare on a big trace (the goal: ready in <= 5 s): a
# 1.23M-event trace (make_lanes_trace: 100k hooks, 500 steps) against a
# 112-event one (autograd-demo, one step), both orders, RUNS runs each,
# with bench_compare_open (an App with no window, as a user runs it).
#   bench/compare_open.sh            # 5 runs per order
#   RUNS=3 HOOKS=300000 STEPS=200 bench/compare_open.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
RUNS="${RUNS:-5}"
HOOKS="${HOOKS:-100000}"
STEPS="${STEPS:-500}"
TMP="${TMPDIR:-/tmp}"
BIG="$TMP/hookscope_compare_${HOOKS}h_${STEPS}s.hstrace"
SMALL="$TMP/hookscope_compare_small.hstrace"

bench_build bench_compare_open make_lanes_trace hookscope-cli
[[ -f "$BIG" ]] || "$BUILD_DIR/bench/make_lanes_trace" "$BIG" "$HOOKS" "$STEPS"
[[ -f "$SMALL" ]] || "$BUILD_DIR/app/hookscope-cli" record autograd-demo --steps 1 -o "$SMALL" >/dev/null
echo "A big, B small:"
"$BUILD_DIR/bench/bench_compare_open" "$BIG" "$SMALL" "$RUNS"
echo "A small, B big:"
"$BUILD_DIR/bench/bench_compare_open" "$SMALL" "$BIG" "$RUNS"
