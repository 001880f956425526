#!/usr/bin/env bash
# Fuzzes the trace file reader (core/trace/reader*.cpp) and the analysis
# model built from what it reads (core/analysis, core/export) with libFuzzer.
#   scripts/fuzz.sh            60 seconds each
#   scripts/fuzz.sh 600 -jobs=2 -workers=2   seconds, then extra libFuzzer flags
#   FUZZ_TARGETS=model scripts/fuzz.sh 600   only one target (reader, model)
# Needs clang and libclang-rt-14-dev (scripts/setup.sh --bench installs both).
# The seed corpus is made of real traces: the trace file tests write every
# file they make into it (HOOKSCOPE_TRACE_CORPUS). The fuzzer is a standalone
# clang++ build of the reader sources with ASan+UBSan, and with
# FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, which makes the reader skip
# checksums so that mutations reach the decoders.
# Outputs under $FUZZ_DIR (default build-fuzz/): corpus/ (grows between
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
echo "fuzz: $(ls "$FUZZ_DIR/seeds" | wc -l) seed traces in $FUZZ_DIR/seeds"

# 2. The fuzzers: the sources they need, no CMake.
# (the reader's files by pattern: a new reader_*.cpp or packed_events_*.cpp must not break the link)
reader_sources=(core/trace/reader*.cpp core/trace/packed_events*.cpp core/trace/file_format.cpp
                core/trace/file_columns.cpp)
model_sources=("${reader_sources[@]}" core/trace/event.cpp core/export/chrome.cpp core/export/jsonl.cpp
               core/export/text_safety.cpp)
for f in core/analysis/*.cpp; do [[ "$f" == */synthetic.cpp ]] || model_sources+=("$f"); done
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -Icore)
targets="${FUZZ_TARGETS:-reader model}"
for t in $targets; do
  if [[ "$t" == reader ]]; then
    "$CXX_FUZZ" "${flags[@]}" fuzz/fuzz_trace_reader.cpp "${reader_sources[@]}" -lzstd \
      -o "$FUZZ_DIR/fuzz_trace_reader"
  else
    "$CXX_FUZZ" "${flags[@]}" fuzz/fuzz_trace_model.cpp "${model_sources[@]}" -lzstd -lfmt \
      -o "$FUZZ_DIR/fuzz_trace_model"
  fi
done

# 3. Run each for $seconds; a crash, leak or timeout fails the script.
cd "$FUZZ_DIR"
for t in $targets; do
  mkdir -p "corpus-$t"
  echo "fuzz: $t for ${seconds}s"
  ./fuzz_trace_$t "corpus-$t" seeds -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -max_len=262144 -print_final_stats=1 "$@" 2>&1 | tee "fuzz-$t.log" | grep -E "stat::|ERROR|crash-|Done" || true
  if grep -q "ERROR: libFuzzer\|ERROR: AddressSanitizer\|runtime error\|invariant broken" "fuzz-$t.log"; then
    echo "fuzz: $t FOUND A PROBLEM (see $FUZZ_DIR/fuzz-$t.log)"; exit 1
  fi
done
