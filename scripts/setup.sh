#!/usr/bin/env bash
# Shared setup for run.sh, test.sh and bench scripts: installs missing Debian packages, then
# configures and builds rankflow (Release) into build/. Idempotent and quick when nothing changed.
# Source it (". scripts/setup.sh") or run it directly.
set -euo pipefail

RANKFLOW_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RANKFLOW_BUILD="${RANKFLOW_BUILD:-$RANKFLOW_ROOT/build}"

RANKFLOW_PACKAGES=(
  build-essential cmake pkg-config
  libopenmpi-dev openmpi-bin libucx-dev libhwloc-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  gnuplot-nox
  clang libclang-rt-dev llvm  # scripts/fuzz.sh: libFuzzer, its runtime, llvm-symbolizer
  iproute2                    # the two-host test (tests/two_host/): namespaces, veth, bridge
)

rankflow_install_packages() {
  local missing=()
  for pkg in "${RANKFLOW_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "rankflow setup: installing ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || { echo "rankflow setup: need root or sudo to install ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

rankflow_build() {
  local werror=OFF
  [ -n "${CI:-}" ] && werror=ON  # CI builds treat warnings as errors
  if [ ! -f "$RANKFLOW_BUILD/CMakeCache.txt" ]; then
    cmake -S "$RANKFLOW_ROOT" -B "$RANKFLOW_BUILD" -DCMAKE_BUILD_TYPE=Release \
      -DRANKFLOW_WERROR="$werror" >/dev/null
  else
    cmake "$RANKFLOW_BUILD" -DRANKFLOW_WERROR="$werror" >/dev/null
  fi
  cmake --build "$RANKFLOW_BUILD" -j "$(nproc)"
}

# mpirun on this project's machines runs as root and with more ranks than cores; users never
# type these flags.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1

# rankflow_ctest <build dir> <label regex to leave out> [ctest args...]: the tests labelled
# "waits" (tests/CMakeLists.txt: they mostly wait for a timeout or a sleeping peer) four at a
# time (RANKFLOW_WAITS_JOBS), then every other test one at a time; fails if either run fails,
# after both have run.
# Where the caller picks labels itself (-L, -LE), one run, one test at a time: several -LE
# regexes leave a test out only if every one matches, so the two runs could overlap.
rankflow_ctest() {
  local build="$1" leave_out="$2" rc=0 arg
  shift 2
  for arg in "$@"; do
    case "$arg" in
      -L | -LE | --label-regex | --label-exclude | --label-regex=* | --label-exclude=*)
        ctest --test-dir "$build" --output-on-failure -LE "$leave_out" "$@"
        return ;;
    esac
  done
  ctest --test-dir "$build" --output-on-failure -j "${RANKFLOW_WAITS_JOBS:-4}" -L '^waits$' \
    -LE "$leave_out" "$@" || rc=1
  ctest --test-dir "$build" --output-on-failure -LE "^waits\$|$leave_out" "$@" || rc=1
  return $rc
}

rankflow_install_packages
rankflow_build
