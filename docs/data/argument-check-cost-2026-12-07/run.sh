#!/usr/bin/env bash
# The cost of RANKFLOW_CHECK_ARGS=on: three alternated launches of rankflow-bench without and
# with it, plain buffers, allreduce, broadcast and all_to_all from 4 B to 64 KiB (Open MPI's
# column is the baseline of each launch). Tables: off-N.tbl and on-N.tbl.
set -euo pipefail
cd "$(dirname "$0")"
root=../../..
for r in 1 2 3; do
  for c in off on; do
    mpirun -n 2 --bind-to core -x RANKFLOW_CHECK_ARGS=$c "$root/build/bench/rankflow-bench" \
      --coll allreduce,broadcast,all_to_all --max-bytes 64K --buffers user --table "$c-$r.tbl" >/dev/null
  done
done
for c in off on; do
  echo "== RANKFLOW_CHECK_ARGS=$c: us per call, rankflow / Open MPI"
  for r in 1 2 3; do
    awk '$2=="auto" || $1!="allreduce" { if ($3==4 || $3==1024 || $3==65536)
         printf "%s %s %.2f / %.2f | ", $1, $3, $4, $8 }' "$c-$r.tbl"
    echo
  done
done
