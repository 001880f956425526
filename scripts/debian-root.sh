#!/usr/bin/env bash
# Fresh Debian roots for tests that must run where nothing of this machine
# is installed (tests/package_test.sh: the .debs on plain bookworm). Sourced
# for its functions; as a command it makes a suite's base root:
#   scripts/debian-root.sh base bookworm     -> prints the cached base root's path
#
# A base root is `debootstrap --variant=minbase SUITE` with apt's lists
# fetched, made once and cached in $HOOKSCOPE_ROOT_CACHE (default
# /var/cache/hookscope); tests run in a throw-away copy of it
# (debian_root_copy), so each run starts from the same fresh system. apt's
# downloaded .debs are kept across runs in CACHE/SUITE-apt-archives.
# Mounts inside a root are always undone by debian_root_umount, and a root is
# only ever removed by debian_root_remove, which refuses while anything is
# still mounted inside it.
set -euo pipefail

HOOKSCOPE_ROOT_CACHE="${HOOKSCOPE_ROOT_CACHE:-/var/cache/hookscope}"
HOOKSCOPE_DEBIAN_MIRROR="${HOOKSCOPE_DEBIAN_MIRROR:-http://deb.debian.org/debian}"

# Prints the base root of SUITE, making it first when it is not cached.
# Returns 3 (with the reason on stderr) when debootstrap cannot make it.
# One maker at a time: CI makes the roots in the background while it builds
# (scripts/ci-prefetch.sh), and a test that needs the root meanwhile waits
# for it here instead of deleting the half-made one.
debian_root_base() {
  mkdir -p "$HOOKSCOPE_ROOT_CACHE"
  (
    flock 8
    debian_root_base_unlocked "$1"
  ) 8>"$HOOKSCOPE_ROOT_CACHE/$1-minbase.lock"
}

debian_root_base_unlocked() {
  local suite="$1"
  local base="$HOOKSCOPE_ROOT_CACHE/$suite-minbase"
  if [[ -f "$base/.hookscope-ready" ]]; then
    echo "$base"
    return 0
  fi
  if ! command -v debootstrap >/dev/null; then
    echo "debian-root: debootstrap is not installed (scripts/setup.sh installs it)" >&2
    return 3
  fi
  local tmp="$base.partial"
  debian_root_remove "$tmp"
  echo "debian-root: making a fresh $suite root (debootstrap --variant=minbase, once; cached in $base)" >&2
  if ! debootstrap --variant=minbase "$suite" "$tmp" "$HOOKSCOPE_DEBIAN_MIRROR" >"$tmp.log" 2>&1; then
    echo "debian-root: debootstrap $suite failed (is $HOOKSCOPE_DEBIAN_MIRROR reachable?); its log:" >&2
    tail -n 20 "$tmp.log" >&2
    debian_root_remove "$tmp"
    return 3
  fi
  # The same archive the users of that suite have: main, updates, security.
  local security="${HOOKSCOPE_DEBIAN_MIRROR%/debian}/debian-security"
  cat >"$tmp/etc/apt/sources.list" <<SOURCES
deb $HOOKSCOPE_DEBIAN_MIRROR $suite main
deb $HOOKSCOPE_DEBIAN_MIRROR $suite-updates main
deb $security $suite-security main
SOURCES
  debian_root_mount "$tmp"
  local rc=0
  chroot "$tmp" apt-get update -qq >"$tmp.log" 2>&1 || rc=$?
  debian_root_umount "$tmp"
  if [[ $rc -ne 0 ]]; then
    echo "debian-root: apt-get update in the $suite root failed:" >&2
    tail -n 20 "$tmp.log" >&2
    debian_root_remove "$tmp"
    return 3
  fi
  touch "$tmp/.hookscope-ready"
  rm -f "$tmp.log"
  mv "$tmp" "$base"
  echo "$base"
}

# Copies the base root of SUITE to DEST (which must not exist).
debian_root_copy() {
  local suite="$1" dest="$2" base
  base="$(debian_root_base "$suite")" || return $?
  cp -a "$base" "$dest"
}

# /proc, /dev and a tmpfs /dev/shm for the programs; resolv.conf for apt;
# CACHE/SUITE-apt-archives as apt's download folder.
debian_root_mount() {
  local root="$1" suite="${2:-}"
  mount -t proc proc "$root/proc"
  mount --bind /dev "$root/dev"
  mount -t devpts devpts "$root/dev/pts" -o newinstance,ptmxmode=0666 2>/dev/null || true
  mount -t tmpfs tmpfs "$root/dev/shm"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  if [[ -n "$suite" ]]; then
    mkdir -p "$HOOKSCOPE_ROOT_CACHE/$suite-apt-archives/partial"
    mount --bind "$HOOKSCOPE_ROOT_CACHE/$suite-apt-archives" "$root/var/cache/apt/archives"
  fi
}

# Runs "$@" holding SUITE's download folder: apt in two roots at once would
# share CACHE/SUITE-apt-archives, and apt refuses a folder another apt holds.
debian_root_with_archives() {
  local suite="$1"; shift
  mkdir -p "$HOOKSCOPE_ROOT_CACHE"
  (
    flock 8
    "$@"
  ) 8>"$HOOKSCOPE_ROOT_CACHE/$suite-apt-archives.lock"
}

# What is mounted at or below ROOT, deepest first.
debian_root_mounts() {
  local root
  root="$(realpath -m "$1")"
  awk -v r="$root" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts | sort -r
}

debian_root_umount() {
  local m
  for m in $(debian_root_mounts "$1"); do
    umount "$m" 2>/dev/null || umount -l "$m"
  done
}

# Removes ROOT; refuses (returns 1) while anything is mounted inside it, so
# a bind mount of /dev or of the cache is never deleted through the root.
debian_root_remove() {
  local root="$1"
  [[ -e "$root" ]] || return 0
  debian_root_umount "$root"
  if [[ -n "$(debian_root_mounts "$root")" ]]; then
    echo "debian-root: not removing $root: still mounted inside it:" >&2
    debian_root_mounts "$root" >&2
    return 1
  fi
  rm -rf --one-file-system "$root"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  case "${1:-}" in
    base) debian_root_base "${2:?usage: debian-root.sh base SUITE}" ;;
    *) echo "usage: scripts/debian-root.sh base SUITE" >&2; exit 2 ;;
  esac
fi
