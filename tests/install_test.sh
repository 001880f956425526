#!/usr/bin/env bash
# ctest `install`: installs the build into a temporary prefix and runs the
# installed programs from there, as a user of the package would.
#   tests/install_test.sh BUILD_DIR
set -euo pipefail
build="${1:?usage: install_test.sh BUILD_DIR}"
cmake="${CMAKE_COMMAND:-cmake}"
tmp="$(mktemp -d /tmp/hookscope-install-XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
"$cmake" --install "$build" --prefix "$prefix" >/dev/null

fail() { echo "install test: $*" >&2; exit 1; }
cli="$prefix/bin/hookscope-cli"
[[ -x "$cli" ]] || fail "no $cli"
for f in share/applications/hookscope.desktop share/icons/hicolor/256x256/apps/hookscope.png \
         share/icons/hicolor/48x48/apps/hookscope.png share/hookscope/samples/recovery-none.hstrace; do
  [[ -s "$prefix/$f" ]] || fail "missing $f"
done
if command -v help2man >/dev/null; then
  grep -q "record" "$prefix/share/man/man1/hookscope-cli.1" || fail "hookscope-cli.1 lacks the record verb"
fi

# The installed CLI records and checks (policy none leaks: check exits 1).
"$cli" record recovery --steps 6 --policy none -o "$tmp/leak.hstrace" >/dev/null
set +e
"$cli" check "$tmp/leak.hstrace" >"$tmp/check.txt"
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "check exited $rc, expected 1 (findings)"
grep -q leaked_hook "$tmp/check.txt" || fail "check did not report leaked_hook"
# The installed samples are readable by the installed CLI.
"$cli" info "$prefix/share/hookscope/samples/recovery-by-key.hstrace" >/dev/null

gui="$prefix/bin/hookscope"
if [[ ! -x "$gui" ]]; then
  echo "install test: the GUI is not built here; skipping hookscope --screenshot"
  exit 0
fi
grep -q "^Exec=hookscope" "$prefix/share/applications/hookscope.desktop" || fail "desktop entry has no Exec"
if ! command -v xvfb-run >/dev/null; then
  echo "install test: xvfb-run is not installed; skipping hookscope --screenshot (scripts/setup.sh installs xvfb)"
  exit 0
fi
# Runs from outside the build tree, with the installed samples.
(cd "$tmp" && xvfb-run -a -s "-screen 0 1280x800x24" "$gui" --size 1024x700 \
   --screenshot "$tmp/shot.png" "$prefix/share/hookscope/samples/recovery-none.hstrace") >"$tmp/gui.txt" 2>&1 \
  || { cat "$tmp/gui.txt"; fail "hookscope --screenshot failed"; }
[[ -s "$tmp/shot.png" ]] || fail "no screenshot written"
[[ "$(head -c 4 "$tmp/shot.png" | tail -c 3)" == "PNG" ]] || fail "the screenshot is not a PNG"
echo "install test: installed into $prefix; CLI recorded and checked; GUI screenshot $(stat -c %s "$tmp/shot.png") bytes"
