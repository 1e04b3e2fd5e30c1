#!/usr/bin/env bash
# Plain arrays on 4 KiB pages (a std::vector) against the same arrays on transparent 2 MiB pages
# (rankflow-bench --huge-pages), every collective from 64 KiB to 64 MiB, three alternated
# launches each; Open MPI runs on the same arrays in every launch.
# Usage, from the repository root after a build: bash docs/data/ab-intel-emr-2026-12-07-huge-pages/run.sh [BENCH]
set -euo pipefail
here=docs/data/ab-intel-emr-2026-12-07-huge-pages
bench=${1:-build/bench/rankflow-bench}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
for round in 1 2 3; do
  for pages in 4k 2m; do
    extra=()
    [ "$pages" = 2m ] && extra=(--huge-pages)
    echo "# round $round, $pages pages, $(date -u +%H:%M:%S)"
    mpirun -n 2 --bind-to core "$bench" --coll all --buffers user "${extra[@]}" \
      --min-bytes 64K --table "$here/$pages-$round.tbl" | grep '^# plain arrays' || true
  done
done
for pages in 4k 2m; do
  echo "== $pages pages: median over three launches of the busbw ratio to Open MPI"
  python3 scripts/median-ratios.py "$here/$pages"-*.tbl
done
