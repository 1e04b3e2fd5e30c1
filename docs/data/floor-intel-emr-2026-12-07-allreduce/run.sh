#!/usr/bin/env bash
# The plain allreduce at 4 and 8 MiB beside the floor of its protocol, in the same minutes:
# four rounds of the library-free program (allreduce-floor.cpp: `read`, rankflow's reading
# twophase; `full`, every member reading the peer's whole input and reducing all of it) and of
# rankflow-bench (the tables' choice, twophase, and Open MPI's MPI_Allreduce in the same run).
# Run from the repository root after a build: bash docs/data/floor-intel-emr-2026-12-07-allreduce/run.sh
set -euo pipefail
here=docs/data/floor-intel-emr-2026-12-07-allreduce
g++ -O3 -std=c++20 -mavx2 "$here/allreduce-floor.cpp" -o /tmp/allreduce-floor
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
for round in 1 2 3 4; do
  echo "# round $round $(date -u +%H:%M:%S)"
  for bytes in 4194304 8388608; do
    FRESH=1 /tmp/allreduce-floor "$bytes" read 524288
    FRESH=1 /tmp/allreduce-floor "$bytes" full 524288
  done
  mpirun -n 2 --bind-to core build/bench/rankflow-bench --coll allreduce --buffers user \
    --min-bytes 4M --max-bytes 8M | grep '^allreduce' |
    awk '{printf "rankflow-bench %s: rankflow %s us, Open MPI %s us, busbw ratio %s (%s)\n", $3, $8, $18, $21, $NF}'
done
