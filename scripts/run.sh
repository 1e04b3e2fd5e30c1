#!/usr/bin/env bash
# Sets everything up and runs rankflow's main job: the host driving two chip workers and a
# sub-worker (examples/multi_chip_dispatch), then the transport demo across 3 ranks.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
mpirun -n 3 "$RANKFLOW_BUILD/examples/multi_chip_dispatch/multi_chip_dispatch"
mpirun -n 3 "$RANKFLOW_BUILD/examples/transport_demo/transport_demo" "$@"
