#!/usr/bin/env bash
# Where the plain allreduce of 4 MiB spends the time it takes above its floor in rankflow-bench:
# (1) the floor program timed as the bench times (SYNC=1) beside rankflow-bench, six alternated
# pairs; (2) rankflow's call in a loop of its own (allreduce-loop.cpp) beside the floor, three
# pairs; (3) that loop with rankflow-bench's surroundings added one at a time, two rounds.
# Run from the repository root after a build: bash docs/data/floor-intel-emr-2026-12-07-allreduce/loop.sh
set -euo pipefail
here=docs/data/floor-intel-emr-2026-12-07-allreduce
g++ -O3 -std=c++20 -mavx2 "$here/allreduce-floor.cpp" -o /tmp/allreduce-floor
g++ -O2 -std=c++20 -DOMPI_SKIP_MPICXX=1 -Iinclude "$here/allreduce-loop.cpp" -o /tmp/allreduce-loop \
  -Lbuild/src/runtime -Lbuild/src/api -Lbuild/collectives -Lbuild/src/transport -Lbuild/src/common \
  -lrankflow_runtime -lrankflow_api -lrankflow_collectives -lrankflow_transport -lrankflow_common \
  $(pkg-config --cflags --libs ompi-c ucx hwloc) -pthread
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
floor() { echo -n "floor (read, SYNC=1): "; SYNC=1 FRESH=1 /tmp/allreduce-floor 4194304 read 524288 | sed 's/.*median/median/'; }
echo "## (1) floor beside rankflow-bench, $(date -u +%H:%M:%S)"
for pair in 1 2 3 4 5 6; do
  floor
  mpirun -n 2 --bind-to core build/bench/rankflow-bench --coll allreduce --buffers user \
    --min-bytes 4M --max-bytes 4M | grep '^allreduce' |
    awk '{printf "rankflow-bench: rankflow %s us, Open MPI %s us\n", $8, $18}'
done
echo "## (2) floor beside rankflow's call in a loop of its own, $(date -u +%H:%M:%S)"
for pair in 1 2 3; do
  floor
  echo -n "loop: "; mpirun -n 2 --bind-to core /tmp/allreduce-loop 4194304 rf
done
echo "## (3) the loop with the bench's surroundings, $(date -u +%H:%M:%S)"
for round in 1 2; do
  for variant in "" "BIG=1" "INTER=1" "RFB=1" "IP=1" "BIG=1 INTER=1 RFB=1 IP=1"; do
    flags=()
    for v in $variant; do flags+=(-x "$v"); done
    echo -n "loop ${variant:-plain}: "
    mpirun -n 2 --bind-to core "${flags[@]}" /tmp/allreduce-loop 4194304 rf
  done
done
