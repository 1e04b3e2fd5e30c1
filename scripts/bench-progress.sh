#!/usr/bin/env bash
# What the progress rule and RANKFLOW_PROGRESS=thread cost: allreduce and broadcast on plain user
# buffers and on symmetric buffers at 4 B and 1 MiB, 2 ranks bound to 2 cores, under shared
# memory and under UCX_TLS=tcp,self, with progress by the caller (default) and by the
# background thread, each beside Open MPI in the same run (time in us, ratio = MPI time /
# rankflow time: above 1 is faster than Open MPI).
#
#   scripts/bench-progress.sh                      # this build
#   scripts/bench-progress.sh --baseline OLD_BUILD # also OLD_BUILD/bench/rankflow-bench, interleaved
#   ROUNDS=3 scripts/bench-progress.sh             # repeat every run (medians are per run)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
baseline=""
if [ "${1:-}" = "--baseline" ]; then baseline=$2; shift 2; fi
rounds=${ROUNDS:-1}

# run <label> <bench> <tls> <mode> <buffers> [bench options]: prints "label tls mode buffers collective size rf mpi ratio"
run() {
  local label=$1 bench=$2 tls=$3 mode=$4 buffers=$5
  shift 5
  local env=(RANKFLOW_PROGRESS="$mode")
  [ "$tls" = tcp ] && env+=(UCX_TLS=tcp,self)
  for size in 4 1M; do
    env "${env[@]}" mpirun -n 2 --bind-to core "$bench" --coll allreduce,broadcast \
      --buffers "$buffers" --min-bytes "$size" --max-bytes "$size" "$@" 2>/dev/null |
      awk -v l="$label" -v t="$tls" -v m="$mode" -v b="$buffers" \
        '!/^#/ && NF > 10 { printf "%-9s %-4s %-7s %-10s %-10s %9s %9.2f %9.2f %7.2f\n", l, t, m, b, $1, $3, $8, $18, $21 }' ||
      echo "$label $tls $mode $buffers: the run at $size B failed"
  done
}

printf "%-9s %-4s %-7s %-10s %-10s %9s %9s %9s %7s\n" build tls mode buffers collective bytes \
  "rf(us)" "mpi(us)" ratio
for _ in $(seq "$rounds"); do
  for tls in shm tcp; do
    for buffers in user symmetric; do
      for mode in caller thread; do
        run this "$RANKFLOW_BUILD/bench/rankflow-bench" "$tls" "$mode" "$buffers" "$@"
        if [ -n "$baseline" ] && [ "$mode" = caller ]; then
          run baseline "$baseline/bench/rankflow-bench" "$tls" "$mode" "$buffers" "$@"
        fi
      done
    done
  done
done
