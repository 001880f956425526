#!/bin/sh
# pip's path to the torch bridge, as a PyTorch user takes it (python/setup.py):
# a venv that sees the system's torch, `pip install --no-build-isolation`, then
# a program recorded with the venv's python from another directory, with no
# PYTHONPATH to the CMake build. Run under PyTorch 2.6 by ctest (label torch2,
# in the trixie root); needs the root's python3-venv and python3-setuptools.
set -eu
src="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A copy of what the build reads, so that pip's in-tree build writes nothing
# into the source tree (python/build, *.egg-info).
mkdir -p "$tmp/src/core"
cp -r "$src/python" "$tmp/src/"
cp -r "$src/core/trace" "$tmp/src/core/"
cp "$src/CMakeLists.txt" "$tmp/src/"
rm -rf "$tmp/src/python/build" "$tmp/src/python/"*.egg-info

unset PYTHONPATH
python3 -m venv --system-site-packages "$tmp/venv"
"$tmp/venv/bin/pip" install --no-build-isolation --no-index "$tmp/src/python" >"$tmp/pip.log" 2>&1 ||
  { tail -n 30 "$tmp/pip.log"; fail "pip install --no-build-isolation ./python"; }
grep -q "Successfully installed hookscope" "$tmp/pip.log" || fail "pip did not say it installed hookscope"

cd "$tmp"
where="$("$tmp/venv/bin/python" -c 'import hookscope, torch; print(hookscope.__file__, torch.__version__)')"
case "$where" in
  "$tmp/venv/"*) echo "pip install: hookscope imported from the venv ($where)" ;;
  *) fail "hookscope was imported from $where, not from the venv" ;;
esac
cat >prog.py <<'PROG'
import torch
w = torch.randn(3, requires_grad=True)
w.register_hook(lambda g: g * 2)
for _ in range(3):
    (w * 2).sum().backward()
print("grad", w.grad.tolist())
PROG
"$tmp/venv/bin/python" -m hookscope.record -o "$tmp/run.hstrace" prog.py >out.txt 2>err.txt ||
  { cat out.txt err.txt; fail "recording through the pip-installed bridge"; }
grep -q '^grad ' out.txt || fail "the program's own output is missing"
"${HOOKSCOPE_CLI:?HOOKSCOPE_CLI is set by scripts/torch2-root.sh run}" info "$tmp/run.hstrace" >info.txt
fires="$(awk '$1 == "tensor_pre" { print $3 }' info.txt)"
[ "$fires" = 3 ] || { cat info.txt; fail "expected 3 tensor_pre hook fires, the trace has '${fires}'"; }
echo "pip install: the pip-installed bridge recorded 3 of 3 hook fires"
