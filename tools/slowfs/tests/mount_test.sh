#!/usr/bin/env bash
# slowfs mounted for real, checked without timing anything:
#   - bad command lines: exit 2 (or 1 for a missing directory), one line on stderr;
#   - slowfs_diff: random calls through the mount against a plain directory,
#     threads, the stored bytes, and the device counting every byte moved;
#   - ownership and permissions as PostgreSQL meets them (root daemon with
#     allow_other, a tablespace directory of another user's);
#   - the library's own model and file-set tests, and spillbench with --verify,
#     with their temp directories on the mount;
#   - a mount over its own backing directory;
#   - a clean unmount: fusermount3 -u, the daemon exits 0 and writes its stats.
# Usage: mount_test.sh SLOWFS SLOWFS_DIFF WORKDIR SPILLBENCH|"" [LIBRARY_TEST...]
# Without /dev/fuse it prints SKIP and exits 77, or fails when SLOWFS_REQUIRE_MOUNT=1.
set -euo pipefail
slowfs=$1 diff=$2 work=$3 spillbench=$4
shift 4

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# One line on stderr, the exit status expected, nothing mounted.
expect_error() { # status what args...
  local want=$1 what=$2
  shift 2
  local rc=0 err
  err=$("$slowfs" "$@" 2>&1 >/dev/null) || rc=$?
  [ "$rc" -eq "$want" ] || fail "$what: exit $rc, expected $want ($err)"
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "$what: more than one line: $err"
  case "$err" in slowfs:*) ;; *) fail "$what: '$err' does not start with 'slowfs:'" ;; esac
  echo "ok: $what: $err"
}
mkdir -p "$work"
expect_error 2 "bad rate" /tmp /tmp --rate=fast
expect_error 2 "bad latency" /tmp /tmp --latency-us=-5
expect_error 2 "unknown option" /tmp /tmp --rates=1M
expect_error 2 "no mount point" /tmp
expect_error 1 "missing backing directory" "$work/none" /tmp
expect_error 1 "missing mount point" /tmp "$work/none"

if [ ! -c /dev/fuse ]; then
  [ "${SLOWFS_REQUIRE_MOUNT:-0}" = 1 ] && fail "/dev/fuse is absent and SLOWFS_REQUIRE_MOUNT=1"
  echo "SKIP: /dev/fuse is absent, so slowfs cannot be mounted here"
  exit 77
fi

back=$work/back mnt=$work/mnt ref=$work/ref
. "$(dirname "$0")/../mount.bash"
trap 'slowfs_cleanup "$mnt"; slowfs_cleanup "$work/self"; slowfs_cleanup "$work/pgts"' EXIT
slowfs_cleanup "$mnt"
rm -rf "$back" "$ref" "$work/stats" "$work/self"
mkdir -p "$back" "$mnt" "$ref"

other=()
[ "$(id -u)" -eq 0 ] && other=(-o allow_other)
mount_slowfs() { # backing mountpoint stats-file options...
  local b=$1 m=$2 s=$3
  shift 3
  slowfs_mount "$slowfs" "$b" "$m" "$work/slowfs.err" --stats-file="$s" "${other[@]}" "$@"
}

# A fast rate and a small latency: every request goes through the model's
# arithmetic and its sleeps, without slowing the test much.
mount_slowfs "$back" "$mnt" "$work/stats" --rate=4GB --read-rate=3GB --latency-us=5
for seed in 1 2 3; do
  "$diff" "$mnt" "$back" "$ref" "$seed" 2500
done

if [ "$(id -u)" -eq 0 ]; then
  # PostgreSQL's case: the daemon is root, the server another user who owns the
  # tablespace directory (chown through the mount, chmod 0700 as PostgreSQL does).
  as() { setpriv --reuid="$1" --regid="$1" --clear-groups -- "${@:2}"; }
  mkdir "$mnt/ts"
  chown 65534:65534 "$mnt/ts"
  as 65534 chmod 0700 "$mnt/ts"
  as 65534 mkdir "$mnt/ts/pgsql_tmp"
  as 65534 sh -c "echo spill > '$mnt/ts/pgsql_tmp/t1'"
  for p in ts/pgsql_tmp ts/pgsql_tmp/t1; do
    owner=$(stat -c %u:%g "$back/$p")
    [ "$owner" = 65534:65534 ] || fail "$p was created as $owner, not as its caller 65534:65534"
  done
  [ "$(stat -c %a "$back/ts")" = 700 ] || fail "chmod 0700 did not reach the backing directory"
  ! as 65533 cat "$mnt/ts/pgsql_tmp/t1" 2>/dev/null ||
    fail "another user read a file in a 0700 directory (default_permissions not in force)"
  as 65534 rm -r "$mnt/ts/pgsql_tmp"
  rmdir "$mnt/ts"
  echo "ok: files are created as their caller; modes are enforced for other users"

  # The root of a fresh mount, the moment slowfs (in the background) returns: chmod(2)
  # with no stat before it, as PostgreSQL's CREATE TABLESPACE does, must find the
  # directory's own owner (the kernel starts a root as the mounting user's).
  mkdir -p "$work/pgts"
  chown 65534:65534 "$work/pgts"
  "$slowfs" "$work/pgts" "$work/pgts" -o allow_other || fail "slowfs did not mount $work/pgts"
  rc=0
  as 65534 perl -e 'chmod(0700, $ARGV[0]) or die "chmod: $!\n"' "$work/pgts" || rc=$?
  fusermount3 -u "$work/pgts"
  [ "$rc" -eq 0 ] || fail "the owner of a fresh mount's root could not chmod it"
  rmdir "$work/pgts"
  echo "ok: the owner chmods a fresh mount's root at once (CREATE TABLESPACE's first call)"
fi

# The library's own tests, their temp parent on the mount (the model test with 3
# sequences of each kind instead of 12: the library's own ctest runs them all).
for t in "$@"; do
  BF_MODEL_SEQS=3 "$t" >"$work/lib-test.log" 2>&1 || { cat "$work/lib-test.log" >&2; fail "$(basename "$t") on the mount"; }
  tail -1 "$work/lib-test.log" | sed "s|^|ok: $(basename "$t") on the mount: |"
done
if [ -n "$spillbench" ]; then
  mkdir "$mnt/spill"
  data=$work/tpch-sf0.01
  for codec in none lz4; do
    "$spillbench" --sf=0.01 --codec=$codec --work-mem=64K --verify --data-dir="$data" \
      --temp-dir="$mnt/spill" >"$work/spillbench.log" 2>&1 ||
      { cat "$work/spillbench.log" >&2; fail "spillbench --codec=$codec on the mount"; }
    left=$(find "$mnt/spill" -mindepth 1 | wc -l)
    [ "$left" -eq 0 ] || fail "spillbench left $left entries on the mount"
  done
  rmdir "$mnt/spill"
  echo "ok: spillbench (none, lz4; 22 queries, --verify) with its spill files on the mount"
fi

grep -q '^write_bytes [1-9]' "$mnt/.slowfs-stats" || fail "the stats file counted no writes"
slowfs_unmount "$mnt"
grep -q '^read_bytes [1-9]' "$work/stats" || fail "no stats written at unmount: $(cat "$work/stats")"
echo "ok: clean unmount; the stats at unmount: $(grep -E '^(read|write)_bytes' "$work/stats" | tr '\n' ' ')"

# A mount over its own backing directory, as over a tablespace directory in place.
mkdir -p "$work/self"
echo before >"$work/self/old"
mount_slowfs "$work/self" "$work/self" "$work/stats"
[ "$(cat "$work/self/old")" = before ] || fail "the mount over itself does not show the old file"
echo through >"$work/self/new"
grep -q '^write_bytes 8$' "$work/self/.slowfs-stats" || fail "the write did not go through slowfs"
slowfs_unmount "$work/self"
[ "$(cat "$work/self/new")" = through ] || fail "a file written over the mount is not in the directory"
rm -rf "$work/self" "$back" "$ref"
echo "ok: a mount over its own backing directory"
