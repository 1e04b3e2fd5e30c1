#!/usr/bin/env bash
# Sets everything up, builds, and runs the whole test suite through ctest (unit tests, then
# mpirun tests under both UCX transport settings). Exits non-zero on any failure.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ctest --test-dir "$RANKFLOW_BUILD" --output-on-failure --timeout 600 "$@"
