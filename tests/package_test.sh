#!/usr/bin/env bash
# ctest `package_deb`: `cpack -G DEB` makes the .debs (cmake/package.cmake),
# their dependencies are Debian package names and no program needs a
# library outside Debian (nothing under /usr/local: no CUDA), and a user can
# install them with apt on a fresh Debian bookworm and use them there:
# hookscope-cli records, reads and checks a trace, the GUI takes a
# screenshot under Xvfb, and the torch bridge records a PyTorch program.
#   tests/package_test.sh BUILD_DIR
# The fresh root is a copy of a cached debootstrap (scripts/debian-root.sh);
# HOOKSCOPE_PACKAGE_ROOT=0 checks the .debs without it.
set -euo pipefail
build="${1:?usage: package_test.sh BUILD_DIR}"
here="$(cd "$(dirname "$0")" && pwd)"
for tool in cpack dpkg-deb dpkg-shlibdeps; do
  if ! command -v "$tool" >/dev/null; then
    echo "package test: $tool is not installed (Debian: dpkg-dev, cmake); skipping"
    exit 77
  fi
done
tmp="$(mktemp -d /var/tmp/hookscope-deb-XXXXXX)"
root="$tmp/root"
# shellcheck source=../scripts/debian-root.sh
source "$here/../scripts/debian-root.sh"
cleanup() { debian_root_remove "$root" && rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "package test: $*" >&2; exit 1; }

(cd "$build" && cpack -G DEB -B "$tmp" >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; exit 1; }
deb="$(ls "$tmp"/hookscope_*.deb)"
bridge_deb="$(ls "$tmp"/python3-hookscope_*.deb 2>/dev/null || true)"
depends="$(dpkg-deb -f "$deb" Depends)"
echo "hookscope Depends: $depends"
for pkg in fonts-dejavu-core libopenblas0 libzstd1 libgloo0; do
  [[ ", $depends," == *", $pkg"[\ ,]* ]] || fail "Depends lacks $pkg"
done
contents="$(dpkg-deb -c "$deb")"
for f in ./usr/bin/hookscope-cli ./usr/share/man/man1/hookscope-cli.1 \
         ./usr/share/hookscope/samples/recovery-none.hstrace ./usr/share/applications/hookscope.desktop; do
  grep -qF " $f" <<<"$contents" || fail "the package lacks $f"
done
if [[ -n "$bridge_deb" ]]; then
  bridge_depends="$(dpkg-deb -f "$bridge_deb" Depends)"
  echo "python3-hookscope Depends: $bridge_depends"
  for pkg in python3-torch hookscope; do
    [[ ", $bridge_depends," == *", $pkg"[\ ,]* ]] || fail "python3-hookscope's Depends lacks $pkg"
  done
  bridge_contents="$(dpkg-deb -c "$bridge_deb")"
  for f in ./usr/lib/python3/dist-packages/hookscope/record.py \
           ./usr/lib/python3/dist-packages/hookscope/_C; do
    grep -qF " $f" <<<"$bridge_contents" || fail "python3-hookscope lacks $f*"
  done
elif [[ -f "$build/python/hookscope/record.py" ]]; then
  fail "the build has the torch bridge but cpack made no python3-hookscope package"
fi

# Every ELF file of the packages finds all its libraries, none under /usr/local.
for d in "$deb" $bridge_deb; do
  x="$tmp/x/$(basename "$d")"
  mkdir -p "$x" && dpkg-deb -x "$d" "$x"
  while IFS= read -r -d '' f; do
    [[ "$(head -c 4 "$f")" == $'\x7fELF' ]] || continue
    libs="$(ldd "$f" 2>&1)" || true
    if grep -q "/usr/local" <<<"$libs"; then fail "${f#"$x"} loads from /usr/local: $(grep /usr/local <<<"$libs")"; fi
    if grep -q "not found" <<<"$libs"; then fail "${f#"$x"} misses a library: $(grep 'not found' <<<"$libs")"; fi
  done < <(find "$x" -type f -print0)
done
echo "package test: $(basename "$deb") $(stat -c %s "$deb") bytes${bridge_deb:+, $(basename "$bridge_deb") $(stat -c %s "$bridge_deb") bytes}; no library from /usr/local"

if [[ "${HOOKSCOPE_PACKAGE_ROOT:-1}" == "0" ]]; then
  echo "package test: HOOKSCOPE_PACKAGE_ROOT=0: not installing into a fresh Debian root"
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "package test: installing into a fresh Debian root needs root (chroot, mount); skipping that part"
  exit 77
fi
start=$SECONDS
rc=0
debian_root_copy bookworm "$root" || rc=$?
if [[ $rc -eq 3 ]]; then
  echo "package test: no fresh bookworm root could be made (see above); skipping the install part"
  exit 77
fi
[[ $rc -eq 0 ]] || fail "copying the bookworm root failed"
debian_root_mount "$root" bookworm
cp "$deb" $bridge_deb "$root/tmp/"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
# As a user would: apt installs the .debs and what they depend on; without
# Recommends, so what the packages Depend on must be enough on its own.
debs=("/tmp/$(basename "$deb")")
[[ -n "$bridge_deb" ]] && debs+=("/tmp/$(basename "$bridge_deb")")
if ! debian_root_with_archives bookworm in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${debs[@]}" xvfb xauth >"$tmp/apt.log" 2>&1; then
  tail -n 30 "$tmp/apt.log"; fail "apt-get install of the packages failed in a fresh bookworm root"
fi
echo "package test: installed with apt into a fresh bookworm root in $((SECONDS - start)) s"
[[ ! -e "$root/usr/local/cuda" ]] || fail "the fresh root has /usr/local/cuda"
in_root sh -c 'ldd /usr/bin/hookscope-cli /usr/bin/hookscope' >"$tmp/ldd.txt" 2>&1
if grep -q "not found" "$tmp/ldd.txt"; then cat "$tmp/ldd.txt"; fail "an installed program misses a library in the fresh root"; fi

in_root hookscope-cli record recovery --steps 6 --policy none -o /tmp/leak.hstrace >"$tmp/record.txt" 2>&1 \
  || { cat "$tmp/record.txt"; fail "hookscope-cli record failed in the fresh root"; }
in_root hookscope-cli info /tmp/leak.hstrace >"$tmp/info.txt" 2>&1 || { cat "$tmp/info.txt"; fail "info failed"; }
grep -q "events" "$tmp/info.txt" || { cat "$tmp/info.txt"; fail "info did not describe the trace"; }
set +e
in_root hookscope-cli check /tmp/leak.hstrace >"$tmp/check.txt" 2>&1
check_rc=$?
in_root hookscope-cli record recovery --steps 6 --device cuda -o /tmp/gpu.hstrace >"$tmp/cuda.txt" 2>&1
cuda_rc=$?
set -e
[[ $check_rc -eq 1 ]] || { cat "$tmp/check.txt"; fail "check exited $check_rc, expected 1 (policy none leaks)"; }
grep -q leaked_hook "$tmp/check.txt" || fail "check did not report leaked_hook"
# No CUDA in the root: --device cuda says what is missing and how to go on.
[[ $cuda_rc -eq 2 ]] || { cat "$tmp/cuda.txt"; fail "--device cuda exited $cuda_rc without CUDA, expected 2"; }
grep -q "libcuda.so.1" "$tmp/cuda.txt" && grep -q -- "--device cpu" "$tmp/cuda.txt" \
  || { cat "$tmp/cuda.txt"; fail "--device cuda without CUDA does not name libcuda.so.1 and --device cpu"; }
echo "package test: --device cuda in the root: $(tail -n 1 "$tmp/cuda.txt")"

if [[ -x "$root/usr/bin/hookscope" ]]; then
  in_root xvfb-run -a -s "-screen 0 1280x800x24" hookscope --size 1024x700 --screenshot /tmp/shot.png \
      /usr/share/hookscope/samples/recovery-none.hstrace >"$tmp/gui.txt" 2>&1 \
    || { cat "$tmp/gui.txt"; fail "hookscope --screenshot failed in the fresh root"; }
  [[ "$(head -c 4 "$root/tmp/shot.png" | tail -c 3)" == "PNG" ]] || fail "the screenshot is not a PNG"
  cp "$root/tmp/shot.png" "$build/package_root_screenshot.png"  # to look at
  echo "package test: GUI screenshot in the root, $(stat -c %s "$root/tmp/shot.png") bytes ($build/package_root_screenshot.png)"
fi

if [[ -n "$bridge_deb" ]]; then
  cat >"$root/tmp/prog.py" <<'PROG'
import torch
w = torch.ones(3, requires_grad=True)
seen = []
w.register_hook(lambda g: seen.append(1))
for _ in range(2):
    (w * 2.0).sum().backward()
print("fires", len(seen))
PROG
  in_root python3 -m hookscope.record -o /tmp/t.hstrace /tmp/prog.py >"$tmp/bridge.txt" 2>&1 \
    || { cat "$tmp/bridge.txt"; fail "python3 -m hookscope.record failed in the fresh root"; }
  grep -q "fires 2" "$tmp/bridge.txt" || { cat "$tmp/bridge.txt"; fail "the program's output changed"; }
  in_root hookscope-cli check /tmp/t.hstrace >"$tmp/bcheck.txt" 2>&1 \
    || { cat "$tmp/bcheck.txt"; fail "hookscope-cli check of the bridge's trace failed"; }
  in_root hookscope-cli record-python -o /tmp/t2.hstrace /tmp/prog.py >"$tmp/rp.txt" 2>&1 \
    || { cat "$tmp/rp.txt"; fail "hookscope-cli record-python did not find the installed bridge"; }
  in_root hookscope-cli events --kind hook_fire --format jsonl /tmp/t2.hstrace >"$tmp/events.txt" 2>&1 \
    || { cat "$tmp/events.txt"; fail "events failed"; }
  fires="$(grep -c '"hook_fire"' "$tmp/events.txt" || true)"
  [[ "$fires" -eq 2 ]] || { head -n 40 "$tmp/events.txt"; fail "the bridge recorded $fires hook fires, expected 2 (one a backward)"; }
  echo "package test: the torch bridge recorded a program in the root ($fires hook fires), check passed"
fi
echo "package test: fresh-root part done in $((SECONDS - start)) s"
