#!/usr/bin/env bash
# rankflow-bench --huge-pages: the plain arrays are on 2 MiB pages (the header says how many MiB
# the kernel gave, which must be at least the arrays' 18 MiB at --max-bytes 4M) and every
# collective's result on them matches Open MPI's (the #wrong columns are 0).
# Skipped (77) where the kernel has transparent huge pages off.
# Usage: bench_huge_pages_test.sh MPIEXEC... -- BENCH
set -uo pipefail
launcher=()
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  launcher+=("$1")
  shift
done
if [ "$#" -ne 2 ] || [ "$1" != "--" ]; then
  echo "usage: bench_huge_pages_test.sh MPIEXEC... -- BENCH" >&2
  exit 2
fi
bench=$2
thp=/sys/kernel/mm/transparent_hugepage/enabled
if [ ! -r "$thp" ] || grep -q '\[never\]' "$thp"; then
  echo "transparent huge pages are off here ($thp): skipped"
  exit 77
fi
out=$("${launcher[@]}" -n 2 "$bench" --quick --coll all --buffers user --huge-pages \
  --min-bytes 1M --max-bytes 4M 2>&1)
status=$?
echo "$out"
[ "$status" -eq 0 ] || { echo "FAILED: rankflow-bench exited $status"; exit 1; }
header=$(grep '^# plain arrays on 2 MiB pages' <<<"$out")
mib=$(sed -n 's/.*madvise accepted, \([0-9]*\) MiB of huge pages.*/\1/p' <<<"$header")
if [ -z "$mib" ] || [ "$mib" -lt 18 ]; then
  echo "FAILED: the arrays are not on huge pages: '$header'"
  exit 1
fi
rows=$(grep -cE '^(allreduce|allgather|reduce_scatter|broadcast|all_to_all|barrier) ' <<<"$out")
wrong=$(grep -cE '\| +[0-9.]+ +[0-9.]+ +[0-9.]+ +[1-9][0-9]* \|' <<<"$out")
if [ "$rows" -lt 16 ] || [ "$wrong" -ne 0 ]; then
  echo "FAILED: $rows rows, $wrong with wrong elements"
  exit 1
fi
echo "bench huge pages: $mib MiB of huge pages, $rows rows, none wrong"
