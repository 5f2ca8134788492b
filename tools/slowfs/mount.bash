# mount.bash - mounting slowfs from a script and unmounting it cleanly; sourced
# by the mount test (tests/mount_test.sh) and tools/slowfs/slowfs-validate.sh.
#   slowfs_mount SLOWFS BACKING MOUNTPOINT ERRFILE [OPTION...]
#       runs slowfs -f in the background (its stderr to ERRFILE) and waits, 10 s
#       at most, until MOUNTPOINT is mounted; SLOWFS_PID is the daemon's pid
#   slowfs_unmount MOUNTPOINT
#       fusermount3 -u; the daemon must exit 0 and the mount be gone
#   slowfs_cleanup MOUNTPOINT
#       for an EXIT trap: unmounts and stops the daemon if either is left
# A failure prints one line on stderr, naming the script, and exits 1.
SLOWFS_PID=

slowfs_fail() {
  echo "$(basename "$0"): $*" >&2
  exit 1
}

slowfs_mount() {
  local bin=$1 backing=$2 mnt=$3 err=$4
  shift 4
  SLOWFS_ERR=$err
  "$bin" "$backing" "$mnt" -f "$@" 2>"$err" &
  SLOWFS_PID=$!
  for _ in $(seq 100); do
    mountpoint -q "$mnt" && return 0
    kill -0 "$SLOWFS_PID" 2>/dev/null || slowfs_fail "slowfs exited before mounting $mnt: $(cat "$err")"
    sleep 0.1
  done
  slowfs_fail "slowfs did not mount $mnt within 10 s"
}

slowfs_unmount() {
  kill -0 "$SLOWFS_PID" 2>/dev/null || slowfs_fail "slowfs died while mounted: $(cat "$SLOWFS_ERR")"
  fusermount3 -u "$1" || slowfs_fail "fusermount3 -u $1 failed"
  local rc=0
  wait "$SLOWFS_PID" || rc=$?
  SLOWFS_PID=
  [ "$rc" -eq 0 ] || slowfs_fail "slowfs exited $rc after unmount: $(cat "$SLOWFS_ERR")"
  ! mountpoint -q "$1" || slowfs_fail "$1 is still mounted"
}

slowfs_cleanup() {
  if mountpoint -q "$1"; then fusermount3 -u "$1" || true; fi
  if [ -n "$SLOWFS_PID" ] && kill -0 "$SLOWFS_PID" 2>/dev/null; then kill "$SLOWFS_PID" || true; fi
}
