#!/bin/bash
# usage: ab.sh N "bench args" bin1 bin2 ... ; prints: bin pp coll bytes rf_us mpi_us ratio
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
n=$1; args=$2; shift 2
for i in $(seq $n); do
  for b in "$@"; do
    pp=$(/tmp/cma/floor | tail -1 | awk '{print $7}')
    mpirun -n 2 --bind-to core /tmp/ab/$b $args 2>&1 | grep -v "^#" | awk -v b=$b -v pp=$pp 'NF>20{print b, pp, $1, $3, $8, $18, $21}'
  done
done
