#!/usr/bin/env bash
# scripts/bench-verdict.sh judges hand-written sweeps as issue 13 does: a row is SLOWER THAN MPI
# when its median is under 1.0, not when one sweep is; allreduce forced to one algorithm is not
# judged; plain arrays (user) are also judged against the targets, at their size bounds, other
# kinds only against 1.0; bad input is refused. Fails on the first check that does not hold,
# printing what the script said.
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
header() {
  echo "# collective algorithm bytes oop_us oop_busbw ip_us ip_busbw mpi_us mpi_busbw memcpy_gbs wrong ran"
}
# Three sweeps; the rows that differ between sweeps are the arguments.
sweep() {  # sweep <file> <broadcast 16K> <broadcast 8K> <all_to_all 4M>
  {
    header
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
sweep "$dir/3.txt" 1.05 1.20 1.33

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
# run <expected exit status> <args...>: the output (stdout and stderr) in $out
run() {
  local want=$1 status=0
  shift
  out=$(bash "$verdict" "$@" 2>&1) || status=$?
  [ "$status" = "$want" ] || fail "exit status $status, not $want, for: $*" "$out"
}

run 1 user "$dir/1.txt" "$dir/2.txt" "$dir/3.txt"
expect "$out" "^SLOWER THAN MPI +user +broadcast +direct +16384 +x0\.960 +\(sweeps: 0\.95 0\.96 1\.05\)$" \
  "a row under 1.0 in two sweeps of three is slower"
expect_not "$out" "broadcast +direct +8192" "a row under 1.0 in one sweep of three is not"
expect_not "$out" "onephase|0\.50" "allreduce forced to one algorithm is not judged"
expect "$out" "^UNDER TARGET +user +allreduce +auto +1024 +x1\.500 < x1\.67 " \
  "allreduce below 4 KiB is judged against 0.6 of Open MPI's time"
expect "$out" "^UNDER TARGET +user +all_to_all +direct +4194304 +x1\.250 < x1\.30 " \
  "all_to_all from 64 KiB is judged against x1.3"
expect_not "$out" "allgather|allreduce +auto +65536|barrier" "rows that meet their line are not listed"
expect "$out" "^# user: 1 of 7 rows slower than Open MPI in the median \(of 3 sweeps a row\); 2 more under" \
  "the count"
expect "$out" "^# user: 1 rows of allreduce forced to one algorithm below 1\.0 in the first table" \
  "forced allreduce rows under 1.0 are counted apart, in the first table only"

run 1 symmetric "$dir/1.txt" "$dir/2.txt" "$dir/3.txt"
expect_not "$out" "UNDER TARGET" "the targets are for plain arrays only"
expect "$out" "^SLOWER THAN MPI +symmetric +broadcast +direct +16384 " "every kind is judged against 1.0"

run 1 user "$dir/1.txt"
expect "$out" "^SLOWER THAN MPI +user +broadcast +direct +8192 +x0\.900 " "one sweep is its own median"
run 0 user "$dir/2.txt" "$dir/3.txt"
expect "$out" "^UNDER TARGET +user +all_to_all +direct +4194304 +x1\.290 < x1\.30 " \
  "two sweeps: the median is the mean of the two (1.25, 1.33)"
expect_not "$out" "SLOWER" "two sweeps: the mean of 0.96 and 1.05 is not under 1.0"

# The targets' bounds: 4 KiB, 32 KiB and 64 KiB start a line, 64 MiB is the last size with one.
{
  header
  row allreduce auto 2048 1.60       # under 1/0.6
  # from 4 KiB the busbw ratio (1.2), not the time ratio (0.9); no target until 32 KiB
  echo "allreduce auto 4096 1 12 1 12 0.9 10 1 0 x"
  row allreduce auto 16384 1.40      # no target under 32 KiB
  row allreduce auto 32768 1.45      # under 1.5
  row allreduce auto 67108864 1.45   # under 1.5
  row allreduce auto 134217728 1.10  # no target above 64 MiB
  row broadcast direct 32768 1.20    # no target under 64 KiB
  row broadcast direct 65536 1.25    # under 1.3
  row broadcast direct 67108864 1.25 # under 1.3
  row broadcast direct 134217728 1.10
  row allreduce auto+stream 65536 0.80   # --stage-copy ab: each half judged on its own
  row allreduce auto+memcpy 65536 2.00
  row all_to_all direct 8192 1.50
} > "$dir/bounds.txt"
run 1 user "$dir/bounds.txt"
for listed in "allreduce +auto +2048 " "allreduce +auto +32768 " "allreduce +auto +67108864 " \
              "broadcast +direct +65536 " "broadcast +direct +67108864 "; do
  expect "$out" "^UNDER TARGET +user +$listed" "a size with a target is judged against it"
done
for clear in "auto +4096 " "auto +16384 " "auto +134217728 " "direct +32768 " "direct +134217728 " \
             "all_to_all"; do
  expect_not "$out" "$clear" "a size without a target, clear of 1.0, is not listed"
done
expect "$out" "^SLOWER THAN MPI +user +allreduce +auto\+stream +65536 +x0\.800 " \
  "rows split by --stage-copy ab are judged apart"

# Open MPI's busbw of 0 can not be compared: the row is a loss. A row the bench did not time
# (a time of 0) is not judged.
{
  header
  echo "broadcast direct 65536 1 5 1 5 1 0 1 0 x"
  echo "allgather direct 65536 0 0 0 0 1 10 1 0 x"
  echo "reduce_scatter direct 65536 1 20 1 20 0 0 1 0 x"
} > "$dir/zero.txt"
run 1 symmetric "$dir/zero.txt"
expect "$out" "^SLOWER THAN MPI +symmetric +broadcast +direct +65536 +x0\.000 " \
  "a row beside Open MPI's busbw of 0 is a loss"
expect "$out" "^# symmetric: 1 of 1 rows" "rows not timed are not judged"

# Bad input.
run 2 plain "$dir/1.txt"
expect "$out" "unknown buffer kind 'plain'" "a bad kind is refused, by name"
run 2 user "$dir/missing.txt"
expect "$out" "cannot read table '.*missing.txt'" "a missing table is refused, by name"
header > "$dir/empty.txt"
run 2 user "$dir/empty.txt"
expect "$out" "no row to judge" "a table without rows is refused"
{ header; echo "broadcast direct 65536 1 nan 1 nan 1 10 1 0 x"; } > "$dir/nan.txt"
run 2 user "$dir/nan.txt"
expect "$out" "nan.txt:2 is not a row of numbers" "a row that is not numbers is refused, by line"
run 2 user
echo "bench-verdict.sh: every check held"
