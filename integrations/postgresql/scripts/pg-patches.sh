#!/usr/bin/env bash
# Make the patch series of integrations/postgresql/ for one PostgreSQL major:
#
#   integrations/postgresql/scripts/pg-patches.sh 15 SRC OUT
#       write OUT/000N-*.patch (git format-patch) from the pristine tree SRC
#
# The series (integrations/postgresql/series/series) lists the commits; each
# is the unified diff <major>/<name>.diff against PostgreSQL's own files, the
# new files it adds (kept once under integrations/postgresql/, shared by every
# major) and the message series/<name>.msg. The commits are made in a scratch
# git repository holding the pristine versions of the files the series
# touches, with a fixed author and date, so the output depends on nothing but
# the inputs: pg-build.sh checks that integrations/postgresql/patches/<major>/
# is what this script makes, and applies it with patch -p1.
set -euo pipefail
MAJOR=$1 SRC=$(realpath "$2") OUT=$(realpath -m "$3")
INT=$(cd "$(dirname "$0")/.." && pwd)
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
[ -f "$SRC/configure" ] || die "$SRC is not a PostgreSQL source tree"

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mapfile -t entries < <(grep -v '^#' "$INT/series/series" | grep -v '^[[:space:]]*$')
# The pristine versions of every file a diff changes.
for e in "${entries[@]}"; do
  name=${e%% *}
  diff=$INT/$MAJOR/$name.diff
  [ -f "$diff" ] || die "no $diff"
  sed -nE 's|^\+\+\+ b/([^[:space:]]+).*|\1|p' "$diff" | while read -r f; do
    mkdir -p "$W/$(dirname "$f")"
    cp "$SRC/$f" "$W/$f"
  done
done
export GIT_AUTHOR_NAME="buffile project" GIT_AUTHOR_EMAIL="buffile@localhost"
export GIT_COMMITTER_NAME="buffile project" GIT_COMMITTER_EMAIL="buffile@localhost"
export GIT_AUTHOR_DATE="2025-01-01T00:00:00Z" GIT_COMMITTER_DATE="2025-01-01T00:00:00Z"
git -C "$W" init -q
git -C "$W" add -A
git -C "$W" -c commit.gpgsign=false commit -q -m "PostgreSQL $MAJOR, pristine"
for e in "${entries[@]}"; do
  read -r name files <<< "$e"
  (cd "$W" && patch -p1 --quiet --no-backup-if-mismatch < "$INT/$MAJOR/$name.diff") \
    || die "$MAJOR/$name.diff does not apply to $SRC"
  for m in $files; do
    mkdir -p "$W/$(dirname "${m#*:}")"
    cp "$INT/${m%%:*}" "$W/${m#*:}"
  done
  git -C "$W" add -A
  git -C "$W" -c commit.gpgsign=false commit -q -F "$INT/series/$name.msg"
done
rm -rf "$OUT"
mkdir -p "$OUT"
git -C "$W" format-patch -q --no-signature --zero-commit -o "$OUT" HEAD~${#entries[@]}..HEAD
