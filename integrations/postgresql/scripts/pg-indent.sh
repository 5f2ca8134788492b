#!/usr/bin/env bash
# pgindent over what the patch series of one major adds or changes:
#
#   PG_MAJOR=18 integrations/postgresql/scripts/pg-indent.sh
#       the 18 series (PG_MAJOR=15: the 15 series)
#   integrations/postgresql/scripts/pg-indent.sh --fix
#       also rewrite the new files shared by the majors (integrations/postgresql/src/)
#
# pgindent and pg_bsd_indent are PostgreSQL 18's (src/tools/pgindent,
# src/tools/pg_bsd_indent, built once into build/pg/indent/ from the 18
# source, which pg-build.sh --source fetches); the typedefs are those of the
# patched tree, which the series extends with its own. Every C file the
# series adds is indented as it stands; for every C file it changes, the
# lines it adds and removes must be the same before and after pgindent runs
# over the pristine and the patched file (so a pristine line that this
# pgindent would indent otherwise, in 15's tree, is not ours to judge).
# Exits 1, showing pgindent's changes, when a line of the series is not as
# pgindent wants it. Needs the patched tree (pg-build.sh).
set -euo pipefail
. "$(dirname "$0")/pg-common.sh"
[ "$(id -u)" -eq 0 ] || die "run as root: it may install packages and build as $PG_USER"
FIX=0
case "${1:-}" in "") ;; --fix) FIX=1 ;; *) die "unknown argument $1 (--fix)" ;; esac

SRC=$PGB/src-$PG_UPSTREAM
PAT=$PGB/patched-$PG_UPSTREAM
[ -f "$PAT/.buffile-files" ] || die "no patched tree in $PAT: run PG_MAJOR=$PG_MAJOR integrations/postgresql/scripts/pg-build.sh"

# pg_bsd_indent from the 18 tree: configured and built once (a minimal
# configure: the tool needs pg_config.h and libpgport only).
SRC18=$(PG_MAJOR=18 bash "$PGS/pg-build.sh" --source | tail -1)
IND=$PGROOT/indent
if [ ! -x "$IND/src/tools/pg_bsd_indent/pg_bsd_indent" ]; then
  mkdir -p "$IND"; chown "$PG_USER": "$IND"
  (cd "$IND" && as_user "$SRC18/configure" --without-icu --without-readline --without-zlib \
     > configure.log 2>&1 && as_user make -s -C src/tools/pg_bsd_indent > make.log 2>&1) \
    || die "could not build pg_bsd_indent in $IND (see $IND/configure.log, $IND/make.log)"
fi
pgindent() {
  perl "$SRC18/src/tools/pgindent/pgindent" --indent="$IND/src/tools/pg_bsd_indent/pg_bsd_indent" \
    --typedefs="$PAT/src/tools/pgindent/typedefs.list" "$@"
}

W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
bad=0
# changes: the +/- lines of a diff, without its headers
changes() { diff -U0 "$1" "$2" | grep -E '^[-+]' | grep -Ev '^(\+\+\+|---) ' || true; }
while IFS= read -r f; do
  case "$f" in *.c|*.h) ;; *) continue ;; esac
  mkdir -p "$W/p/$(dirname "$f")" "$W/s/$(dirname "$f")"
  cp "$PAT/$f" "$W/p/$f"
  if [ -f "$SRC/$f" ]; then
    cp "$SRC/$f" "$W/s/$f"
    pgindent "$W/s/$f" "$W/p/$f"
    if [ "$(changes "$SRC/$f" "$PAT/$f")" != "$(changes "$W/s/$f" "$W/p/$f")" ]; then
      echo "pgindent changes lines of the series in $f:"
      diff -u <(changes "$SRC/$f" "$PAT/$f") <(changes "$W/s/$f" "$W/p/$f") | tail -n +3 || true
      bad=1
    fi
  else
    pgindent "$W/p/$f"
    if ! cmp -s "$PAT/$f" "$W/p/$f"; then
      echo "pgindent changes $f (new in the series):"
      diff -u "$PAT/$f" "$W/p/$f" | tail -n +3 || true
      bad=1
      # the shared new files: rewrite them where they are kept
      if [ $FIX = 1 ]; then
        m=$(grep -v '^#' "$TOP/integrations/postgresql/series/series" | tr ' ' '\n' | grep ":$f\$" | cut -d: -f1)
        [ -n "$m" ] && cp "$W/p/$f" "$TOP/integrations/postgresql/$m" && echo "rewrote integrations/postgresql/$m"
      fi
    fi
  fi
done < "$PAT/.buffile-files"
[ $bad = 0 ] && echo "pgindent: every C line the $PG_MAJOR series adds or changes is as pgindent wants it"
exit $bad
