#!/usr/bin/env bash
# Sets everything up, builds, and runs the whole test suite through ctest (unit tests, then
# mpirun tests under both UCX transport settings). Exits non-zero on any failure.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# The full collective sweeps at 4 and 5 ranks (label full_sweep) run only when asked for:
# RANKFLOW_FULL_SWEEP=1 scripts/test.sh -L full_sweep.
exclude=()
[[ "${RANKFLOW_FULL_SWEEP:-0}" == 1 ]] || exclude=(-LE full_sweep)
ctest --test-dir "$RANKFLOW_BUILD" --output-on-failure --timeout 600 "${exclude[@]}" "$@"
