#!/usr/bin/env bash
# Builds .devbundle/rootfs.tar.xz: a minimal Debian 12 root filesystem (taken from this machine)
# holding rankflow-bench, Open MPI 4.1 (+ PMIx, UCX, hwloc) and a few shell tools, for
# scripts/chroot-bundle/enter.sh to unpack and chroot into on a machine without Open MPI.
# Idempotent: the staging tree is rebuilt from scratch on every run.
#
#   scripts/chroot-bundle/pack.sh                 # after rebuilding build/bench/rankflow-bench
#   RF_BENCH=path scripts/chroot-bundle/pack.sh   # another binary as /rankflow/bin/rankflow-bench
#   RF_STRIP=0 scripts/chroot-bundle/pack.sh      # do not strip the copies of system .so files
#   RF_KEEP_STAGE=1 scripts/chroot-bundle/pack.sh # keep the staging tree (.devbundle/stage) for inspection
set -euo pipefail
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
OUTDIR=$REPO/.devbundle  # what pack.sh writes (git-ignored)
BENCH=${RF_BENCH:-$REPO/build/bench/rankflow-bench}
STAGE=$OUTDIR/stage
TARBALL=$OUTDIR/rootfs.tar.xz
ML=/usr/lib/x86_64-linux-gnu
LIMIT=$((40 * 1024 * 1024))

[ -x "$BENCH" ] || { echo "pack.sh: $BENCH is missing; build it first" >&2; exit 1; }
for t in ldd ldconfig tar xz strip readelf; do
  command -v "$t" >/dev/null || { echo "pack.sh: $t is missing" >&2; exit 1; }
done

rm -rf "$STAGE"
mkdir -p "$STAGE"

# Merged /usr, as on this machine: /bin, /lib, /lib64, /sbin are links into /usr.
for d in bin sbin lib lib64; do
  if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$STAGE/$d"; fi
done
mkdir -p "$STAGE"/{usr/bin,usr/sbin,usr/lib64,etc,root,tmp,var/tmp,run,proc,sys,dev,out} \
  "$STAGE$ML" "$STAGE/rankflow/bin" "$STAGE/rankflow/scripts"
chmod 1777 "$STAGE/tmp" "$STAGE/var/tmp"

# add PATH...: copies each path into the stage at its canonical directory, following a chain of
# symbolic links (every link and the final file are copied, links kept as links).
add() {
  local p dir base dst t
  for p in "$@"; do
    while :; do
      dir=$(realpath -e "$(dirname "$p")")
      base=$(basename "$p")
      dst="$STAGE$dir/$base"
      if [ ! -e "$dst" ] && [ ! -L "$dst" ]; then
        mkdir -p "$STAGE$dir"
        cp -a "$dir/$base" "$dst"
      fi
      [ -L "$dir/$base" ] || break
      t=$(readlink "$dir/$base")
      case $t in /*) p=$t ;; *) p=$dir/$t ;; esac
    done
  done
}

# addtree DIR: copies a directory tree (canonical location, contents as they are).
addtree() {
  local d
  d=$(realpath -e "$1")
  mkdir -p "$STAGE$(dirname "$d")"
  cp -a "$d" "$STAGE$d"
}

# --- ours ---------------------------------------------------------------------------------------
cp "$BENCH" "$STAGE/rankflow/bin/rankflow-bench"
chmod 755 "$STAGE/rankflow/bin/rankflow-bench"

# --- shell and basic tools -------------------------------------------------------------------------
add /bin/sh /usr/bin/dash /usr/bin/bash /usr/bin/awk /usr/bin/env
for t in cat date nproc mkdir ls uname grep sed head tail tee sleep rm cp mv ln seq sort uniq wc \
  cut tr basename dirname true false printf echo id hostname timeout test expr touch chmod \
  stat readlink realpath du df ps pgrep kill xargs find taskset numactl free; do
  p=$(type -P "$t" 2>/dev/null || true)
  case $p in /*) add "$p" ;; esac
done

# --- Open MPI ----------------------------------------------------------------------------------------
add /usr/bin/mpirun /usr/bin/mpiexec /usr/bin/orterun /usr/bin/orted /usr/bin/ompi_info
addtree $ML/openmpi
rm -rf "$STAGE$ML/openmpi/include" "$STAGE$ML/openmpi/lib/pkgconfig"
add $ML/libmpi.so.40 $ML/libmpi_cxx.so.40 $ML/libopen-pal.so.40 $ML/libopen-rte.so.40 \
  $ML/liboshmem.so.40 $ML/libompitrace.so.40 \
  $ML/libmca_common_monitoring.so.50 $ML/libmca_common_ompio.so.41 \
  $ML/libmca_common_sm.so.40 $ML/libmca_common_ucx.so.40
addtree /usr/share/openmpi
addtree /etc/openmpi
cat >> "$STAGE/etc/openmpi/openmpi-mca-params.conf" <<'EOF'

# rankflow bundle: no ssh inside, and one machine only: launch without the rsh launcher.
plm = isolated
EOF
# Components and libraries left out: InfiniBand/OFI/PSM transports (libibverbs, libfabric and
# friends), Java and Fortran bindings.
for f in mca_btl_ofi.so mca_mtl_ofi.so mca_btl_openib.so mca_mtl_psm.so mca_mtl_psm2.so; do
  rm -f "$STAGE$ML/openmpi/lib/openmpi3/$f"
done
rm -f "$STAGE$ML"/openmpi/lib/{libmca_common_ofi,libmca_common_verbs,libmpi_java,libmpi_mpifh,libmpi_usempi_ignore_tkr,libmpi_usempif08}.so
rm -f "$STAGE$ML"/openmpi/lib/openmpi3/*java* "$STAGE$ML"/openmpi/lib/openmpi3/*fort*

# --- PMIx -------------------------------------------------------------------------------------------
addtree $ML/pmix2
rm -rf "$STAGE$ML/pmix2/include"
find "$STAGE$ML/pmix2" -name '*.a' -delete
add $ML/libpmix.so.2

# --- UCX ----------------------------------------------------------------------------------------------
for f in $ML/libuc[mpst]*.so.* $ML/ucx/libuct_cma.so.*; do add "$f"; done
[ -d /etc/ucx ] && addtree /etc/ucx

# --- hwloc, libevent, others ------------------------------------------------------------------------
add $ML/libhwloc.so.15 $ML/hwloc/hwloc_pci.so   # gl/opencl/libxml plugins: X11/OpenCL/ICU deps
for f in $ML/libevent-2.1.so.7 $ML/libevent_core-2.1.so.7 $ML/libevent_extra-2.1.so.7 \
  $ML/libevent_pthreads-2.1.so.7 $ML/libnuma.so.1 $ML/libudev.so.1 $ML/libz.so.1; do
  add "$f"
done

# --- every shared object's dependencies, until nothing is missing --------------------------------
is_elf() { [ "$(head -c4 "$1" 2>/dev/null | od -An -c | tr -d ' \n')" = '177ELF' ]; }
missing_report=$(mktemp)
while :; do
  before=$(find "$STAGE" | wc -l)
  : > "$missing_report"
  while IFS= read -r -d '' f; do
    is_elf "$f" || continue
    host=${f#"$STAGE"}
    # ldd on the host file: RUNPATHs and the cache resolve exactly as in the chroot
    out=$(ldd "$host" 2>/dev/null || true)
    grep -q 'not found' <<<"$out" && echo "$host: $(grep 'not found' <<<"$out" | awk '{print $1}' | tr '\n' ' ')" >> "$missing_report"
    while read -r dep; do
      [ -n "$dep" ] && add "$dep"
    done < <(awk '/=> \//{print $3} /^[ \t]*\/.*\(0x/{print $1}' <<<"$out")
  done < <(find "$STAGE" -type f -print0)
  after=$(find "$STAGE" | wc -l)
  [ "$before" = "$after" ] && break
done
if [ -s "$missing_report" ]; then
  echo "pack.sh: unresolved dependencies:" >&2; cat "$missing_report" >&2; exit 1
fi
rm -f "$missing_report"

# Nothing may come from outside the standard directories (e.g. /usr/local/cuda).
odd=$(cd "$STAGE" && find . -type f -name '*.so*' | grep -vE "^\./usr/lib/x86_64-linux-gnu/|^\./usr/lib64/" || true)
[ -z "$odd" ] || { echo "pack.sh: libraries outside /usr/lib: $odd" >&2; exit 1; }

# --- /etc ----------------------------------------------------------------------------------------------
cat > "$STAGE/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
cat > "$STAGE/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
EOF
cat > "$STAGE/etc/hosts" <<'EOF'
127.0.0.1	localhost
::1		localhost ip6-localhost ip6-loopback
EOF
cp "$STAGE/etc/hosts" "$STAGE/etc/hosts.base"
cat > "$STAGE/etc/nsswitch.conf" <<'EOF'
passwd: files
group: files
shadow: files
hosts: files dns
networks: files
protocols: files
services: files
EOF
printf 'tcp 6 TCP\nudp 17 UDP\nicmp 1 ICMP\n' > "$STAGE/etc/protocols"
cp /etc/os-release "$STAGE/etc/os-release" 2>/dev/null || true
mkdir -p "$STAGE/etc/ld.so.conf.d"
echo 'include /etc/ld.so.conf.d/*.conf' > "$STAGE/etc/ld.so.conf"
cp /etc/ld.so.conf.d/x86_64-linux-gnu.conf /etc/ld.so.conf.d/libc.conf "$STAGE/etc/ld.so.conf.d/"

# --- strip copies of system libraries (not ours) ----------------------------------------------------
if [ "${RF_STRIP:-1}" = 1 ]; then
  while IFS= read -r -d '' f; do
    is_elf "$f" || continue
    case $f in "$STAGE"/rankflow/*) continue ;; esac
    strip --strip-unneeded "$f" 2>/dev/null || true
  done < <(find "$STAGE/usr" -type f -print0)
fi

ldconfig -r "$STAGE"

cat > "$STAGE/rankflow/README" <<EOF
rankflow chroot bundle, packed $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release; echo "$PRETTY_NAME")
bench: $BENCH ($(sha256sum "$BENCH" | cut -c1-16))
EOF

# --- pack ------------------------------------------------------------------------------------------------
tar --numeric-owner --owner=0 --group=0 --sort=name -C "$STAGE" -cf - . | xz -9 -T0 > "$TARBALL.tmp"
mv "$TARBALL.tmp" "$TARBALL"
size=$(stat -c %s "$TARBALL")
echo "pack.sh: $TARBALL: $((size / 1024)) KiB ($(du -sh "$STAGE" | cut -f1) unpacked, $(find "$STAGE" -type f | wc -l) files)"
[ "$size" -lt "$LIMIT" ] || { echo "pack.sh: over 40 MiB" >&2; exit 1; }
# the staging tree is only needed to inspect the bundle: RF_KEEP_STAGE=1 keeps it
[ "${RF_KEEP_STAGE:-0}" = 1 ] || rm -rf "$STAGE"
