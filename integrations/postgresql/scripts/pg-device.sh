# shellcheck shell=bash
# Where the runners' temp files go (--device of pg-hook-tpch.sh and pg-hook-wall.sh
# --matrix): one piece of shell for both. Sourced after pg-common.sh and pg-server.sh.
#
#   page           the data directory's base/pgsql_tmp, a plain directory: the page cache
#                  over the machine's disk (what the runners did before --device)
#   slowfs:RATE    tools/slowfs at RATE (200MB = 200 MiB/s, as slowfs takes it), mounted
#                  in place over DIR/slowfs by the runner and unmounted at exit; each
#                  cluster's base/pgsql_tmp is a symlink to its own directory on the
#                  mount, so every server's temp files (stock buffile.c's and pg_buffile's)
#                  meet the same device with no catalog change (no tablespace: the
#                  clusters stay as the page runs left them). The rate is validated before
#                  use as the retired runner did (tools/slowfs/slowfs-validate.sh at that
#                  rate, cached per rate in DIR/../slowfs-validate-RATE.md; dd's 1 MiB
#                  direct writes must reach 75% of the rate); the daemon runs in the
#                  foreground so that its CPU time is known. The mount is over its own
#                  directory, so what slowfs passes on lands in the page cache of the data
#                  directory's file system and is written back to its disk like any file
#                  (six 10M hash joins wrote 6.9 GB to the disk, dirty pages peaking at
#                  2.2 GB): the disk's write-back (kernel threads' CPU) meets the runs.
#   slowfs:RATE:tmpfs  the same, over a fresh directory under /dev/shm (removed at exit):
#                  the rate alone, nothing written back, as the library's benchmarks
#                  run slowfs (bench_auto --temp-dir on a slowfs over tmpfs).
#   cgroup:LIMIT   each server in a cgroup v1 memory cgroup (a child of the runner's own)
#                  with memory.limit_in_bytes = LIMIT (e.g. 640MB, 2GB): the page cache of
#                  its temp files is charged to it, so past LIMIT they are written back to
#                  the disk under the data directory and read from it again. The tables'
#                  files are read once by the runner, outside the cgroup, before the
#                  server starts: their pages are charged to the runner's cgroup and do not
#                  count against LIMIT (pages the machine evicts later are charged to the
#                  server's when read again).
#
#   dev_parse SPEC       DEV (the spec), DEV_KIND, DEV_ARG, DEV_BACKING (slowfs: disk or
#                        tmpfs), DEV_LABEL (for file names: page, slowfs-200MB,
#                        slowfs-200MB-tmpfs, cgroup-640MB); returns 1 on a bad spec
#   dev_setup DIR        the device up (slowfs built, validated, mounted at DIR/slowfs;
#                        the cgroup hierarchy checked) and DIR/device.json written, which
#                        pg_device.py reads; dies with a clear message when it cannot be
#   dev_tempdir DATA NAME  DATA's base/pgsql_tmp on the device (the server stopped):
#                        a symlink to the mount's NAME/ for slowfs, a plain directory else
#   dev_srv_start DATA BIN PORT LOG CONF
#                        srv_start, inside the server's own memory cgroup for cgroup:LIMIT
#                        (made with the limit, its path added to device.json)
#   dev_prewarm DATA     cgroup:LIMIT only: the cluster's relation files read by the runner
#   dev_teardown         the servers stopped, the mount gone, the cgroups removed (EXIT)
# Invariant: a cluster's base/pgsql_tmp is a symlink only while the runner that set it
# runs; dev_tempdir DATA NAME with the page device puts the plain directory back.

DEV=page DEV_KIND=page DEV_ARG="" DEV_BACKING="" DEV_LABEL=page DEV_DIR="" DEV_JSON=""
DEV_SLOWFS_PID="" DEV_MNT="" DEV_SHM="" DEV_CGROUPS=() DEV_TEMPDIRS=()

dev_parse() {
  DEV=$1 DEV_BACKING=""
  case $DEV in
    page) DEV_KIND=page DEV_ARG="" ;;
    slowfs:*) DEV_KIND=slowfs DEV_BACKING=disk DEV_ARG=${DEV#*:}
      if [[ $DEV_ARG == *:tmpfs ]]; then DEV_BACKING=tmpfs DEV_ARG=${DEV_ARG%:tmpfs}; fi
      [[ $DEV_ARG =~ ^[1-9][0-9]*(K|M|G)B?$ ]] || return 1 ;;
    cgroup:*) DEV_KIND=cgroup DEV_ARG=${DEV#*:}
      [[ $DEV_ARG =~ ^[1-9][0-9]*(M|G)B?$ ]] || return 1 ;;
    *) return 1 ;;
  esac
  DEV_LABEL=${DEV//:/-}
}

# bytes of a size such as 640MB or 2G (powers of 1024, as slowfs and the kernel take them)
dev_bytes() {
  local n=${1%B}
  case $n in
    *K) echo $((${n%K} * 1024)) ;;
    *M) echo $((${n%M} * 1048576)) ;;
    *G) echo $((${n%G} * 1073741824)) ;;
    *) echo "$n" ;;
  esac
}

# the memory cgroup v1 directory the runner itself is in (children go under it)
dev_cgroup_base() {
  local root=/sys/fs/cgroup/memory rel
  [ -f "$root/memory.limit_in_bytes" ] \
    || die "--device=$DEV needs the cgroup v1 memory controller at $root, and it is not mounted there (this machine has $(stat -f -c %T /sys/fs/cgroup 2>/dev/null || echo no /sys/fs/cgroup)): the device cannot be run here"
  rel=$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup)
  [ -d "$root$rel" ] || die "the runner's memory cgroup $root$rel is not there"
  echo "${root}${rel%/}"
}

dev_setup() {
  DEV_DIR=$1
  DEV_JSON=$DEV_DIR/device.json
  local extra=""
  case $DEV_KIND in
    slowfs)
      local bin b=$PGROOT/tpch-build val rate share
      tools_build slowfs || die "slowfs does not build in $b"
      bin=$b/tools/slowfs/slowfs
      [ -x "$bin" ] || die "no slowfs in $b (is libfuse3-dev installed? scripts/install-deps.sh)"
      [ -c /dev/fuse ] || die "/dev/fuse is absent: slowfs cannot be mounted here"
      val=$DEV_DIR/../slowfs-validate-$DEV_ARG.md
      if [ ! -s "$val" ]; then
        log "validating slowfs at $DEV_ARG/s (tools/slowfs/slowfs-validate.sh, once per rate)"
        BF_BUILD_DIR=$b bash "$TOP/tools/slowfs/slowfs-validate.sh" --rates="$DEV_ARG" \
          --rounds=1 --runtime=2 --size=64M --dir="$DEV_DIR/../slowfs-validate" \
          --out="$val.tmp" > "$DEV_DIR/../slowfs-validate.log" 2>&1 \
          || { tail -5 "$DEV_DIR/../slowfs-validate.log"; die "slowfs-validate.sh failed"; }
        mv "$val.tmp" "$val"
      fi
      # "| dd write 1m x1 | 199.8 (99.9%) |": the share of the rate dd's direct writes reached
      share=$(sed -n 's/^| dd write 1m x1 | [0-9.]* (\([0-9.]*\)%).*/\1/p' "$val")
      rate=$(sed -n 's/^| dd write 1m x1 | \([0-9.]*\) .*/\1/p' "$val")
      [ -n "$share" ] || die "no dd write row in $val"
      awk -v s="$share" 'BEGIN { exit !(s >= 75) }' \
        || die "slowfs at $DEV_ARG/s reached $share% of its rate with dd (under 75%: $val); a loaded machine? delete $val to validate again"
      log "slowfs at $DEV_ARG/s validated: dd 1 MiB direct writes $rate MiB/s ($share%), $val"
      DEV_MNT=$DEV_DIR/slowfs
      mkdir -p "$DEV_MNT"
      if mountpoint -q "$DEV_MNT"; then fusermount3 -u "$DEV_MNT" || die "a mount a killed run left on $DEV_MNT is busy"; fi
      chown "$PG_USER": "$DEV_MNT"
      chmod 700 "$DEV_MNT"
      local back=$DEV_MNT
      if [ "$DEV_BACKING" = tmpfs ]; then
        DEV_SHM=$(mktemp -d /dev/shm/buffile-slowfs.XXXXXX) || die "cannot make a directory under /dev/shm for slowfs:$DEV_ARG:tmpfs"
        chown "$PG_USER": "$DEV_SHM"
        chmod 700 "$DEV_SHM"
        back=$DEV_SHM
      fi
      "$bin" "$back" "$DEV_MNT" -f --rate="$DEV_ARG" -o allow_other \
        --stats-file="$DEV_DIR/slowfs-$DEV_LABEL.stats" 2> "$DEV_DIR/slowfs.err" &
      DEV_SLOWFS_PID=$!
      for _ in $(seq 100); do
        mountpoint -q "$DEV_MNT" && break
        kill -0 "$DEV_SLOWFS_PID" 2>/dev/null || die "slowfs exited before mounting $DEV_MNT: $(cat "$DEV_DIR/slowfs.err")"
        sleep 0.1
      done
      mountpoint -q "$DEV_MNT" || die "slowfs did not mount $DEV_MNT within 10 s"
      extra=$(printf ', "rate_bytes": %s, "mount": "%s", "backing": "%s", "pid": %s, "validated_mib_s": %s, "validated_share": %s, "validation": "%s"' \
        "$(dev_bytes "$DEV_ARG")" "$DEV_MNT" "$DEV_BACKING" "$DEV_SLOWFS_PID" "$rate" "$share" "$(realpath "$val")")
      log "slowfs mounted at $DEV_MNT ($DEV_ARG/s, over ${DEV_SHM:-its own directory}), daemon $DEV_SLOWFS_PID" ;;
    cgroup)
      DEV_CG_BASE=$(dev_cgroup_base)
      extra=$(printf ', "limit_bytes": %s' "$(dev_bytes "$DEV_ARG")")
      log "cgroup v1 memory controller: servers under $DEV_CG_BASE, limit $DEV_ARG" ;;
  esac
  printf '{"device": "%s", "kind": "%s"%s, "cgroups": {}}\n' "$DEV" "$DEV_KIND" "$extra" > "$DEV_JSON"
  chmod a+r "$DEV_JSON"
}

dev_tempdir() {
  local data=$1 name=$2 t=$1/base/pgsql_tmp
  if [ "$DEV_KIND" = slowfs ]; then
    mkdir -p "$DEV_MNT/$name"
    chown "$PG_USER": "$DEV_MNT/$name"
    chmod 700 "$DEV_MNT/$name"
    rm -rf "$t"
    ln -s "$DEV_MNT/$name" "$t"
    chown -h "$PG_USER": "$t"
    DEV_TEMPDIRS+=("$t")
  elif [ -L "$t" ]; then
    rm -f "$t"
  fi
}

dev_srv_start() {
  local data=$1 port=$3 cg
  if [ "$DEV_KIND" != cgroup ]; then
    srv_start "$@"
    return
  fi
  cg=$DEV_CG_BASE/buffile-pg-$port
  # one a killed run left goes first (emptied of its processes by the stop srv_start does)
  [ -d "$cg" ] && { srv_stop "$data" "$2"; rmdir "$cg" 2>/dev/null || true; }
  mkdir -p "$cg"
  dev_bytes "$DEV_ARG" > "$cg/memory.limit_in_bytes" || die "cannot set $cg/memory.limit_in_bytes"
  DEV_CGROUPS+=("$cg")
  SRV_CGROUP=$cg srv_start "$@"
  # device.json learns which cgroup holds the server on PORT
  python3 - "$DEV_JSON" "$port" "$cg" <<'EOF'
import json, sys
path, port, cg = sys.argv[1:]
with open(path) as f:
    d = json.load(f)
d["cgroups"][port] = cg
with open(path, "w") as f:
    json.dump(d, f)
EOF
}

dev_prewarm() {
  [ "$DEV_KIND" = cgroup ] || return 0
  local t0=$SECONDS
  find "$1/base" -type f ! -path '*pgsql_tmp*' -exec cat {} + > /dev/null
  log "the cluster's files read outside the cgroup ($(du -sh "$1/base" | cut -f1)): $((SECONDS - t0)) s"
}

dev_teardown() {
  local cg t n
  srv_stop_all
  if [ -n "$DEV_SLOWFS_PID" ]; then
    for _ in $(seq 100); do
      fusermount3 -u "$DEV_MNT" 2>/dev/null && break
      sleep 0.1
    done
    wait "$DEV_SLOWFS_PID" 2>/dev/null || true
    DEV_SLOWFS_PID=""
  fi
  if [ -n "$DEV_SHM" ] && ! mountpoint -q "$DEV_MNT"; then
    rm -rf "$DEV_SHM"
    DEV_SHM=""
  fi
  # the clusters' temp directories plain again (PostgreSQL makes them when first needed)
  for t in "${DEV_TEMPDIRS[@]}"; do
    [ -L "$t" ] && rm -f "$t"
  done
  DEV_TEMPDIRS=()
  for cg in "${DEV_CGROUPS[@]}"; do
    # a server the limit starved: say so, the likeliest cause of a run that failed
    n=$(sed -n 's/^oom_kill //p' "$cg/memory.oom_control" 2>/dev/null || true)
    [ "${n:-0}" = 0 ] || log "the memory cgroup's OOM killer killed $n process(es) of the server in $cg: LIMIT $DEV_ARG is below what the server needs besides its temp files (the report's cgroup's peak at a larger LIMIT)"
    rmdir "$cg" 2>/dev/null || true
  done
  DEV_CGROUPS=()
}
