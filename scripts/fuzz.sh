#!/usr/bin/env bash
# Fuzzes the trace file reader (core/trace/reader*.cpp), the analysis model
# built from what it reads (core/analysis, core/export) and what the GUI
# draws of it (every panel of the App, headless: fuzz/fuzz_gui_frame.cpp)
# with libFuzzer.
#   scripts/fuzz.sh            60 seconds in all, shared by the targets
#   scripts/fuzz.sh 600 -jobs=2 -workers=2   seconds, then extra libFuzzer flags
#   FUZZ_TARGETS=gui scripts/fuzz.sh 600   only one target (reader, model, gui)
# Needs clang and libclang-rt-14-dev (scripts/setup.sh installs both).
# The seed corpus is made of real traces: the trace file tests write every
# file they make into it (HOOKSCOPE_TRACE_CORPUS), with the crafted hostile
# traces (tests/support/testing/crafted_traces.h) and the shipped samples. The fuzzers are
# targets of the clang ASan+UBSan build, build-asan/ (Note [One sanitizer
# build]): after `HOOKSCOPE_SANITIZE=address scripts/test.sh` only fuzz/*.cpp
# and the headless app are left to compile. The reader skips checksums in
# the fuzzers' processes only, so that mutations reach the decoders (Note
# [Fuzzing skips checksums]).
# Outputs under $FUZZ_DIR (default build-fuzz/): corpus-*/ (grows between
# runs), crash-*/leak-*/timeout-* reproducers; rerun one with
#   build-asan/fuzz/fuzz_trace_reader build-fuzz/crash-<hash>
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
seconds="${1:-60}"
shift || true
FUZZ_DIR="${FUZZ_DIR:-$ROOT/build-fuzz}"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
mkdir -p "$FUZZ_DIR/corpus"

# 1. Seeds: traces recorded by the project (the trace file tests write them).
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DHOOKSCOPE_GUI=OFF -DHOOKSCOPE_BENCH=OFF >/dev/null
fi
ninja -C "$BUILD_DIR" -j"${JOBS:-1}" hookscope_tests >/dev/null
rm -rf "$FUZZ_DIR/seeds"
HOOKSCOPE_TRACE_CORPUS="$FUZZ_DIR/seeds" "$BUILD_DIR/tests/hookscope_tests" -tc='trace file*,*seeds for the fuzzers*' >/dev/null
# And the samples the project ships, when this build has recorded them.
for f in "$BUILD_DIR"/share/hookscope/samples/*.hstrace; do
  if [[ -f "$f" ]]; then cp "$f" "$FUZZ_DIR/seeds/sample-${f##*/}"; fi
done
echo "fuzz: $(ls "$FUZZ_DIR/seeds" | wc -l) seed traces in $FUZZ_DIR/seeds"

# 2. The fuzzers: targets of build-asan/, configured as scripts/test.sh does.
command -v clang++ >/dev/null ||
  { echo "fuzz: clang++ is missing (scripts/setup.sh installs clang and libclang-rt-14-dev)" >&2; exit 2; }
asan_dir="$ROOT/$(scripts/configure.sh address)"
targets="${FUZZ_TARGETS:-reader model gui}"
declare -A target_file=([reader]=fuzz_trace_reader [model]=fuzz_trace_model [gui]=fuzz_gui_frame)
build_targets=()
for t in $targets; do
  [[ -n "${target_file[$t]:-}" ]] || { echo "fuzz: unknown target '$t' (reader, model, gui)" >&2; exit 2; }
  build_targets+=("${target_file[$t]}")
done
with_gui=false
[[ " $targets " == *" gui "* ]] && with_gui=true
$with_gui && build_targets+=(first_trim_check)
build_start=$SECONDS
cmake --build "$asan_dir" -j"${JOBS:-$(nproc)}" --target "${build_targets[@]}"
echo "fuzz: built $targets in $((SECONDS - build_start)) s"
# The GUI fuzzer's process trims freed memory from several threads at once
# (Note [The first trim runs alone], app/loader.cpp): only a process's first
# trim can race, so the check forks its tries.
if $with_gui; then
  "$asan_dir/fuzz/first_trim_check" 100 2>"$FUZZ_DIR/first-trim.log" ||
    { echo "fuzz: first_trim_check FOUND A PROBLEM (see $FUZZ_DIR/first-trim.log)"; exit 1; }
fi

# 3. Run each for its share of $seconds; a crash, leak or timeout fails the script.
cd "$FUZZ_DIR"
read -ra target_list <<<"$targets"
each=$((seconds / ${#target_list[@]}))
for t in $targets; do
  mkdir -p "corpus-$t"
  echo "fuzz: $t for ${each}s"
  "$asan_dir/fuzz/${target_file[$t]}" "corpus-$t" seeds -max_total_time="$each" -rss_limit_mb=2048 -timeout=10 \
    -max_len=262144 -print_final_stats=1 "$@" 2>&1 | tee "fuzz-$t.log" | grep -E "stat::|ERROR|crash-|Done" || true
  if grep -q "ERROR: libFuzzer\|ERROR: AddressSanitizer\|runtime error\|invariant broken" "fuzz-$t.log"; then
    echo "fuzz: $t FOUND A PROBLEM (see $FUZZ_DIR/fuzz-$t.log)"; exit 1
  fi
done
