#!/bin/bash
# ab3.sh LOG ROUNDS COLLS MIN MAX BIN...: alternating launches, mode probe before each round
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
log=$1; rounds=$2; colls=$3; lo=$4; hi=$5; shift 5
for r in $(seq 1 $rounds); do
  echo "# round $r $(date +%H:%M:%S) probe: $(/tmp/floor | tail -1)" >> $log
  for bin in "$@"; do
    echo "## $(basename $bin)" >> $log
    mpirun -n 2 --bind-to core $bin --coll $colls --algo auto --min-bytes $lo --max-bytes $hi --buffers user 2>&1 | grep -v "^#" >> $log
  done
done
