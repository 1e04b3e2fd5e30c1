#!/usr/bin/env bash
# scripts/fuzz.sh: builds rankflow's libFuzzer targets (fuzz/, docs/fuzzing.md) with clang,
# ASan and UBSan in their own build directory, then runs each for a bounded time on a copy of
# its checked-in seed corpus (fuzz/corpus/<target>/, regression inputs included, so every past
# crash is replayed first). Exits non-zero when any target crashes, printing the reproducer.
#
#   scripts/fuzz.sh                 # 60 s of fuzzing in all, 15 s per target
#   scripts/fuzz.sh env_parsers     # only the named targets (the same total time)
#
# Environment: RANKFLOW_FUZZ_BUILD (build dir, default build/fuzz), RANKFLOW_FUZZ_SECONDS (total
# fuzzing time, default 60), RANKFLOW_FUZZ_JOBS (build parallelism, default nproc). Reproducers
# are kept in $RANKFLOW_FUZZ_BUILD/artifacts/<target>/. Needs no network: clang and
# libclang-rt-dev (libFuzzer's runtime) are Debian packages, like the rest of rankflow's.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${RANKFLOW_FUZZ_BUILD:-$ROOT/build/fuzz}"
TOTAL="${RANKFLOW_FUZZ_SECONDS:-60}"
JOBS="${RANKFLOW_FUZZ_JOBS:-$(nproc)}"
ALL_TARGETS=(task_descriptor arg_blob domain_descriptor env_parsers)
if [ $# -gt 0 ]; then TARGETS=("$@"); else TARGETS=("${ALL_TARGETS[@]}"); fi
PER_TARGET=$((TOTAL / ${#TARGETS[@]}))
[ "$PER_TARGET" -ge 1 ] || PER_TARGET=1

for tool in clang clang++ cmake; do
  command -v "$tool" >/dev/null || {
    echo "fuzz.sh: $tool is missing (Debian packages: clang libclang-rt-dev cmake)" >&2
    exit 1
  }
done
for t in "${TARGETS[@]}"; do
  [ -d "$ROOT/fuzz/corpus/$t" ] || { echo "fuzz.sh: no target '$t' (${ALL_TARGETS[*]})" >&2; exit 2; }
done

start=$(date +%s)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRANKFLOW_FUZZ=ON -DRANKFLOW_BUILD_TESTS=OFF \
    -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 \
    -DRANKFLOW_BUILD_BENCH=OFF -DRANKFLOW_BUILD_EXAMPLES=OFF >/dev/null
fi
cmake --build "$BUILD" -j "$JOBS" --target rankflow_fuzz_targets >/dev/null
built=$(date +%s)
echo "fuzz.sh: built the targets in $((built - start)) s; fuzzing ${#TARGETS[@]} targets for" \
  "$PER_TARGET s each"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
failed=()
for t in "${TARGETS[@]}"; do
  corpus="$work/corpus/$t"
  artifacts="$BUILD/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  cp "$ROOT/fuzz/corpus/$t"/* "$corpus/"
  log="$work/$t.log"
  rc=0
  "$BUILD/fuzz/${t}_fuzz" -max_total_time="$PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
    -max_len=8192 -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1 ||
    rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ "$rc" -eq 0 ]; then
    echo "fuzz.sh: $t: ${runs:-?} inputs, no crash"
    continue
  fi
  failed+=("$t")
  echo "fuzz.sh: $t FAILED (exit $rc) after ${runs:-?} inputs:" >&2
  grep -E "ERROR|runtime error|property broken|SUMMARY|Test unit written" "$log" | head -20 >&2 ||
    tail -30 "$log" >&2
  cp "$log" "$artifacts/last.log"
  for reproducer in $(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | sort -u); do
    echo "fuzz.sh: reproducer: $reproducer" >&2
    echo "fuzz.sh: replay it with: $BUILD/fuzz/${t}_fuzz $reproducer" >&2
  done
  echo "fuzz.sh: full log: $artifacts/last.log" >&2
done
echo "fuzz.sh: done in $(($(date +%s) - start)) s ($((built - start)) s building)"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: crashes in: ${failed[*]} (docs/fuzzing.md: how a crash becomes a regression test)" >&2
  exit 1
fi
