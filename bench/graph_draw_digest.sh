#!/usr/bin/env bash
# What the graph view shows, saved so that a refactor of render/draw can be
# proved to change nothing (Note [One graph drawing path]): the app's
# screenshots and draw reports (HOOKSCOPE_DRAW_REPORT) at several events of
# each trace at 1280x800 and 1920x1080, and graph_draw_digest's hashes of
# every way of drawing (full, pending, indexed) on the traces. Traces on
# disk, recorded once: a recording's timings differ run to run. Run it on the build before and after, then compare:
#   bench/graph_draw_digest.sh OUT_DIR [BUILD_DIR=build] TRACE[+RANK_TRACE...]...
#   diff -r BEFORE_DIR AFTER_DIR && echo same
# Needs the GUI build and xvfb-run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:?usage: bench/graph_draw_digest.sh OUT_DIR [BUILD_DIR] TRACE...}"
BUILD_DIR="${2:-$ROOT/build}"
shift $(( $# < 2 ? $# : 2 ))
mkdir -p "$OUT"
for t in "$@"; do
  name="$(basename "${t%%+*}" .hstrace)"
  "$BUILD_DIR/bench/graph_draw_digest" "$t" > "$OUT/digest-$name.txt"
  IFS=+ read -r -a files <<< "$t"
  n="$("$BUILD_DIR/app/hookscope-cli" info "${files[0]}" | sed -n 's/^\([0-9]*\) events over.*/\1/p' | head -1)"
  for size in 1280x800 1920x1080; do
    for at in 0 $((n / 4)) $((n / 2)) $((3 * n / 4)) $((n - 1)); do
      shot="$OUT/$name-$size-at$at"
      HOOKSCOPE_DRAW_REPORT="$shot.json" xvfb-run -a -s "-screen 0 ${size}x24" "$BUILD_DIR/app/hookscope" \
        "${files[@]}" --panel graph --size "$size" --at "$at" --screenshot "$shot.png" 2>&1 | sed "s#$OUT/##g" > "$shot.txt"
    done
  done
done
echo "wrote $(ls "$OUT" | wc -l) files to $OUT"
