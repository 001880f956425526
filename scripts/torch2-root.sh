#!/usr/bin/env bash
# A PyTorch 2.6 environment the project makes itself: a Debian trixie root
# (debootstrap --variant=minbase) with Debian's python3-torch/libtorch-dev 2.6
# (Python 3.13), the bridge (python/hookscope and hookscope._C) and the
# hookscope-cli built inside it against that torch, and a command run there.
#   scripts/torch2-root.sh build            make/refresh the root and the build
#   scripts/torch2-root.sh prepare          only the root and its packages (network-bound)
#   scripts/torch2-root.sh run CMD ARGS...  build if needed, then run CMD inside
#   scripts/torch2-root.sh path             print the root's path
#   scripts/torch2-root.sh clean            delete the root (refused while mounted)
# The root is built once and cached (cold: minutes and ~3 GB; warm: seconds):
#   HOOKSCOPE_TORCH2_ROOT   the root (default /var/cache/hookscope/torch2-root)
#   HOOKSCOPE_TORCH2_MIRROR Debian mirror (default http://deb.debian.org/debian)
#   HOOKSCOPE_TORCH2_BINDS  more host directories to see inside, ':'-separated
# Inside, the source tree (and the current directory) are at their host paths;
# PYTHONPATH starts with the bridge built for 2.6, HOOKSCOPE_CLI and
# HOOKSCOPE_RUNTIME_GRAPH, HOOKSCOPE_SAVED_RUNTIME name the binaries built there. Exit status: the
# command's; 77 when the root cannot be built (e.g. no network), with the reason.
# Needs root (debootstrap, chroot, mount) and util-linux's unshare.
#
# Note [torch2 root mounts]
# Every mount (/proc, /dev, /dev/shm, the source tree) is made inside a private
# mount namespace (unshare -m) and also unmounted by a trap: even a run killed
# by SIGKILL leaves nothing mounted in the host's namespace, so deleting the
# root can never reach through a bind mount into /dev or the source tree.
# `clean` still checks /proc/mounts first and deletes with --one-file-system.
set -euo pipefail

src="$(cd "$(dirname "$0")/.." && pwd)"
root="${HOOKSCOPE_TORCH2_ROOT:-/var/cache/hookscope/torch2-root}"
mirror="${HOOKSCOPE_TORCH2_MIRROR:-http://deb.debian.org/debian}"
# What the bridge and the CLI need to build in the root (the host's list is
# scripts/setup.sh); a change here reinstalls on the next run.
packages=(
  python3-torch libtorch-dev python3-dev pybind11-dev
  g++ cmake ninja-build pkgconf
  libfmt-dev nlohmann-json3-dev libcli11-dev libgloo-dev libopenblas-dev libzstd-dev
  doctest-dev libstb-dev ccache
  python3-venv python3-setuptools  # pip's path to the bridge (tests/torch/pip_install.sh)
)
# One build directory per source tree, so worktrees sharing the root do not
# rebuild each other's.
build="/var/lib/hookscope/build$(printf %s "$src" | tr -c 'A-Za-z0-9._\n-' '_')"

die() { echo "torch2-root: $*" >&2; exit 1; }
skip() { echo "torch2-root: SKIP: $*" >&2; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "needs root (debootstrap, chroot and mount); run it as root or with sudo"
command -v unshare >/dev/null || die "unshare (util-linux) is missing"

# debian_root_mounts: the mount points at or below a root (shared with the
# package test's roots).
# shellcheck source=debian-root.sh
source "$src/scripts/debian-root.sh"

remove_root() {  # $1: a root (or a half-made one) that nothing may be mounted in
  local busy
  busy="$(debian_root_mounts "$1")"
  [[ -z "$busy" ]] || die "not deleting $1: still mounted there: $busy (unmount first)"
  rm -rf --one-file-system "$1"
}

# Runs "$@" inside the root in a private mount namespace (Note [torch2 root
# mounts]) with /proc, /dev, /dev/shm and the given host directories bound.
# Binds come from $binds (space-separated absolute paths).
in_root_script='
set -euo pipefail
root="$1" binds="$2"; shift 2
made=()
cleanup() {
  local i
  for ((i = ${#made[@]} - 1; i >= 0; i--)); do umount -l "${made[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
trap "exit 130" INT TERM
mount -t proc proc "$root/proc" && made+=("$root/proc")
mount --bind /dev "$root/dev" && made+=("$root/dev")
mkdir -p "$root/dev/shm"
mount --bind /dev/shm "$root/dev/shm" && made+=("$root/dev/shm")
for d in $binds; do
  mkdir -p "$root$d"
  mount --bind "$d" "$root$d" && made+=("$root$d")
done
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
chroot "$root" "$@"
'
in_root() {
  unshare -m --propagation private /bin/bash -c "$in_root_script" in_root "$root" "$binds" "$@"
}

# Stage 1: the bare trixie root, made in $root.new and renamed when complete,
# so an interrupted debootstrap never leaves a root that looks finished.
make_base() {
  [[ -f "$root/.hookscope-base" ]] && return 0
  command -v debootstrap >/dev/null || {
    echo "torch2-root: installing debootstrap" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >&2 ||
      skip "debootstrap is missing and could not be installed (apt-get install debootstrap)"
  }
  local tmp="$root.new"
  [[ -e "$tmp" ]] && remove_root "$tmp"
  [[ -e "$root" ]] && remove_root "$root"
  mkdir -p "$(dirname "$root")"
  echo "torch2-root: debootstrap trixie into $root (once; a few minutes)" >&2
  # debootstrap mounts /proc in the target itself: a private namespace again.
  if ! unshare -m --propagation private \
      debootstrap --variant=minbase trixie "$tmp" "$mirror" >"$root.debootstrap.log" 2>&1; then
    tail -5 "$root.debootstrap.log" >&2
    remove_root "$tmp"
    skip "debootstrap of Debian trixie from $mirror failed (no network?); log: $root.debootstrap.log"
  fi
  touch "$tmp/.hookscope-base"
  mv "$tmp" "$root"
}

# Stage 2: the packages; redone when the list above changes.
install_packages() {
  local want="${packages[*]}"
  [[ "$(cat "$root/.hookscope-packages" 2>/dev/null)" == "$want" ]] && return 0
  echo "torch2-root: installing ${packages[*]} in the root" >&2
  binds="" in_root /usr/bin/env DEBIAN_FRONTEND=noninteractive /bin/sh -c \
    "apt-get update -qq && apt-get install -y -qq --no-install-recommends ${want} && apt-get clean" \
    >"$root.apt.log" 2>&1 || {
      tail -5 "$root.apt.log" >&2
      skip "apt-get install in the trixie root failed (no network?); log: $root.apt.log"
    }
  printf %s "$want" >"$root/.hookscope-packages"
}

# Stage 3: hookscope-cli and the runtime programs the torch tests compare
# against (hook_order_runtime, saved_tensors_runtime, module_api_runtime,
# ddp_comm_hook_runtime) for
# this source tree, built in the root against 2.6 by CMake (ninja makes a warm
# run a no-op), and the bridge built by pip, at the same time (Note [The
# root's bridge is pip's]). A new build directory (another worktree) compiles
# through the root's ccache, with paths relative to its source tree so that
# worktrees share hits. Without -g: a cold build here is on CI's critical
# path, and debug info is a quarter of its compile time (gdb a failure with
# the host's build).
build_programs() {
  local log="$root$build.log" launcher=""
  mkdir -p "$root$build"
  [[ -f "$root$build/CMakeCache.txt" ]] ||
    launcher="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
  binds="$src" in_root /usr/bin/env CCACHE_DIR=/var/cache/ccache CCACHE_BASEDIR="$src" /bin/sh -c "
    cmake -S '$src' -B '$build' -G Ninja -DHOOKSCOPE_GUI=OFF -DHOOKSCOPE_CUDA=OFF \
          -DHOOKSCOPE_BENCH=OFF -DHOOKSCOPE_TORCH=ON $launcher \
          -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O2 -DNDEBUG' >/dev/null &&
    cmake --build '$build' -j$(nproc) --target hookscope-cli hook_order_runtime saved_tensors_runtime module_api_runtime ddp_comm_hook_runtime" \
    >"$log" 2>&1 || { tail -30 "$log" >&2; echo "torch2-root: building hookscope-cli in the root failed; log: $log" >&2; return 1; }
}

# Note [The root's bridge is pip's]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Under 2.6 the bridge is built once, the way a PyTorch user builds it:
# `pip install --no-build-isolation` (python/setup.py) into a venv that sees
# the root's torch, from a copy of what the build reads (pip builds in the
# source folder; the tree stays clean). $build/python/hookscope links to the
# package pip installed, so PYTHONPATH=$build/python and hookscope-cli's
# look-up in its build tree (app/cli_python.cpp) find it as they find CMake's
# bridge on the host. Every torch2 test runs this bridge;
# tests/torch/pip_install.sh checks the venv as a user would. CMake's bridge
# (target hookscope_python) is not built in the root: a second compile of the
# same sources took ~3 minutes of CI. Redone when a file pip reads changes
# (through the root's ccache: a Python edit costs the link only), in a new
# folder named by the sources' hash ($build/pip/HASH/venv), the link switched
# when it is complete: tests running meanwhile keep the bridge they started
# with (the one before it is kept, older ones deleted).
pip_stamp() {
  { (cd "$src" && find python core/trace -type f ! -path 'python/build/*' ! -path '*.egg-info/*' \
       ! -path '*/__pycache__/*' -print0 | sort -z | xargs -0 sha1sum)
    grep '^project(' "$src/CMakeLists.txt"  # the version, all setup.py reads of it
  } | sha1sum | cut -c1-16
}
build_pip_bridge() {
  local stamp dir log
  stamp="$(pip_stamp)"
  dir="$build/pip/$stamp" log="$root$build/pip/$stamp/pip.log"
  [[ "$(readlink "$root$build/pip/current" 2>/dev/null)" == "$stamp" && -L "$root$build/python/hookscope" ]] &&
    return 0
  rm -rf "$root$dir"
  mkdir -p "$root$dir/src/core"
  cp -r "$src/python" "$root$dir/src/"
  cp -r "$src/core/trace" "$root$dir/src/core/"
  cp "$src/CMakeLists.txt" "$root$dir/src/"
  rm -rf "$root$dir/src/python/build" "$root$dir/src/python/"*.egg-info
  # CFLAGS: Python's own, less -g (as above). CC/CXX through ccache, with
  # paths relative to the copy so that the next HASH folder hits.
  binds="" in_root /usr/bin/env CCACHE_DIR=/var/cache/ccache CCACHE_BASEDIR="$dir/src" CC="ccache x86_64-linux-gnu-gcc" \
    CXX="ccache x86_64-linux-gnu-g++" CFLAGS="-fno-strict-overflow -DNDEBUG -O2 -Wall" \
    CXXFLAGS="-DNDEBUG -O2" /bin/sh -c "
    python3 -m venv --system-site-packages '$dir/venv' &&
    '$dir/venv/bin/pip' install --no-build-isolation --no-index '$dir/src/python'" >"$log" 2>&1 &&
    grep -q "Successfully installed hookscope" "$log" ||
    { tail -30 "$log" >&2; echo "torch2-root: pip install --no-build-isolation ./python failed in the root; log: $log" >&2; return 1; }
  local site
  site="$(cd "$root$dir/venv/lib" && echo python3.*/site-packages)"
  [[ -d "$root$dir/venv/lib/$site/hookscope" ]] ||
    { echo "torch2-root: pip installed no hookscope package in $dir/venv" >&2; return 1; }
  # Switched by rename (atomic); a CMake-built bridge there before is removed.
  local previous old
  previous="$(readlink "$root$build/pip/current" 2>/dev/null || true)"
  mkdir -p "$root$build/python"
  [[ -L "$root$build/python/hookscope" ]] || rm -rf "$root$build/python/hookscope"
  ln -sfn "$dir/venv/lib/$site/hookscope" "$root$build/python/hookscope.new"
  mv -T "$root$build/python/hookscope.new" "$root$build/python/hookscope"
  ln -sfn "$stamp" "$root$build/pip/current.new"
  mv -T "$root$build/pip/current.new" "$root$build/pip/current"
  rm -f "$root$build/pip/.stamp"  # the one-venv layout of before
  for old in "$root$build/pip/"*/; do
    old="$(basename "$old")"
    [[ "$old" == "$stamp" || "$old" == "$previous" || "$old" == current ]] || rm -rf "${root:?}$build/pip/$old"
  done
}

build_bridge() {
  local pip_rc=0 programs_rc=0
  build_pip_bridge &
  local pip_job=$!
  build_programs || programs_rc=$?
  wait "$pip_job" || pip_rc=$?
  [[ $programs_rc -eq 0 && $pip_rc -eq 0 ]] || die "building in the root failed (see above)"
}

ensure() {  # $1: "prepare" stops before building
  # The root's stages one at a time (ctest runs several torch2 tests at
  # once; CI prepares the root in the background while the host builds);
  # then builds share the root (lock 9 shared: no package change under a
  # build), each build directory one builder at a time (lock 8), so that
  # worktrees sharing the root do not wait for each other's builds.
  mkdir -p "$(dirname "$root")"
  exec 9>"$root.lock"
  flock 9
  make_base
  install_packages
  if [[ "${1:-}" != prepare ]]; then
    flock -s 9
    mkdir -p "$(dirname "$root$build")"
    exec 8>"$root$build.lock"
    flock 8
    build_bridge
    exec 8>&-
  fi
  exec 9>&-
}

cmd="${1:-}"
[[ $# -gt 0 ]] && shift
case "$cmd" in
  path) echo "$root" ;;
  clean) [[ -e "$root" ]] && remove_root "$root"; rm -f "$root".*.log ;;
  build) ensure ;;
  prepare) ensure prepare ;;
  run)
    [[ $# -gt 0 ]] || die "usage: scripts/torch2-root.sh run CMD [ARGS...]"
    ensure
    binds="$src"
    IFS=: read -ra extra <<<"${HOOKSCOPE_TORCH2_BINDS:-}"
    here="$(pwd)"
    for d in "${extra[@]}" "$here"; do
      [[ -n "$d" && -d "$d" && "$d" != / ]] || continue
      d="$(cd "$d" && pwd -P)"
      case "$d/" in "$src"/*|"$root"/*) continue ;; esac
      binds+=" $d"
    done
    # The host's PATH and library paths mean nothing in the root; the rest of
    # the environment (HOOKSCOPE_TEST_OUT, RANK, ...) is the caller's.
    export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    unset LD_LIBRARY_PATH LD_PRELOAD PYTHONHOME VIRTUAL_ENV
    export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
    export HOOKSCOPE_CLI="$build/app/hookscope-cli"
    export HOOKSCOPE_RUNTIME_GRAPH="$build/tests/torch/hook_order_runtime"
    export HOOKSCOPE_SAVED_RUNTIME="$build/tests/torch/saved_tensors_runtime"
    export HOOKSCOPE_COMM_HOOK_RUNTIME="$build/tests/torch/ddp_comm_hook_runtime"
    export HOOKSCOPE_GUI=""
    # tests/torch/pip_install.sh: the venv the bridge is in (Note [The root's bridge is pip's])
    export HOOKSCOPE_PIP_VENV="$build/pip/$(readlink "$root$build/pip/current")/venv"
    in_root /bin/sh -c 'cd "$0" 2>/dev/null || cd /; exec "$@"' "$here" "$@"
    ;;
  *) die "usage: scripts/torch2-root.sh build | prepare | run CMD [ARGS...] | path | clean" ;;
esac
