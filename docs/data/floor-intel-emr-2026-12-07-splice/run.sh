#!/usr/bin/env bash
# Three alternated rounds of every path at the all_to_all's 4 MiB row (2 MiB blocks), with and
# without the own block's copy, and the kernel paths alone at 64 KiB, 1 MiB and 2 MiB a call.
set -euo pipefail
cd "$(dirname "$0")"
g++ -O2 -mavx2 -o /tmp/splice-floor splice-floor.cpp
{
  echo "# $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) pipe-max-size $(cat /proc/sys/fs/pipe-max-size)"
  for round in 1 2 3; do
    echo "# round $round"
    for mode in writev readv splice; do /tmp/splice-floor $mode 2048 256 1; done
    for piece in 64 1024 2048; do
      for mode in writev splice; do /tmp/splice-floor $mode 2048 $piece 0 | grep -v wrong; done
    done
  done
} | tee results.txt
