#!/usr/bin/env bash
# buffile-sweep against real leftovers: processes that spill and are killed
# (leave_space) leave their space directories; the tool lists them as dead
# with their bytes, leaves a live space alone, removes the dead ones with
# --remove, and says what is wrong with a bad command line or parent.
#   sweep.sh TOOL LEAVE_SPACE WORKDIR
set -euo pipefail
tool=$1 leave=$2 work=$3
rm -rf "$work"
mkdir -p "$work/parent"
fail() { echo "sweep.sh: $*" >&2; exit 1; }

# Command substitution waits for each to be reaped: a killed process not yet waited for is a
# zombie, which kill(pid, 0) still finds (a process substitution raced with that).
out1=$("$leave" "$work/parent" 200000 || true)
out2=$("$leave" "$work/parent" 70000 || true)
read -r d1 b1 <<<"$out1"
read -r d2 b2 <<<"$out2"
[ -d "$d1" ] && [ -d "$d2" ] || fail "the killed processes left no directories ($d1, $d2)"
# A live space beside them: a directory named for a process that runs while the tool does.
sleep 120 &
holder=$!
trap 'kill $holder 2>/dev/null || true' EXIT
live="$work/parent/buffile-$holder-live00"
mkdir -m 0700 "$live"
echo data >"$live/0.0"

"$tool" --dir="$work/parent" >"$work/list" 2>"$work/summary"
cat "$work/list" "$work/summary"
head -1 "$work/list" | grep -q $'^directory\tpid\tstate\tbytes\tfiles\tage$' || fail "no header"
grep -q "^$d1"$'\t[0-9]*\tdead\t'"$b1"$'\t1\t' "$work/list" || fail "$d1 not listed as dead with $b1 bytes"
grep -q "^$d2"$'\t[0-9]*\tdead\t'"$b2"$'\t1\t' "$work/list" || fail "$d2 not listed as dead with $b2 bytes"
grep -q "^$live"$'\t'"$holder"$'\trunning\t5\t1\t' "$work/list" || fail "the live directory not listed as running"
grep -q "^3 space directories under $work/parent; 2 of processes that no longer run ($((b1 + b2)) bytes)" \
  "$work/summary" || fail "wrong summary"

"$tool" --dir="$work/parent" --remove >"$work/removed"
grep -q "^removed 2 directories" "$work/removed" || fail "--remove: $(cat "$work/removed")"
[ ! -e "$d1" ] && [ ! -e "$d2" ] || fail "dead directories still there"
[ -d "$live" ] || fail "the live directory was removed"

rc=0; "$tool" --frobnicate 2>"$work/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "unknown option '--frobnicate'" "$work/err" || fail "unknown option: rc $rc $(cat "$work/err")"
rc=0; "$tool" --dir="$work/nope" 2>"$work/err" || rc=$?
[ "$rc" -eq 1 ] && grep -q "cannot read $work/nope: no such file" "$work/err" || fail "missing parent: rc $rc $(cat "$work/err")"
"$tool" --version >"$work/version"
grep -Eq '^buffile-sweep \(buffile\) [0-9]+\.[0-9]+\.[0-9]+$' "$work/version" || fail "--version"
grep -Eq '^libbuffile [0-9]+\.[0-9]+\.[0-9]+$' "$work/version" || fail "--version: no running library"
[ "$(wc -l <"$work/err")" -eq 1 ] || fail "an error takes more than one line"
rm -rf "$work"
echo "sweep.sh: ok"
