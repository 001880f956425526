#!/usr/bin/env bash
# "Nothing got slower elsewhere": the benchmark binaries of two builds, run
# interleaved (one repetition of BASE, one of NEW, ... ROUNDS times, so that a
# change in the machine's load hits both sides alike), then per benchmark the
# median of each side and NEW / BASE. Benchmarks only one side has are listed
# apart. Time is the benchmark's own (real time for the manual-time ones, CPU
# time otherwise: on a shared 2-core machine it says more about the code).
#   bench/compare_builds.sh BASE_BUILD_DIR [NEW_BUILD_DIR=build] [ROUNDS=5] [extra args...]
#   BENCHES="bench_hooks bench_trace" bench/compare_builds.sh /work/wt/base/build
# Build BASE once from an older commit, e.g.
#   git worktree add /tmp/base <commit> && cmake -S /tmp/base -B /tmp/base/build -G Ninja \
#     -DHOOKSCOPE_GUI=OFF -DHOOKSCOPE_CUDA=OFF -DHOOKSCOPE_BENCH=ON && ninja -C /tmp/base/build <benches>
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE="${1:?usage: bench/compare_builds.sh BASE_BUILD_DIR [NEW_BUILD_DIR] [ROUNDS]}"
NEW="${2:-$ROOT/build}"
ROUNDS="${3:-5}"
shift $(( $# < 3 ? $# : 3 ))
BENCHES="${BENCHES:-bench_hooks bench_engine bench_trace bench_analysis bench_export bench_ddp bench_layout bench_playback}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
for bin in $BENCHES; do
  for side in base new; do
    dir=$BASE; [[ $side == new ]] && dir=$NEW
    if [[ ! -x "$dir/bench/$bin" ]]; then echo "($side has no $bin)"; fi
  done
  [[ -x "$BASE/bench/$bin" && -x "$NEW/bench/$bin" ]] || continue
  echo "==== $bin: $ROUNDS rounds, base and new interleaved ====" >&2
  for ((r = 0; r < ROUNDS; ++r)); do
    # Alternate which side goes first, so neither always runs on a warmer machine.
    if (( r % 2 == 0 )); then order="base new"; else order="new base"; fi
    for side in $order; do
      dir=$BASE; [[ $side == new ]] && dir=$NEW
      "$dir/bench/$bin" --benchmark_repetitions=1 --benchmark_format=json "$@" \
        > "$OUT/$bin.$side.$r.json" 2> "$OUT/$bin.$side.$r.err" ||
        { echo "$bin ($side, round $r) failed:"; tail -5 "$OUT/$bin.$side.$r.err"; }
    done
  done
done
/usr/bin/python3 - "$OUT" <<'PY'
import glob, json, os, statistics, sys
out = sys.argv[1]
runs = {}  # (bin, side) -> name -> [time in ns]
scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    bin_, side, _, _ = os.path.basename(path).split(".")
    try:
        data = json.load(open(path))
    except ValueError:
        continue
    for b in data.get("benchmarks", []):
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        manual = "manual_time" in b["name"] or "/real_time" in b["name"]
        t = b["real_time"] if manual else b["cpu_time"]
        # Match across renames of the timing options alone (a benchmark that
        # moved to process_time or got a min_time is the same benchmark).
        name = "/".join(p for p in b["name"].split("/")
                        if p not in ("process_time", "real_time", "manual_time")
                        and not p.startswith(("iterations:", "min_time:")))
        runs.setdefault((bin_, side), {}).setdefault(name, []).append(t * scale[b["time_unit"]])
def fmt(ns):
    for unit, f in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= f: return f"{ns / f:.3g} {unit}"
    return f"{ns:.3g} ns"
bins = sorted({k[0] for k in runs})
slower = []
for bin_ in bins:
    base, new = runs.get((bin_, "base"), {}), runs.get((bin_, "new"), {})
    print(f"\n{bin_}: {'benchmark':<70} {'base':>10} {'new':>10} {'new/base':>9}")
    for name in sorted(set(base) & set(new)):
        b, n = statistics.median(base[name]), statistics.median(new[name])
        ratio = n / b if b else float("nan")
        flag = "  <-- slower" if ratio > 1.10 else ""
        if ratio > 1.10: slower.append((bin_, name, ratio))
        print(f"  {name:<78} {fmt(b):>10} {fmt(n):>10} {ratio:>8.2f}x{flag}")
    only_new = sorted(set(new) - set(base))
    only_base = sorted(set(base) - set(new))
    if only_new: print(f"  only in new: {', '.join(only_new)}")
    if only_base: print(f"  only in base: {', '.join(only_base)}")
print(f"\n{len(slower)} benchmarks more than 10% slower (medians):")
for bin_, name, ratio in slower: print(f"  {bin_} {name}: {ratio:.2f}x")
PY
