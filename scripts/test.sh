#!/usr/bin/env bash
# Sets everything up, builds, and runs the whole test suite through ctest (unit tests, then
# mpirun tests under both UCX transport settings). Exits non-zero on any failure.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# The long runs run only when asked for: the full collective sweeps at 1, 3, 4 and 5 ranks
# (label full_sweep; RANKFLOW_FULL_SWEEP=1 scripts/test.sh -L full_sweep) and the long soak
# (label long; RANKFLOW_FULL_SWEEP=1 scripts/test.sh -L long).
exclude=()
[[ "${RANKFLOW_FULL_SWEEP:-0}" == 1 ]] || exclude=(-LE '^(full_sweep|long)$')
ctest --test-dir "$RANKFLOW_BUILD" --output-on-failure --timeout 600 "${exclude[@]}" "$@"
