#!/usr/bin/env bash
# scripts/bench-verdict.sh judges three hand-written sweeps as issue 13 does: a row is SLOWER
# THAN MPI when its median is under 1.0, not when one sweep is; allreduce forced to one
# algorithm is not judged; plain arrays (user) are also judged against the targets, other kinds
# only against 1.0; to-confirm names the collectives near a line. Fails on the first check that
# does not hold, printing what the script said.
#   bench_verdict_test.sh <path of bench-verdict.sh>
set -euo pipefail
verdict=${1:?usage: bench_verdict_test.sh <bench-verdict.sh>}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# One table row: collective algorithm bytes, then the ratio the row should read. Below 4 KiB the
# ratio is Open MPI's time over rankflow's (rankflow 1 us); from 4 KiB, rankflow's busbw over
# Open MPI's (Open MPI 10 GB/s).
row() {
  local coll=$1 algo=$2 bytes=$3 ratio=$4
  awk -v c="$coll" -v a="$algo" -v b="$bytes" -v r="$ratio" 'BEGIN {
    if (b < 4096) printf "%s %s %d 1 0 1 0 %.4f 0 1 0 x\n", c, a, b, r
    else printf "%s %s %d 1 %.4f 1 0 1 10 1 0 x\n", c, a, b, 10 * r
  }'
}
sweep() {  # sweep <file> <broadcast 16K> <broadcast 8K> <all_to_all 4M>
  {
    echo "# collective algorithm bytes oop_us oop_busbw ip_us ip_busbw mpi_us mpi_busbw memcpy_gbs wrong ran"
    row allreduce auto 1024 1.50        # under the 1/0.6 target below 4 KiB, above 1.0
    row allreduce onephase 1024 0.50    # a forced algorithm: never judged
    row allreduce auto 65536 1.60       # meets 1.5
    row allgather direct 32768 1.20     # no target under 64 KiB
    row broadcast direct 8192 "$3"
    row broadcast direct 16384 "$2"
    row all_to_all direct 4194304 "$4"
    row barrier direct 0 2.00
  } > "$1"
}
sweep "$dir/1.txt" 0.95 0.90 1.20
sweep "$dir/2.txt" 0.96 1.05 1.25
sweep "$dir/3.txt" 1.05 1.20 1.35

fail() {
  echo "FAILED: $1"
  echo "--- bench-verdict.sh said:"
  echo "$2"
  exit 1
}
expect() {  # expect <output> <pattern> <what it means>
  grep -qE -- "$2" <<< "$1" || fail "$3 (no line matches '$2')" "$1"
}
expect_not() {
  if grep -qE -- "$2" <<< "$1"; then fail "$3 (a line matches '$2')" "$1"; fi
}

out=$(bash "$verdict" verdict user "$dir/1.txt" "$dir/2.txt" "$dir/3.txt")
expect "$out" "^SLOWER THAN MPI +user +broadcast +16384 +x0\.96 +\(sweeps: 0\.95 0\.96 1\.05\)$" \
  "a row under 1.0 in two sweeps of three is slower"
expect_not "$out" "broadcast +8192" "a row under 1.0 in one sweep of three is not"
expect_not "$out" "onephase|0\.50" "allreduce forced to one algorithm is not judged"
expect "$out" "^UNDER TARGET +user +allreduce +1024 +x1\.50 < x1\.67 " \
  "allreduce below 4 KiB is judged against 0.6 of Open MPI's time"
expect "$out" "^UNDER TARGET +user +all_to_all +4194304 +x1\.25 < x1\.30 " \
  "all_to_all from 64 KiB is judged against x1.3"
expect_not "$out" "allgather|allreduce +65536|barrier" "rows that meet their line are not listed"
expect "$out" "^# user: 1 of 7 rows slower than Open MPI in the median \(of 3 sweeps a row\); 2 more under" \
  "the count"

out=$(bash "$verdict" verdict symmetric "$dir/1.txt" "$dir/2.txt" "$dir/3.txt")
expect_not "$out" "UNDER TARGET" "the targets are for plain arrays only"
expect "$out" "^SLOWER THAN MPI +symmetric +broadcast +16384 " "every kind is judged against 1.0"

out=$(bash "$verdict" verdict user "$dir/1.txt")
expect "$out" "^SLOWER THAN MPI +user +broadcast +8192 +x0\.90 " "one sweep is its own median"

out=$(bash "$verdict" to-confirm user "$dir/3.txt")
[ "$out" = "allreduce,broadcast,all_to_all" ] ||
  fail "to-confirm names the collectives with a row under 1.1 times its line" "$out"
out=$(bash "$verdict" to-confirm symmetric "$dir/3.txt")
[ "$out" = "broadcast" ] || fail "to-confirm judges other kinds against 1.0 only" "$out"

if out=$(bash "$verdict" verdict plain "$dir/1.txt" 2>&1); then fail "a bad kind is refused" "$out"; fi
expect "$out" "unknown buffer kind 'plain'" "the refusal names the kind"
if out=$(bash "$verdict" verdict user "$dir/missing.txt" 2>&1); then
  fail "a missing table is refused" "$out"
fi
expect "$out" "cannot read table '.*missing.txt'" "the refusal names the table"
echo "bench-verdict.sh: every check held"
