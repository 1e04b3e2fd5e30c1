#!/usr/bin/env bash
# Runs an MPI program on two "hosts" that live on this machine, with `mpirun -H` exactly as on
# real hosts (README.md, "Running on several hosts"). Each host is a set of namespaces of its
# own (network, UTS, IPC, mount and, where the kernel has them, time): its own hostname,
# /etc/hosts, System V IPC, a private /dev/shm, a sysfs that shows its own interfaces, a
# monotonic clock more than a day from the other's, and one interface, rf0, with an address on
# 10.213.0.0/24. The two rf0s are veth pairs into a bridge that lives in a third namespace, so
# no packet touches this machine's own network. mpirun runs on the first host and starts Open
# MPI's daemon on the second through rsh_agent.sh, which enters that host's namespaces as ssh
# would log in.
#
# Usage: run_two_hosts.sh [--mpirun PATH] [--ranks A,B] [--timeout S] [--] <program> [args...]
#   --ranks A,B   ranks on the first and the second host (default 1,1); ranks are placed in
#                 order: 0..A-1 on rfhost1, A..A+B-1 on rfhost2
#   --timeout S   mpirun is killed after S seconds (default 150); everything is torn down after
# The program gets UCX_TLS=tcp,self and UCX_NET_DEVICES=rf0 unless they are set, and every
# RANKFLOW_*, UCX_* and GTEST_* variable of this environment through mpirun's -x (the second
# host's ranks see nothing else of it, as over ssh).
#
# Exits with the program's status; 77 (CTest's SKIP_RETURN_CODE) when this machine does not let
# us create namespaces (not root, no CAP_SYS_ADMIN). The namespaces are anonymous: they exist
# only while their processes do (nothing is bound under /run/netns, nothing is mounted outside
# them), so parallel runs cannot clash and the teardown is killing every process in them. It
# runs on every exit, INT and TERM; and should this script be killed outright, each holder
# process ends its namespace's processes within a second.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mpirun=mpirun
ranks=1,1
limit=150
while [ $# -gt 0 ]; do
  case $1 in
    --mpirun) mpirun=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --timeout) limit=$2; shift 2 ;;
    --) shift; break ;;
    -*) echo "run_two_hosts.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 1 ] || ! [[ $ranks =~ ^[1-9][0-9]*,[1-9][0-9]*$ ]]; then
  echo "usage: run_two_hosts.sh [--mpirun PATH] [--ranks A,B] [--timeout S] [--] <program> [args...]" >&2
  exit 2
fi

log() { echo "two_host: $*" >&2; }
skip() {
  echo "two_host: SKIP: $*"
  exit 77
}

[ "$(id -u)" = 0 ] || skip "needs root to create network, UTS and mount namespaces"
unshare --net --uts --ipc --mount true 2>/dev/null ||
  skip "cannot create namespaces here (unshare --net --uts --ipc --mount failed: no CAP_SYS_ADMIN?)"
for tool in ip nsenter hostname mount timeout "$mpirun"; do
  command -v "$tool" >/dev/null || { log "$tool not found (ip: Debian package iproute2)"; exit 1; }
done

hosts=(rfhost1 rfhost2)
counts=("${ranks%,*}" "${ranks#*,}")
subnet=10.213.0.0/24
address() { echo "10.213.0.$(($1 + 1))"; }

state=$(mktemp -d "${TMPDIR:-/tmp}/rankflow-two-host.$$.XXXXXX")
holders=()     # one process per set of namespaces: the switch, then each host
namespaces=()  # their network namespaces' inode numbers
job=""
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  set +e
  [ -n "$job" ] && kill -TERM "$job" 2>/dev/null
  # Every process in one of this run's network namespaces (mpirun, daemons, ranks, holders).
  members() {
    local match=() ns
    for ns in "${namespaces[@]}"; do match+=(${match[0]+-o} -inum "$ns"); done
    [ ${#match[@]} -gt 0 ] || return 0
    find -L /proc/[0-9]*/ns/net -maxdepth 0 \( "${match[@]}" \) 2>/dev/null |
      sed 's|^/proc/\([0-9]*\)/.*|\1|'
  }
  local left=()
  mapfile -t left < <(members)
  [ ${#left[@]} -gt 0 ] && kill -TERM "${left[@]}" 2>/dev/null
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    mapfile -t left < <(members)
    [ ${#left[@]} -eq 0 ] && break
    sleep 0.2
  done
  [ ${#left[@]} -gt 0 ] && kill -KILL "${left[@]}" 2>/dev/null
  wait 2>/dev/null
  mapfile -t left < <(members)
  [ ${#left[@]} -gt 0 ] && log "processes still in this run's namespaces: ${left[*]}"
  rm -rf "$state"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# A holder keeps a set of namespaces alive: it sets them up, writes its pid to $state/<name>.pid,
# then waits for this script to end. Were the script killed without its teardown (SIGKILL), the
# holder ends every process in its network namespace (mpirun, a daemon, ranks that would wait
# forever on a vanished bridge) and itself.
# shellcheck disable=SC2016 # $0, $1, $$ and $(...) are the holder's
guard='while kill -0 "$0" 2>/dev/null; do sleep 1; done
  me=$(stat -L -c %i /proc/$$/ns/net)
  for p in $(find -L /proc/[0-9]*/ns/net -maxdepth 0 -inum "$me" 2>/dev/null | cut -d/ -f3); do
    [ "$p" = $$ ] || kill -KILL "$p" 2>/dev/null
  done
  rm -rf "$1"'
start_holder() {  # <name> <setup script> <unshare options...>: sets $holder
  local name=$1 setup=$2
  shift 2
  # shellcheck disable=SC2016
  unshare "$@" --fork --kill-child -- /bin/sh -c "$setup"'
    echo $$ >"$1/$2.pid.new" && mv "$1/$2.pid.new" "$1/$2.pid" || exit 1
    '"$guard" "$$" "$state" "$name" &
  local launcher=$!
  for _ in $(seq 100); do
    if [ -s "$state/$name.pid" ]; then
      holder=$(cat "$state/$name.pid")
      holders+=("$holder")
      namespaces+=("$(stat -L -c %i "/proc/$holder/ns/net")")
      return 0
    fi
    kill -0 "$launcher" 2>/dev/null || { log "setting up $name failed"; exit 1; }
    sleep 0.1
  done
  log "setting up $name timed out"
  exit 1
}

{
  echo "127.0.0.1 localhost"
  for i in "${!hosts[@]}"; do echo "$(address "$i") ${hosts[$i]}"; done
} >"$state/hosts"

# The switch: a bridge in a network namespace of its own.
start_holder switch "" --net
switch=$holder
in_switch() { nsenter --target "$switch" --net -- "$@"; }
in_switch ip link set lo up
in_switch ip link add rfbr0 type bridge
in_switch ip link set rfbr0 up

# Each host's monotonic and boot-time clocks are offset by a day and more from the other's (a
# time namespace, where the kernel has them), as two machines' clocks are: a steady_clock
# reading means nothing on another host.
clocks=()
if unshare --time --fork true 2>/dev/null; then
  clocks=(--time)
else
  log "no time namespaces here: the two hosts share one monotonic clock"
fi
# shellcheck disable=SC2016 # $1 is the state directory, $2 the host's name
host_setup='
  hostname "$2" && mount -t tmpfs -o mode=1777 rankflow-shm /dev/shm &&
    mount --bind "$1/hosts" /etc/hosts || exit 1
  # A sysfs of this network namespace (UCX finds its interfaces under /sys/class/net), with the
  # cgroup mounts carried over (hwloc reads cpusets there).
  mkdir "$1/cgroup.$2" && mount --rbind /sys/fs/cgroup "$1/cgroup.$2" 2>/dev/null
  mount -t sysfs sysfs /sys || exit 1
  mount --move "$1/cgroup.$2" /sys/fs/cgroup 2>/dev/null'
enter=(--net --uts --ipc --mount "${clocks[@]}")  # what "logging in" to a host enters
for i in "${!hosts[@]}"; do
  host=${hosts[$i]}
  offset=()
  [ ${#clocks[@]} -gt 0 ] && offset=(--time --monotonic $(((i + 1) * 100000)) --boottime $(((i + 1) * 100000)))
  start_holder "$host" "$host_setup" --net --uts --ipc --mount --propagation private "${offset[@]}"
  in_switch ip link add "port$i" type veth peer name rf0 netns "$holder"
  in_switch ip link set "port$i" master rfbr0 up
  nsenter --target "$holder" --net -- ip link set lo up
  nsenter --target "$holder" --net -- ip addr add "$(address "$i")/24" dev rf0
  nsenter --target "$holder" --net -- ip link set rf0 up
done

export UCX_TLS=${UCX_TLS:-tcp,self}
export UCX_NET_DEVICES=${UCX_NET_DEVICES:-rf0}
forward=()
while IFS= read -r name; do forward+=(-x "$name"); done < <(compgen -e | grep -E '^(RANKFLOW_|UCX_|GTEST_)' | grep -v '^RANKFLOW_TWO_HOST_')
export RANKFLOW_TWO_HOST_STATE=$state RANKFLOW_TWO_HOST_ENTER="${enter[*]}"  # for rsh_agent.sh

command=("$mpirun" -H "${hosts[0]}:${counts[0]},${hosts[1]}:${counts[1]}"
  --mca plm_rsh_agent "$here/rsh_agent.sh"
  --mca oob_tcp_if_include "$subnet" --mca btl_tcp_if_include "$subnet"
  "${forward[@]}" "$@")
log "${hosts[0]} ($(address 0)): ranks 0-$((counts[0] - 1)); ${hosts[1]} ($(address 1)):" \
  "ranks ${counts[0]}-$((counts[0] + counts[1] - 1)); UCX_TLS=$UCX_TLS"
log "on ${hosts[0]}: ${command[*]}"
timeout --kill-after=5 "$limit" nsenter --target "$(cat "$state/${hosts[0]}.pid")" "${enter[@]}" \
  --wd="$PWD" -- "${command[@]}" </dev/null &
job=$!
rc=0
wait "$job" || rc=$?
job=""
[ "$rc" = 124 ] && log "mpirun did not finish within $limit s (--timeout)"
exit "$rc"
