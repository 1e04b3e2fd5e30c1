#!/usr/bin/env bash
# Installs rankflow from the build tree into a private prefix, builds examples/mpi_embedding
# against it with find_package(rankflow) exactly as a user would, and runs it on 4 ranks.
# Usage: run_install_test.sh <source dir> <build dir> <mpiexec...>
set -euo pipefail
source_dir=$1 build_dir=$2
shift 2
prefix="$build_dir/install-test"
rm -rf "$prefix" "$build_dir/embedding-build"
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
cmake -S "$source_dir/examples/mpi_embedding" -B "$build_dir/embedding-build" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build_dir/embedding-build" >/dev/null
test -f "$prefix/lib/pkgconfig/rankflow.pc" || test -f "$prefix"/lib*/pkgconfig/rankflow.pc
"$@" -n 4 "$build_dir/embedding-build/mpi_embedding"
