#!/bin/bash
# build-driver.sh SOURCE OUTPUT: builds a measurement driver (e.g. small-floor.cpp) against the
# static libraries of the repository's configured build/ (cmake --build build first).
set -euo pipefail
src=$(realpath "$1"); out=$(realpath -m "$2")
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
mpi=/usr/lib/x86_64-linux-gnu/openmpi
lib=/usr/lib/x86_64-linux-gnu
cd "$root/build"
c++ -O3 -DNDEBUG -DOMPI_SKIP_MPICXX -std=c++20 -I"$root" -I"$root/include" -I"$root/src" \
  -isystem $mpi/include -isystem $mpi/include/openmpi "$src" -o "$out" -Wl,-rpath,$mpi/lib \
  src/runtime/librankflow_runtime.a src/api/librankflow_api.a \
  collectives/librankflow_collectives.a src/transport/librankflow_transport.a \
  src/common/librankflow_common.a $mpi/lib/libmpi.so $lib/libucp.so $lib/libuct.so \
  $lib/libucs.so $lib/libucm.so $lib/libhwloc.so
