#!/bin/bash
# Builds stream-floor.cpp and runs it for 16- and 64-byte slots, each side's own work between
# messages at three settings (loop counts), three times each.
set -e
cd "$(dirname "$0")"
g++ -O2 -o /tmp/stream-floor stream-floor.cpp
date -u +%FT%TZ
for stride in 16 64; do
  for w in "10 10" "10 30" "30 10" "30 30"; do
    for rep in 1 2 3; do
      /tmp/stream-floor $stride $w 1 | sort | tr '\n' ' '
      echo
    done
  done
done
