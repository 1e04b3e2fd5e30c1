#!/bin/bash
# The runs of results.txt: bash run.sh > results.txt (about 4 minutes; nothing else running).
set -e
cd "$(dirname "$0")"
g++ -O2 -mavx2 -pthread all-to-all-variants.cpp -o /tmp/a2a-variants
g++ -O2 -mavx2 kernel-copy.cpp -o /tmp/kernel-copy
echo "# $(date -u +%FT%TZ) $(lscpu | grep 'Model name' | sed 's/  */ /g'), probe: $(/tmp/floor 2>/dev/null | tail -1)"
echo "## one core: the kernel's copy against user copies"
/tmp/kernel-copy 2097152
/tmp/kernel-copy 8388608
echo "## warm all_to_all (SETTLE=0, as the bench below 16 MiB), 3 rounds alternated"
for r in 1 2 3; do
  for v in local kw kr rb ring; do SETTLE=0 CALLS=30 /tmp/a2a-variants 4194304 $v 131072; done
  SETTLE=0 CALLS=30 /tmp/a2a-variants 4194304 kw 2097152
  for v in local kw ring; do SETTLE=0 CALLS=30 /tmp/a2a-variants 8388608 $v 131072; done
done
echo "## ring variants, 4 MiB warm"
for e in "" WNT=1 RMC=1 "WNT=1 RMC=1"; do echo -n "[$e] "; env $e SETTLE=0 CALLS=30 /tmp/a2a-variants 4194304 ring 131072 4; done
echo "## kw split: member 0's kernel write and own-block stream (us), 4 MiB warm"
SPLIT=1 SETTLE=0 CALLS=12 /tmp/a2a-variants 4194304 kw 2097152 2>&1 | tail -6
echo "## settled caches (as the bench from 16 MiB), 2 rounds alternated"
for r in 1 2; do
  for B in 16777216 33554432 67108864; do for v in local kw ring; do CALLS=7 /tmp/a2a-variants $B $v 131072; done; done
done
