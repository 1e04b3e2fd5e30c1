#!/bin/bash
# ab-buf.sh LOG ROUNDS BUFFERS COLLS MIN MAX BIN...
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
log=$1; rounds=$2; buffers=$3; colls=$4; lo=$5; hi=$6; shift 6
for r in $(seq 1 $rounds); do
  echo "# round $r $(date +%H:%M:%S) probe: $(/tmp/floor | tail -1)" >> $log
  for bin in "$@"; do
    echo "## $(basename $bin)" >> $log
    mpirun -n 2 --bind-to core $bin --coll $colls --algo auto --min-bytes $lo --max-bytes $hi --buffers $buffers 2>&1 | grep -v "^#" >> $log
  done
done
