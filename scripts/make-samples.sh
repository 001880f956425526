#!/usr/bin/env bash
# Records the sample traces the app ships (share/hookscope/samples/) with
# our own scenarios. The build runs it (assets/CMakeLists.txt); by hand:
#   scripts/make-samples.sh build/app/hookscope-cli OUT_DIR
# Each sample is small (a few seconds of a CPU run) and tells one story:
#   recovery-none.hstrace     a rank fails twice; policy none leaks the old Reducers' hooks
#   recovery-by-key.hstrace   the same run with the fix: each Reducer removes its own hooks
#   shared-module-by-type.hstrace  two DDPs on one module; the by-type sweep takes the other's hooks
#   autograd-demo.hstrace     user hooks of every kind added, fired and removed
set -euo pipefail
cli="${1:?usage: make-samples.sh HOOKSCOPE_CLI OUT_DIR}"
out="${2:?usage: make-samples.sh HOOKSCOPE_CLI OUT_DIR}"
mkdir -p "$out"
record() {
  local name="$1"
  shift
  "$cli" record "$@" -o "$out/$name.hstrace.tmp" >/dev/null
  mv "$out/$name.hstrace.tmp" "$out/$name.hstrace"
}
record recovery-none recovery --policy none --steps 8 --recoveries 2
record recovery-by-key recovery --policy by-key --steps 8 --recoveries 2
record shared-module-by-type shared-module --policy by-type --steps 6
record autograd-demo autograd-demo --steps 4
