#!/bin/sh
# pip's path to the torch bridge, as a PyTorch user takes it (python/setup.py):
# a venv that sees the system's torch, `pip install --no-build-isolation`, then
# a program recorded with the venv's python from another directory, with no
# PYTHONPATH to any build. Run under PyTorch 2.6 by ctest (label torch2, in the
# trixie root), where that venv is the root's one build of the bridge (made by
# scripts/torch2-root.sh build, Note [The root's bridge is pip's]; the other
# torch2 tests run the same bridge): this checks what pip installed there.
set -eu
fail() { echo "FAIL: $*"; exit 1; }
venv="${HOOKSCOPE_PIP_VENV:?HOOKSCOPE_PIP_VENV is set by scripts/torch2-root.sh run}"
log="$(dirname "$venv")/pip.log"
[ -x "$venv/bin/python" ] || fail "no venv at $venv (scripts/torch2-root.sh build makes it)"
grep -q "Successfully installed hookscope" "$log" || { tail -n 30 "$log"; fail "pip did not say it installed hookscope ($log)"; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

unset PYTHONPATH
cd "$tmp"
where="$("$venv/bin/python" -c 'import hookscope, hookscope._C, torch; print(hookscope._C.__file__, torch.__version__)')"
case "$where" in
  "$venv/"*) echo "pip install: hookscope imported from the venv ($where)" ;;
  *) fail "hookscope was imported from $where, not from the venv $venv" ;;
esac
cat >prog.py <<'PROG'
import torch
w = torch.randn(3, requires_grad=True)
w.register_hook(lambda g: g * 2)
for _ in range(3):
    (w * 2).sum().backward()
print("grad", w.grad.tolist())
PROG
"$venv/bin/python" -m hookscope.record -o "$tmp/run.hstrace" prog.py >out.txt 2>err.txt ||
  { cat out.txt err.txt; fail "recording through the pip-installed bridge"; }
grep -q '^grad ' out.txt || fail "the program's own output is missing"
"${HOOKSCOPE_CLI:?HOOKSCOPE_CLI is set by scripts/torch2-root.sh run}" info "$tmp/run.hstrace" >info.txt
fires="$(awk '$1 == "tensor_pre" { print $3 }' info.txt)"
[ "$fires" = 3 ] || { cat info.txt; fail "expected 3 tensor_pre hook fires, the trace has '${fires}'"; }
echo "pip install: the pip-installed bridge recorded 3 of 3 hook fires"
