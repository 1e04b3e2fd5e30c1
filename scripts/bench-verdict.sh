#!/usr/bin/env bash
# Judges tables written by `rankflow-bench --table` as issue 13 does: for each row users get
# (allreduce `auto`, every other collective's row; allreduce forced to one algorithm is left
# out), the median over the sweeps given of rankflow's ratio to Open MPI from the same run: Open
# MPI's time over rankflow's below 4 KiB, rankflow's busbw over Open MPI's from 4 KiB. A row is
# one collective, algorithm column and size, so rows the bench splits (--stage-copy ab) are
# judged apart.
#
#   bench-verdict.sh KIND TABLE [TABLE...]
#
# Prints every row whose median is under its line, with the ratio of each sweep, then a count,
# and apart the rows of allreduce forced to one algorithm (--algo) under 1.0 in the first table.
# KIND is the buffer kind the tables measured: symmetric, user (plain arrays) or registered.
# The line of every row of every kind is 1.0: under it the row is printed SLOWER THAN MPI (the
# list issue 13 asks to be empty). On plain arrays (user) the row is also judged against issue
# 13's targets and printed UNDER TARGET below them: allreduce at most 0.6 of Open MPI's time
# below 4 KiB (a ratio of 1/0.6) and 1.5 times its busbw from 32 KiB to 64 MiB; allgather,
# reduce_scatter, broadcast and all_to_all 1.3 times from 64 KiB to 64 MiB.
#
# Exit status: 0 when no row is slower than Open MPI, 1 when one is, 2 on bad input (an unknown
# kind, a table that cannot be read, a row that is not numbers, no row to judge). Rows the bench
# did not time (a time of 0) are not judged.
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}

[ $# -ge 2 ] || usage
kind=$1
shift
case "$kind" in symmetric | user | registered) ;; *)
  echo "bench-verdict.sh: unknown buffer kind '$kind' (symmetric, user or registered)" >&2
  exit 2
  ;;
esac
for table in "$@"; do
  [ -r "$table" ] || { echo "bench-verdict.sh: cannot read table '$table'" >&2; exit 2; }
done

# Shared by both modes: ratio() as the bench computes it, target() as issue 13 sets it.
awk_lines='
  function ratio(coll, size, oop_us, oop_bw, mpi_us, mpi_bw) {
    if (size < 4096) return mpi_us / oop_us
    return (mpi_bw > 0) ? oop_bw / mpi_bw : 0
  }
  function target(coll, size) {
    if (kind != "user") return 1.0
    if (coll == "allreduce") {
      if (size < 4096) return 1 / 0.6
      if (size >= 32768 && size <= 67108864) return 1.5
      return 1.0
    }
    if (coll == "barrier") return 1.0
    return (size >= 65536 && size <= 67108864) ? 1.3 : 1.0
  }
  function counted(coll, algo, oop_us, mpi_us) {
    return !(coll == "allreduce" && algo !~ /^auto(\+|$)/) && oop_us > 0 && mpi_us > 0
  }'

awk -v kind="$kind" "$awk_lines"'
    function number(field) { return field ~ /^[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/ }
    /^#/ || NF == 0 { next }
    NF < 9 || !number($3) || !number($4) || !number($5) || !number($8) || !number($9) {
      printf "bench-verdict.sh: %s:%d is not a row of numbers: %s\n", FILENAME, FNR, $0 > "/dev/stderr"
      unreadable++
      next
    }
    FILENAME == ARGV[1] && $1 == "allreduce" && $2 !~ /^auto(\+|$)/ && $4 > 0 && $8 > 0 &&
        ratio($1, $3, $4, $5, $8, $9) < 1.0 {
      forced++  # counted apart: what each algorithm does, not what a call gets
    }
    counted($1, $2, $4, $8) {
      key = $1 " " $2 " " $3
      if (!(key in n)) { order[++keys] = key; coll[key] = $1; algo[key] = $2; size[key] = $3 }
      values[key, ++n[key]] = ratio($1, $3, $4, $5, $8, $9)
    }
    function median(key,    i, j, v, t, m) {
      m = n[key]
      for (i = 1; i <= m; i++) v[i] = values[key, i]
      for (i = 2; i <= m; i++)
        for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
      return (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
    }
    function sweeps(key,    i, s) {
      for (i = 1; i <= n[key]; i++) s = s (i > 1 ? " " : "") sprintf("%.2f", values[key, i])
      return s
    }
    END {
      slower = 0; under = 0; fewest = 0; most = 0
      for (k = 1; k <= keys; k++) {
        key = order[k]; m = median(key); line = target(coll[key], size[key])
        if (n[key] > most) most = n[key]
        if (fewest == 0 || n[key] < fewest) fewest = n[key]
        if (m < 1.0) {
          printf "SLOWER THAN MPI  %-10s %-15s %-14s %10d  x%.3f  (sweeps: %s)\n", kind, coll[key],
                 algo[key], size[key], m, sweeps(key)
          slower++
        } else if (m < line) {
          printf "UNDER TARGET     %-10s %-15s %-14s %10d  x%.3f < x%.2f  (sweeps: %s)\n", kind,
                 coll[key], algo[key], size[key], m, line, sweeps(key)
          under++
        }
      }
      if (unreadable) exit 2
      if (keys == 0) {
        print "bench-verdict.sh: no row to judge in the tables given" > "/dev/stderr"
        exit 2
      }
      printf "# %s: %d of %d rows slower than Open MPI in the median (of %s a row)", kind,
             slower, keys, (most == 1) ? "1 sweep" : ((fewest == most) ? most : fewest "-" most) " sweeps"
      if (kind == "user") printf "; %d more under issue 13'"'"'s targets", under
      printf "\n"
      printf "# %s: %d rows of allreduce forced to one algorithm below 1.0 in the first table " \
             "(not judged)\n", kind, forced
      exit slower > 0
    }' "$@"
