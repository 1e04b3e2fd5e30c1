#!/usr/bin/env bash
# Transport microbenchmark: 2 ranks bound to 2 cores, latency and put bandwidth beside memcpy.
# Pass --quick for a short run. Set UCX_TLS=tcp,self to measure the path between hosts.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
echo "# load: $(cat /proc/loadavg)"
mpirun -n 2 --bind-to core "$RANKFLOW_BUILD/bench/rankflow_transport_bench" "$@"
