#!/usr/bin/env bash
# A real full disk: spillbench spills onto a tiny tmpfs until the file
# system says ENOSPC. Expected: each query that hits the wall fails with one
# clear line on stderr naming the file and "No space left on device",
# spillbench exits 1, and no buffile-* directory (or any byte) is left on
# the tmpfs. A control run on a tmpfs large enough must succeed. Then the
# temp limit, when spillbench has --temp-limit: the same queries under a
# 1 MiB limit on a roomy tmpfs fail with the limit error, leaving nothing.
#   scripts/full-disk-test.sh [--require-mount]
# Needs root (or an unprivileged user namespace) to mount tmpfs; without
# either it prints SKIP and exits 0 (ENOSPC is then covered only through the
# I/O seam: tests/test_faults.c, tests/fuzz/fuzz_ops.c), or exits 1 with
# --require-mount. BF_BUILD_DIR: build directory with spillbench (default
# build; spillbench is built there if missing).
set -euo pipefail
self=$(realpath "$0")
cd "$(dirname "$self")/.."

require=0
case "${1:-}" in
  "") ;;
  --require-mount) require=1 ;;
  -h|--help) sed -n '2,15p' "$self" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "full-disk-test.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

dir=${BF_BUILD_DIR:-build}
bench="$dir/tpch/exec/spillbench"
if [ ! -x "$bench" ]; then
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$dir" -j"$(nproc)" --target spillbench >/dev/null
fi
bench=$(realpath "$bench")
data=$(realpath -m "$dir/full-disk-data/sf0.01")

# Not root: retry once inside a user + mount namespace, where mounting tmpfs is allowed.
if [ "$(id -u)" -ne 0 ] && [ -z "${BF_FULL_DISK_NS:-}" ] && command -v unshare >/dev/null &&
   unshare -rm true 2>/dev/null; then
  exec env BF_FULL_DISK_NS=1 BF_BUILD_DIR="$dir" unshare -rm -- bash "$self" "$@"
fi

mnt=$(mktemp -d /tmp/bf-full-disk.XXXXXX)
cleanup() {
  umount "$mnt" 2>/dev/null || true
  rmdir "$mnt" 2>/dev/null || true
}
trap cleanup EXIT

mount_tmpfs() { # size
  mount -t tmpfs -o "size=$1,mode=0755" tmpfs "$mnt"
}

if ! mount_tmpfs 1m 2>/dev/null; then
  if [ "$require" -eq 1 ]; then
    echo "full-disk-test.sh: cannot mount tmpfs on $mnt (not root, no user namespaces)" >&2
    exit 1
  fi
  echo "SKIP: cannot mount tmpfs here; ENOSPC is covered through the I/O seam only"
  exit 0
fi

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Q18 and Q21 each hold 2.5-3.2 MB of spill at SF 0.01 with 64K work_mem (codec none):
# more than the 1 MiB the tmpfs has.
args=(--sf=0.01 --codec=none --work-mem=64K --queries=18,21 --data-dir="$data" --temp-dir="$mnt")
err=$(mktemp)
rc=0
"$bench" "${args[@]}" >/dev/null 2>"$err" || rc=$?
echo "1 MiB tmpfs: spillbench exit $rc; stderr:"
sed 's/^/  /' "$err"
[ "$rc" -eq 1 ] || fail "expected exit status 1, got $rc"
lines=$(wc -l <"$err")
[ "$lines" -eq 2 ] || fail "expected one error line per query (2), got $lines"
enospc=$(grep -c 'No space left on device' "$err" || true)
[ "$enospc" -eq 2 ] || fail "expected both lines to say 'No space left on device'"
grep -q "$mnt/buffile-" "$err" || fail "the message does not name the spill file"
left=$(find "$mnt" -mindepth 1 | wc -l)
[ "$left" -eq 0 ] || fail "$left entries left on the tmpfs: $(find "$mnt" -mindepth 1 | head -3)"
used=$(df -k --output=used "$mnt" | tail -1 | tr -d ' ')
[ "$used" -eq 0 ] || fail "$used KiB still used on the tmpfs"
echo "ok: clean ENOSPC error, nothing left on the full file system"

# Control: the same run on a tmpfs that is large enough.
umount "$mnt"
mount_tmpfs 16m
rc=0
"$bench" "${args[@]}" >/dev/null 2>"$err" || rc=$?
[ "$rc" -eq 0 ] || { cat "$err" >&2; fail "control run on 16 MiB failed with $rc"; }
left=$(find "$mnt" -mindepth 1 | wc -l)
[ "$left" -eq 0 ] || fail "control run left $left entries"
echo "ok: the same queries succeed on a 16 MiB tmpfs and leave nothing behind"

# The temp limit: the library's own wall, well below the file system's.
rc=0
"$bench" "${args[@]}" --temp-limit=1M >/dev/null 2>"$err" || rc=$?
echo "1 MiB temp limit: spillbench exit $rc; stderr:"
sed 's/^/  /' "$err"
[ "$rc" -eq 1 ] || fail "expected exit status 1 under the temp limit, got $rc"
grep -q 'temp file limit reached' "$err" || fail "no 'temp file limit reached' in the error"
left=$(find "$mnt" -mindepth 1 | wc -l)
[ "$left" -eq 0 ] || fail "the temp-limit run left $left entries"
echo "ok: the temp limit fails the queries cleanly and leaves nothing behind"
rm -f "$err"
