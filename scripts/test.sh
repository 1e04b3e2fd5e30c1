#!/usr/bin/env bash
# Sets everything up, builds, and runs the whole test suite through ctest (unit tests, then
# mpirun tests under both UCX transport settings). Exits non-zero on any failure.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# The long runs run only when asked for: the full collective sweeps at 1, 3, 4 and 5 ranks
# (label full_sweep; RANKFLOW_FULL_SWEEP=1 scripts/test.sh -L full_sweep) and the long soak
# (label long; RANKFLOW_FULL_SWEEP=1 scripts/test.sh -L long).
# The tests that mostly wait run four at a time first, then the rest one at a time
# (rankflow_ctest in setup.sh).
leave_out='^(full_sweep|long)$'
[[ "${RANKFLOW_FULL_SWEEP:-0}" == 1 ]] && leave_out='^$'
rankflow_ctest "$RANKFLOW_BUILD" "$leave_out" --timeout 600 "$@"
