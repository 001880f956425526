#!/usr/bin/env bash
# Fuzzes the trace file reader (core/trace/reader*.cpp) with libFuzzer.
#   scripts/fuzz.sh            60 seconds
#   scripts/fuzz.sh 600 -jobs=2 -workers=2   seconds, then extra libFuzzer flags
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
HOOKSCOPE_TRACE_CORPUS="$FUZZ_DIR/seeds" "$BUILD_DIR/tests/hookscope_tests" -tc='trace file*' >/dev/null
echo "fuzz: $(ls "$FUZZ_DIR/seeds" | wc -l) seed traces in $FUZZ_DIR/seeds"

# 2. The fuzzer: the reader's sources only, no CMake.
sources=(fuzz/fuzz_trace_reader.cpp core/trace/reader.cpp core/trace/reader_blocks.cpp
         core/trace/reader_merge.cpp core/trace/file_format.cpp core/trace/file_columns.cpp)
"$CXX_FUZZ" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -Icore "${sources[@]}" -lzstd \
  -o "$FUZZ_DIR/fuzz_trace_reader"

# 3. Run.
cd "$FUZZ_DIR"
exec ./fuzz_trace_reader corpus seeds -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
  -print_final_stats=1 "$@"
