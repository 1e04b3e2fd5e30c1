#!/bin/sh
# Open MPI's rsh agent for run_two_hosts.sh: called like ssh, `rsh_agent.sh [options] <host>
# <command...>`, it "logs in" to <host> by entering that host's namespaces (network, UTS, IPC,
# mount, time: $RANKFLOW_TWO_HOST_ENTER) through its holder process
# ($RANKFLOW_TWO_HOST_STATE/<host>.pid) and runs the command there with
# /bin/sh -c, in a fresh environment as sshd would give it: nothing of mpirun's environment
# reaches the remote host except what mpirun itself sends (-x, MCA parameters).
set -eu

# ssh options, with or without a value, are accepted and ignored.
while [ $# -gt 0 ]; do
  case $1 in
    -[bcDEeFIiJLlmOoPpQRSWw]) shift 2 ;;
    --) shift; break ;;
    -*) shift ;;
    *) break ;;
  esac
done
if [ $# -lt 2 ]; then
  echo "rsh_agent.sh: usage: rsh_agent.sh [ssh options] <host> <command...>" >&2
  exit 255
fi
host=$1
shift
state=${RANKFLOW_TWO_HOST_STATE:?rsh_agent.sh runs under run_two_hosts.sh (RANKFLOW_TWO_HOST_STATE is unset)}
if [ ! -r "$state/$host.pid" ]; then
  echo "rsh_agent.sh: no such host '$host' in this two-host run ($state)" >&2
  exit 255
fi
pid=$(cat "$state/$host.pid")

# shellcheck disable=SC2086 # the namespaces to enter, one word each
exec nsenter --target "$pid" ${RANKFLOW_TWO_HOST_ENTER:---net --uts --ipc --mount} --wd=/ -- \
  env -i HOME="${HOME:-/}" USER="$(id -un)" LOGNAME="$(id -un)" SHELL=/bin/sh LANG=C.UTF-8 \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  /bin/sh -c "$*"
