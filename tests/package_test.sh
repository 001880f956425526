#!/usr/bin/env bash
# ctest `package_deb`: `cpack -G DEB` makes a .deb whose dependencies are
# Debian package names and which holds the programs, man pages and data.
#   tests/package_test.sh BUILD_DIR
set -euo pipefail
build="${1:?usage: package_test.sh BUILD_DIR}"
for tool in cpack dpkg-deb dpkg-shlibdeps; do
  if ! command -v "$tool" >/dev/null; then
    echo "package test: $tool is not installed (Debian: dpkg-dev, cmake); skipping"
    exit 0
  fi
done
tmp="$(mktemp -d /tmp/hookscope-deb-XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
(cd "$build" && cpack -G DEB -B "$tmp" >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; exit 1; }
deb="$(ls "$tmp"/hookscope_*.deb)"
depends="$(dpkg-deb -f "$deb" Depends)"
echo "Depends: $depends"
fail() { echo "package test: $*" >&2; exit 1; }
for pkg in fonts-dejavu-core libopenblas0 libzstd1 libgloo0; do
  [[ ", $depends," == *", $pkg"[\ ,]* ]] || fail "Depends lacks $pkg"
done
contents="$(dpkg-deb -c "$deb")"
for f in ./usr/bin/hookscope-cli ./usr/share/man/man1/hookscope-cli.1 \
         ./usr/share/hookscope/samples/recovery-none.hstrace ./usr/share/applications/hookscope.desktop; do
  grep -qF " $f" <<<"$contents" || fail "the package lacks $f"
done
echo "package test: $(basename "$deb"), $(stat -c %s "$deb") bytes"
