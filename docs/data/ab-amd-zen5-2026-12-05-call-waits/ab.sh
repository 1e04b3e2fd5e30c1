#!/bin/bash
# ab.sh LOG ROUNDS COLLS MIN MAX A_BIN B_BIN: alternating launches, mode probe before each pair
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
log=$1; rounds=$2; colls=$3; lo=$4; hi=$5; A=$6; B=$7
for r in $(seq 1 $rounds); do
  echo "# round $r $(date +%H:%M:%S) probe: $(/tmp/floor | tail -1)" >> $log
  for bin in $A $B; do
    echo "## $(basename $bin)" >> $log
    mpirun -n 2 --bind-to core $bin --coll $colls --algo auto --min-bytes $lo --max-bytes $hi --buffers user 2>&1 | grep -v "^#" >> $log
  done
done
