#!/usr/bin/env bash
# Scaling sweep: every collective at several rank counts, each rank bound to its own core,
# symmetric and plain (user) buffers, each row beside Open MPI from the same run. Needs at least
# as many cores as the largest rank count (the default 4 8 16 wants 16); on the 2-core CI
# machine use scripts/bench.sh instead. Writes one bench table per rank count and buffer kind to
# the output folder and prints, per rank count and buffer kind, the median ratio to Open MPI of
# each collective below 4 KiB, 4 KiB-64 KiB and from 64 KiB, and the rows below 1.0
# (scripts/scaling-summary.py, which also reads a folder copied from another machine).
#
#   scripts/scaling.sh [-o DIR] [-n "4 8 16"] [-b "symmetric user"] [-t SECONDS] [-u core|hwthread]
#                      [-- bench options]
#
# -o: output folder (default results/scaling-<date>-<host>); -n: rank counts; -b: buffer kinds;
# -t: a time limit per launch (default 150 s: a launch that hangs is stopped and reported);
# -u: what each rank is bound to, core (default) or hwthread (cores that run two threads).
# Bench options default to --coll all --algo auto --max-bytes 16M --batches 5.
# RANKFLOW_BENCH names the bench binary (default build/bench/rankflow-bench, which this script
# builds with scripts/setup.sh when it is missing).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="" ranks="4 8 16" kinds="symmetric user" limit=150 unit=core
while getopts "o:n:b:t:u:" opt; do
  case $opt in
    o) out=$OPTARG ;;
    n) ranks=$OPTARG ;;
    b) kinds=$OPTARG ;;
    t) limit=$OPTARG ;;
    u) unit=$OPTARG ;;
    *) sed -n 2,18p "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
bench_options=("$@")
[ ${#bench_options[@]} -eq 0 ] && bench_options=(--coll all --algo auto --max-bytes 16M --batches 5)

bench="${RANKFLOW_BENCH:-$root/build/bench/rankflow-bench}"
if [ ! -x "$bench" ]; then
  bash "$root/scripts/setup.sh" || exit 1  # installs what is missing and builds
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out="${out:-$root/results/scaling-$(date +%Y%m%d-%H%M%S)-$(hostname)}"
mkdir -p "$out"

cores=$(nproc)
failed=0
echo "# scaling: $(date -u '+%Y-%m-%d %H:%M UTC'), $cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "# load before the run: $(cat /proc/loadavg)"
for np in $ranks; do
  bind=(--bind-to "$unit")
  [ "$unit" = hwthread ] && bind+=(--use-hwthread-cpus)
  if [ "$np" -gt "$cores" ]; then
    echo "# $np ranks on $cores cores: oversubscribed, not bound (figures are not scaling figures)"
    bind=(--bind-to none --oversubscribe)
  fi
  for buffers in $kinds; do
    table="$out/np$np-$buffers.txt"
    start=$(date +%s)
    timeout --kill-after=10 "$limit" mpirun -n "$np" "${bind[@]}" "$bench" \
      "${bench_options[@]}" --buffers "$buffers" --table "$table" > "$out/np$np-$buffers.log" 2>&1
    rc=$?
    echo "# np $np $buffers: rc $rc in $(($(date +%s) - start)) s"
    if [ $rc -ne 0 ]; then
      failed=$((failed + 1))
      tail -5 "$out/np$np-$buffers.log"
    fi
  done
done

if command -v python3 >/dev/null; then
  python3 "$root/scripts/scaling-summary.py" "$out"
else
  echo "# no python3 here: summarise later with scripts/scaling-summary.py $out"
fi
echo "# tables in $out"
[ "$failed" -eq 0 ] || { echo "# $failed launches failed or timed out" >&2; exit 1; }
