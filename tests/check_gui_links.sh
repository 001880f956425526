#!/usr/bin/env bash
# The GUI links no runtime (Note [The GUI runs no scenario]): opening a trace
# must not need OpenBLAS, Gloo, CUDA or NCCL. Checks the hookscope binary
# given (the build's, or an installed one) two ways: `ldd` names none of
# those libraries, and no runtime code was linked in statically (no symbol
# of the tensor, autograd, nn, ddp or scenario runs).
#   tests/check_gui_links.sh build/app/hookscope
set -euo pipefail
gui="${1:?usage: check_gui_links.sh PATH/TO/hookscope}"
[[ -x "$gui" ]] || { echo "check_gui_links: $gui is not an executable"; exit 2; }
status=0
libs="$(ldd "$gui")"
runtime_libs='lib(openblas|blas|gloo|nccl|cudart|cublas|cuda)[.-]'
if grep -Eq "$runtime_libs" <<<"$libs"; then
  echo "check_gui_links: $gui loads runtime libraries:"
  grep -E "$runtime_libs" <<<"$libs"
  status=1
fi
# Demangled definitions (T/W/D/B...) of the runtime's namespaces and classes.
runtime_symbols='hookscope::(autograd|nn|ddp|cuda)::|hookscope::Tensor::|hookscope::scenarios::run_|hookscope::scenarios::validate'
defined="$(nm -C --defined-only "$gui" | grep -E "$runtime_symbols" || true)"
if [[ -n "$defined" ]]; then
  echo "check_gui_links: $gui has runtime code linked in ($(wc -l <<<"$defined") symbols), e.g.:"
  head -5 <<<"$defined"
  status=1
fi
# The check itself must see what it looks for: the CLI beside it links the runtime.
cli="$(dirname "$gui")/hookscope-cli"
if [[ -x "$cli" ]] && [[ -z "$(nm -C --defined-only "$cli" | grep -E "$runtime_symbols" || true)" ]]; then
  echo "check_gui_links: $cli shows no runtime symbol either: the check cannot see them"
  status=1
fi
[[ $status -eq 0 ]] && echo "check_gui_links: $gui links no runtime ($(wc -l <<<"$libs") shared libraries)"
exit $status
