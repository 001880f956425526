#!/usr/bin/env bash
# Fuzzes the trace file reader (core/trace/reader*.cpp), the analysis model
# built from what it reads (core/analysis, core/export) and what the GUI
# draws of it (every panel of the App, headless: fuzz/fuzz_gui_frame.cpp)
# with libFuzzer.
#   scripts/fuzz.sh            60 seconds in all, shared by the targets
#   scripts/fuzz.sh 600 -jobs=2 -workers=2   seconds, then extra libFuzzer flags
#   FUZZ_TARGETS=gui scripts/fuzz.sh 600   only one target (reader, model, gui)
# Needs clang and libclang-rt-14-dev (scripts/setup.sh --bench installs both).
# The seed corpus is made of real traces: the trace file tests write every
# file they make into it (HOOKSCOPE_TRACE_CORPUS), with the crafted hostile
# traces (tests/support/testing/crafted_traces.h) and the shipped samples. The fuzzers are
# standalone clang++ builds of the sources they need with ASan+UBSan, and
# with FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, which makes the reader skip
# checksums so that mutations reach the decoders.
# Outputs under $FUZZ_DIR (default build-fuzz/): corpus-*/ (grows between
# runs), crash-*/leak-*/timeout-* reproducers; rerun one with
#   build-fuzz/fuzz_trace_reader build-fuzz/crash-<hash>
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
seconds="${1:-60}"
shift || true
FUZZ_DIR="${FUZZ_DIR:-$ROOT/build-fuzz}"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
CXX_FUZZ="${CXX_FUZZ:-clang++}"
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

# 2. The fuzzers: the sources they need, no CMake. Each source is compiled
# once into $FUZZ_DIR/obj (through ccache when there is one, $JOBS at a
# time), and the targets share what they have in common.
# (the reader's files by pattern: a new reader_*.cpp or packed_events_*.cpp must not break the link)
reader_sources=(core/trace/reader*.cpp core/trace/packed_events*.cpp core/trace/file_format.cpp
                core/trace/file_columns.cpp)
model_sources=("${reader_sources[@]}" core/trace/event.cpp core/export/chrome.cpp core/export/jsonl.cpp
               core/export/text_safety.cpp)
for f in core/analysis/*.cpp; do [[ "$f" == */synthetic.cpp ]] || model_sources+=("$f"); done
# The GUI's: the App and its panels, the views, the model's sources, the
# scenario catalog (names and options, no runtime: the GUI links the same,
# Note [The GUI runs no scenario]) and the writer (raw event inputs become
# files). Not the runtime, nor the command line (app_args.cpp).
gui_sources=("${model_sources[@]}" core/trace/writer.cpp core/trace/strings.cpp core/trace/emit.cpp
             core/scenarios/registry.cpp core/export/dot.cpp render/layout/*.cpp render/draw/*.cpp app/app.cpp app/panel_*.cpp
             app/session.cpp app/event_filter.cpp app/loader.cpp app/live_run.cpp app/config.cpp
             app/file_browser.cpp app/index_args.cpp)
for f in app/app_*.cpp; do [[ "$f" == */app_args.cpp ]] || gui_sources+=("$f"); done
sanitizers=-fsanitize=address,undefined
flags=(-std=c++20 -O1 -g -fno-sanitize-recover=undefined -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
       -DHOOKSCOPE_RENDER_DRAW=1 -DHOOKSCOPE_VERSION=\"fuzz\" -Icore -I. -Iapp -isystem /usr/include/imgui)
cache=()
command -v ccache >/dev/null && cache=(ccache)
compile() {  # SOURCES...: each to obj/SOURCE.o, in parallel
  printf '%s\n' "$@" | sort -u | xargs -P "${JOBS:-$(nproc)}" -I{} sh -c \
    'dir=$0 src=$1; shift; mkdir -p "$(dirname "$dir/obj/$src")" && exec "$@" -c "$src" -o "$dir/obj/$src.o"' \
    "$FUZZ_DIR" {} "${cache[@]}" "$CXX_FUZZ" "${flags[@]}" "$sanitizers,fuzzer-no-link"
}
objects() { for f in "$@"; do echo "$FUZZ_DIR/obj/$f.o"; done; }
targets="${FUZZ_TARGETS:-reader model gui}"
declare -A target_file=([reader]=fuzz_trace_reader [model]=fuzz_trace_model [gui]=fuzz_gui_frame)
declare -A target_libs=([reader]="-lzstd" [model]="-lzstd -lfmt" [gui]="-lzstd -lfmt -limgui -lstb -lpthread")
build_start=$SECONDS
for t in $targets; do
  case "$t" in
    reader) sources=("${reader_sources[@]}") ;;
    model) sources=("${model_sources[@]}") ;;
    gui) sources=("${gui_sources[@]}") ;;
    *) echo "fuzz: unknown target '$t' (reader, model, gui)" >&2; exit 2 ;;
  esac
  sources+=("fuzz/${target_file[$t]}.cpp")
  compile "${sources[@]}"
  # shellcheck disable=SC2046,SC2086
  "$CXX_FUZZ" "$sanitizers,fuzzer" $(objects "${sources[@]}") ${target_libs[$t]} -o "$FUZZ_DIR/${target_file[$t]}"
done
echo "fuzz: built $targets in $((SECONDS - build_start)) s"

# 3. Run each for its share of $seconds; a crash, leak or timeout fails the script.
cd "$FUZZ_DIR"
read -ra target_list <<<"$targets"
each=$((seconds / ${#target_list[@]}))
for t in $targets; do
  mkdir -p "corpus-$t"
  echo "fuzz: $t for ${each}s"
  "./${target_file[$t]}" "corpus-$t" seeds -max_total_time="$each" -rss_limit_mb=2048 -timeout=10 \
    -max_len=262144 -print_final_stats=1 "$@" 2>&1 | tee "fuzz-$t.log" | grep -E "stat::|ERROR|crash-|Done" || true
  if grep -q "ERROR: libFuzzer\|ERROR: AddressSanitizer\|runtime error\|invariant broken" "fuzz-$t.log"; then
    echo "fuzz: $t FOUND A PROBLEM (see $FUZZ_DIR/fuzz-$t.log)"; exit 1
  fi
done
