#!/usr/bin/env bash
# Runs a command inside the rankflow chroot bundle (.devbundle/rootfs.tar.xz, made by pack.sh):
# unpacks it into $RF_ROOT (default /tmp/rf-root) unless that copy is already current, mounts
# /proc, /sys, /dev (with /dev/shm) and the output directory into it, runs the command under
# chroot with a clean environment, and unmounts again. Run as root, from anywhere.
#
#   RF_OUT=/host/dir scripts/chroot-bundle/enter.sh mpirun -n 16 --bind-to core /rankflow/bin/rankflow-bench --quick
#   scripts/chroot-bundle/enter.sh sh -c 'mpirun -n 8 --bind-to core /rankflow/bin/rankflow-bench > $OUT/r.txt'
#
# Inside: /rankflow/bin/rankflow-bench, the repo's scripts/ at /rankflow/scripts, the output
# directory at /out (also at its host path) with OUT=/out set; RF_OUT defaults to $OUT.
# Passed through into the chroot: OUT and every UCX_*, OMPI_*, OPAL_*, PMIX_*, HWLOC_*,
# RANKFLOW_* and LD_DEBUG variable; set RF_PASS="VAR1 VAR2" for more.
# RF_KEEP_MOUNTS=1 leaves the mounts in place afterwards; "enter.sh --umount" removes them.
set -uo pipefail
export PATH="${PATH:-/usr/bin:/bin}:/usr/sbin:/sbin:/usr/bin:/bin"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
OUTDIR=$REPO/.devbundle  # what pack.sh writes (git-ignored)
ROOT=${RF_ROOT:-/tmp/rf-root}
TARBALL=${RF_TARBALL:-$OUTDIR/rootfs.tar.xz}
HOST_OUT=${RF_OUT:-${OUT:-}}

say() { echo "enter.sh: $*" >&2; }
die() { say "$*"; exit 1; }
is_mounted() { awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/self/mounts; }

umount_all() {  # every mount at or below $ROOT, deepest first
  local m
  for m in $(awk -v r="$ROOT" 'index($2, r "/") == 1 { print $2 }' /proc/self/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || say "could not unmount $m"
  done
}

[ "$(id -u)" = 0 ] || die "needs root (chroot and mount)"
[ "$(uname -m)" = x86_64 ] || die "the bundle is for x86_64, this is $(uname -m)"
ROOT=$(realpath -m "$ROOT")
case $ROOT in /|/usr|/usr/*|/etc|/etc/*) die "refusing RF_ROOT=$ROOT" ;; esac

if [ "${1:-}" = --umount ]; then umount_all; exit 0; fi
[ $# -gt 0 ] || set -- /bin/bash

# --- unpack (again when the tarball changed) ----------------------------------------------------
[ -f "$TARBALL" ] || die "no $TARBALL"
stamp="$(stat -c '%s %Y' "$TARBALL") $(cksum < "$TARBALL" | cut -d' ' -f1)"
if [ "$(cat "$ROOT/.rf-stamp" 2>/dev/null)" != "$stamp" ]; then
  umount_all
  if awk -v r="$ROOT" 'index($2, r "/") == 1 { f = 1 } END { exit !f }' /proc/self/mounts; then
    die "mounts remain below $ROOT; not deleting it"
  fi
  rm -rf "$ROOT" && mkdir -p "$ROOT" || die "cannot create $ROOT"
  t0=$(date +%s.%N)
  if command -v xz >/dev/null; then
    xz -dc "$TARBALL" | tar -x --numeric-owner -p -C "$ROOT" || die "unpacking $TARBALL failed"
  elif command -v python3 >/dev/null; then
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' \
      "$TARBALL" | tar -x --numeric-owner -p -C "$ROOT" || die "unpacking $TARBALL failed"
  else
    tar -xJ --numeric-owner -p -f "$TARBALL" -C "$ROOT" || die "unpacking $TARBALL failed (no xz?)"
  fi
  # a noexec /tmp (or wherever RF_ROOT lies) cannot hold the root
  "$ROOT/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --help >/dev/null 2>&1 ||
    die "cannot execute files in $ROOT (noexec filesystem?); set RF_ROOT to another directory"
  echo "$stamp" > "$ROOT/.rf-stamp"
  say "unpacked into $ROOT in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
fi

# --- mounts ----------------------------------------------------------------------------------------
umount_all  # leftovers of an interrupted run
failed=()
# rslave: unmounting our copies must never propagate back to the host's mounts (shared
# propagation under systemd).
if mount -t proc proc "$ROOT/proc" 2>/dev/null; then :
elif mount --rbind /proc "$ROOT/proc"; then mount --make-rslave "$ROOT/proc" 2>/dev/null
else failed+=(/proc); fi
# rbind: /sys/fs/cgroup must be visible too, or hwloc cannot see a cpuset restriction and
# Open MPI may bind ranks to cores this machine does not give us.
if mount --rbind /sys "$ROOT/sys"; then mount --make-rslave "$ROOT/sys" 2>/dev/null
elif mount -t sysfs sysfs "$ROOT/sys"; then say "/sys mounted without /sys/fs/cgroup"
else failed+=(/sys); fi
if mount --rbind /dev "$ROOT/dev"; then  # /dev/shm and /dev/pts come with it
  mount --make-rslave "$ROOT/dev" 2>/dev/null
else
  failed+=(/dev)
  mount -t tmpfs -o mode=755 tmpfs "$ROOT/dev" 2>/dev/null
  for n in "null 1 3" "zero 1 5" "full 1 7" "random 1 8" "urandom 1 9" "tty 5 0"; do
    read -r name maj min <<<"$n"
    [ -e "$ROOT/dev/$name" ] || mknod -m 666 "$ROOT/dev/$name" c "$maj" "$min" 2>/dev/null ||
      say "could not create /dev/$name"
  done
fi
if [ ! -d "$ROOT/dev/shm" ]; then
  mkdir -p "$ROOT/dev/shm" 2>/dev/null
  mount -t tmpfs -o mode=1777 tmpfs "$ROOT/dev/shm" 2>/dev/null || failed+=(/dev/shm)
fi
[ -w "$ROOT/dev/shm" ] || say "warning: /dev/shm is not writable inside (shared memory transports will fail)"
# a container's /dev/shm is often 64 MiB: too small for 16 ranks' shared memory; give the
# chroot its own tmpfs then (RF_MIN_SHM_MIB, default 2048)
shm_kib=$(df -Pk "$ROOT/dev/shm" 2>/dev/null | awk 'NR == 2 { print $4 }')
if [ -n "$shm_kib" ] && [ "$shm_kib" -lt $((${RF_MIN_SHM_MIB:-2048} * 1024)) ]; then
  if mount -t tmpfs -o mode=1777 tmpfs "$ROOT/dev/shm" 2>/dev/null; then
    say "/dev/shm had only $((shm_kib / 1024)) MiB free; a tmpfs of $(df -Pm "$ROOT/dev/shm" | awk 'NR == 2 { print $2 }') MiB is mounted there inside"
  else
    say "warning: only $((shm_kib / 1024)) MiB free in /dev/shm"
  fi
fi
chmod 1777 "$ROOT/tmp" 2>/dev/null

mkdir -p "$ROOT/rankflow/scripts"
if [ -d "$REPO/scripts" ] && ! mount --bind "$REPO/scripts" "$ROOT/rankflow/scripts" 2>/dev/null; then
  cp -a "$REPO/scripts/." "$ROOT/rankflow/scripts/" || say "could not copy scripts/"
fi

if [ -n "$HOST_OUT" ]; then
  mkdir -p "$HOST_OUT" || die "cannot create RF_OUT=$HOST_OUT"
  HOST_OUT=$(realpath "$HOST_OUT")
  mount --bind "$HOST_OUT" "$ROOT/out" || failed+=("$HOST_OUT -> /out")
  # the same path inside as outside, so "$OUT" expanded by the caller's shell works too
  if [ "$HOST_OUT" != /out ] && [ ! -e "$ROOT$HOST_OUT" ] && [ ! -L "$ROOT$HOST_OUT" ]; then
    mkdir -p "$ROOT$(dirname "$HOST_OUT")" && ln -s /out "$ROOT$HOST_OUT"
  fi
fi

# /etc/hosts: the bundle's localhost lines and this machine's own entries (its hostname).
host=$(cat /proc/sys/kernel/hostname 2>/dev/null || echo localhost)
{ cat "$ROOT/etc/hosts.base"; grep -v -e localhost -e '^#' /etc/hosts 2>/dev/null
  grep -qw -- "$host" /etc/hosts 2>/dev/null || printf '127.0.1.1\t%s\n' "$host"; } > "$ROOT/etc/hosts"

if [ ${#failed[@]} -gt 0 ]; then
  say "these mounts failed: ${failed[*]}"
  case " ${failed[*]} " in
    *" /proc "*)
      say "without /proc inside the chroot, Open MPI cannot run. This machine does not let root"
      say "mount (a container without CAP_SYS_ADMIN?). Running the bundle without chroot is not"
      say "supported: mpirun execs its children through the host's loader and glibc. Options: run"
      say "the container privileged, or on a host with Open MPI 4.1 + UCX 1.13 installed."
      [ "${RF_KEEP_MOUNTS:-0}" = 1 ] || umount_all
      exit 2 ;;
  esac
  say "continuing; expect problems with: ${failed[*]}"
fi

# --- run --------------------------------------------------------------------------------------------
envs=(PATH=/usr/bin:/bin HOME=/root TERM="${TERM:-dumb}" LANG=C
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  OMPI_MCA_rmaps_base_oversubscribe="${OMPI_MCA_rmaps_base_oversubscribe:-1}")
[ -n "$HOST_OUT" ] && envs+=(OUT=/out)
for v in $(compgen -e); do
  case $v in
    UCX_*|OMPI_*|OPAL_*|PMIX_*|HWLOC_*|RANKFLOW_*|LD_DEBUG|LD_DEBUG_OUTPUT) envs+=("$v=${!v}") ;;
  esac
done
for v in ${RF_PASS:-}; do [ -n "${!v+x}" ] && envs+=("$v=${!v}"); done

if ! command -v chroot >/dev/null; then say "chroot is missing on this machine"; rc=127
else
  (cd / && chroot "$ROOT" /usr/bin/env -i "${envs[@]}" "$@")
  rc=$?
  [ $rc = 125 ] && say "chroot failed (rc 125): no CAP_SYS_CHROOT?"
fi
[ "${RF_KEEP_MOUNTS:-0}" = 1 ] || umount_all
exit $rc
