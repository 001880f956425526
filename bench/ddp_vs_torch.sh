#!/usr/bin/env bash
# The DDP training step against PyTorch's, interleaved: each round runs our
# step with one process per rank (as the reference), our step with both
# ranks as threads of one process, and PyTorch 1.13's DDP step, in an order
# that rotates per round. Each run's figure is its median step; the script
# prints every round, then the median over rounds of each and ours/PyTorch.
#   bench/ddp_vs_torch.sh [ROUNDS]          # default 9
# The host's scheduling noise moves whole runs (a run's median by 2x), so
# only interleaved rounds compare fairly. Needs a build with
# -DHOOKSCOPE_BENCH=ON (BUILD_DIR, default build/) and python3-torch.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${BUILD_DIR:-$ROOT/build}/bench/bench_ddp"
ROUNDS="${1:-9}"
[[ -x "$BIN" ]] || { echo "no $BIN: build with -DHOOKSCOPE_BENCH=ON (bench/run.sh does)" >&2; exit 2; }

run_one() {  # prints the median step in ms of one run
  case "$1" in
    processes) "$BIN" --benchmark_filter='^BM_DdpTrainStep_.*_Processes' 2>/dev/null |
                 grep -o 'median_ms=[0-9.]*' | cut -d= -f2 ;;
    threads) "$BIN" --benchmark_filter='^BM_DdpTrainStep_.*World2/' 2>/dev/null |
               grep -o 'median_ms=[0-9.]*' | cut -d= -f2 ;;
    torch) "$BIN" --benchmark_filter='^BM_TorchDdpTrainStepReference' 2>/dev/null |
             awk '/^BM_/ {print $2}' ;;
  esac
}

kinds=(processes threads torch)
declare -A all
for ((r = 0; r < ROUNDS; ++r)); do
  line="round $((r + 1)):"
  for ((i = 0; i < 3; ++i)); do
    k="${kinds[$(((r + i) % 3))]}"
    v="$(run_one "$k")"
    [[ -n "$v" ]] || { echo "the $k run printed no figure (run $BIN --benchmark_filter=... to see why)" >&2; exit 1; }
    all[$k]+="$v "
    line+=" $k $v ms"
  done
  echo "$line"
done
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
p="$(echo "${all[processes]}" | median)"; t="$(echo "${all[threads]}" | median)"; q="$(echo "${all[torch]}" | median)"
echo "median of $ROUNDS rounds: processes $p ms, threads $t ms, PyTorch $q ms"
awk -v p="$p" -v t="$t" -v q="$q" 'BEGIN {printf "ours / PyTorch: processes %.2fx, threads %.2fx\n", p / q, t / q}'
