#!/usr/bin/env bash
# Draws a RANKFLOW_TRACE file as a PNG timeline (one lane per chip worker and sub-worker, one
# box per task, labelled with its name and id) with gnuplot, for when no browser is at hand.
# Perfetto (ui.perfetto.dev) or chrome://tracing open the same file interactively.
#
#   RANKFLOW_TRACE=trace.json mpirun -n 3 build/examples/ffn_tp_parallel/ffn_tp_parallel
#   scripts/trace-plot.sh trace.json trace.png
set -euo pipefail
trace=${1:?usage: trace-plot.sh TRACE.json OUT.png}
out=${2:?usage: trace-plot.sh TRACE.json OUT.png}
command -v gnuplot >/dev/null || { echo "trace-plot: needs gnuplot (apt-get install gnuplot-nox)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Lanes: "tid name" from the thread_name records; tasks: "tid start_us end_us label".
sed -n 's/.*"thread_name", "pid": 0, "tid": \([0-9]*\), "args": {"name": "\([^"]*\)"}.*/\1 \2/p' \
  "$trace" >"$work/lanes"
sed -n 's/.*"ph": "X", "name": "\([^"]*\)", "pid": 0, "tid": \([0-9]*\), "ts": \([0-9.e+-]*\), "dur": \([0-9.e+-]*\), "args": {"task": \([0-9]*\).*/\2 \3 \4 \1 \5/p' \
  "$trace" >"$work/spans"
[ -s "$work/spans" ] || { echo "trace-plot: no tasks in $trace" >&2; exit 1; }

# Boxes too narrow for their label (under 8 % of the run) go unlabelled.
span=$(awk 'NR == 1 || $2 < lo { lo = $2 } $2 + $3 > hi { hi = $2 + $3 } END { print hi - lo }' "$work/spans")
awk -v span="$span" 'NR == FNR { lane[$1] = NR - 1; next }
     { y = lane[$1]; label = ($3 > 0.08 * span) ? $4 " #" $5 : ""
       printf "%s %s %s %d \"%s\"\n", $2, $2 + $3, y, y, label }' \
  "$work/lanes" "$work/spans" >"$work/boxes"
ytics=$(awk '{ name = $0; sub(/^[0-9]+ /, "", name); printf "%s\"%s\" %d", (NR > 1 ? ", " : ""), name, NR - 1 }' "$work/lanes")
lanes=$(wc -l <"$work/lanes")

gnuplot <<GNUPLOT
set terminal pngcairo size 1200,$((160 + 70 * lanes)) font "sans,11" noenhanced
set output "$out"
set title "rankflow run timeline ($(basename "$trace"))"
set xlabel "time (µs)"
set ytics ($ytics)
set yrange [-0.6:$lanes - 0.4]
set grid xtics
set style fill solid 0.6 border rgb "black"
unset key
plot "$work/boxes" using ((\$1 + \$2) / 2):3:((\$2 - \$1) / 2):(0.3):4 with boxxyerror lc variable, \
     "" using ((\$1 + \$2) / 2):3:5 with labels font "sans,10"
GNUPLOT
echo "trace-plot: wrote $out"
