#!/usr/bin/env bash
# CI's network-bound preparation, run in the background while the host
# compiles (.ci/run starts it first): the Debian bookworm root of the package
# test with apt's downloads of what the packages pull in, and the trixie root
# with PyTorch 2.6 (scripts/torch2-root.sh prepare). Each step is the cached,
# locked step the tests take themselves, so a test that needs a root waits
# for it, and whatever this does not finish (no network) the tests do or
# skip as they would without it. It only warms caches: its failures are
# reported, never fatal.
#   scripts/ci-prefetch.sh        both roots, in parallel
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=debian-root.sh
source scripts/debian-root.sh

# The biggest downloads of tests/package_test.sh's `apt-get install` (the
# .debs' own Depends are computed when they are built; anything missing
# here is fetched by the test itself).
package_test_downloads=(python3-torch libglfw3 libgloo0 libopenblas0 libfmt9 libzstd1 libstb0
                        fonts-dejavu-core xvfb xauth)

bookworm() {
  local t=$SECONDS root rc=0
  debian_root_base bookworm >/dev/null || return $?
  root="$(mktemp -d /tmp/hookscope-prefetch.XXXXXX)/root"
  debian_root_copy bookworm "$root" || return $?
  debian_root_mount "$root" bookworm
  debian_root_with_archives bookworm chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --download-only --no-install-recommends "${package_test_downloads[@]}" \
    >/dev/null || rc=$?
  debian_root_remove "$root" && rmdir "$(dirname "$root")"
  echo "ci-prefetch: bookworm root and the package test's downloads in $((SECONDS - t)) s (rc $rc)"
  return $rc
}

trixie() {
  local t=$SECONDS rc=0
  scripts/torch2-root.sh prepare || rc=$?
  echo "ci-prefetch: trixie root with PyTorch 2.6 in $((SECONDS - t)) s (rc $rc)"
  return $rc
}

bookworm & b=$!
trixie & t=$!
rc=0
wait $b || rc=$?
wait $t || rc=$?
exit $rc
