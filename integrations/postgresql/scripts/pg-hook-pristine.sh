#!/usr/bin/env bash
# Two builds of PostgreSQL that differ only by the BufFile storage hook, for the
# measures of the hook's cost when no module sets it (pg-hook-cost.sh counts
# instructions, pg-hook-wall.sh times queries) and, the first alone, as the stock
# reference of pg-hook.sh's tpch part:
#
#   integrations/postgresql/scripts/pg-hook-pristine.sh 18|master
#       prints, as its last line, the directory holding inst-pristine/ and inst-hook/
#
# Needs pg-hook.sh's tree of that major (build/pg/hook/<major>/src, tag "pristine").
# Both builds are without --enable-cassert: the pristine one is a VPATH build of
# `git archive pristine` (with contrib's pg_stat_statements, as a stock install would
# have it), installed in bench/inst-pristine; the hook's is that same build with
# buffile.c compiled from the patched tree (with the pristine build's own compile
# line) and postgres linked again, installed in bench/inst-hook (a copy of
# inst-pristine with that postgres and the patched storage/buffile.h). The hook changes no other object: struct BufFile
# is opaque outside buffile.c, and buffile.h only gains declarations. Invariant:
# bench/build-pristine's objects and bench/inst-pristine stay pristine (the hook's
# buffile.o goes into the build only for the one link, then pristine's is put back).
set -euo pipefail
MAJOR=${1:-}
case $MAJOR in
  18|master) ;;
  *) printf 'usage: %s 18|master\n' "$0" >&2; exit 2 ;;
esac
# shellcheck source=pg-common.sh
. "$(dirname "$0")/pg-common.sh"
[ "$(id -u)" -eq 0 ] || die "run as root: it installs packages and builds as $PG_USER"
D=${PGHOOK_DIR:-$PGROOT/hook}/$MAJOR
SRC=$D/src
export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0='*'
[ -d "$SRC/.git" ] || die "no tree in $SRC: run pg-hook.sh $MAJOR build first"
apt_install build-essential bison flex perl libreadline-dev zlib1g-dev liblz4-dev libzstd-dev \
  libicu-dev ccache pkg-config git
ensure_user
CB=$D/bench
ccache_relative "$D"
mkdir -p "$CB"
chown "$PG_USER": "$CB"
exec 9> "$CB/.lock"
flock 9
t0=$SECONDS

# --- pristine, without assertions -----------------------------------------------
BP=$CB/build-pristine
if [ ! -f "$BP/config.status" ] && [ ! -d "$CB/src-pristine" ]; then
  rm -rf "$CB/src-pristine.tmp"
  mkdir -p "$CB/src-pristine.tmp"
  git -C "$SRC" archive pristine | tar -x -C "$CB/src-pristine.tmp"
  chown -R "$PG_USER": "$CB/src-pristine.tmp"
  mv "$CB/src-pristine.tmp" "$CB/src-pristine"
fi
mkdir -p "$BP"
chown "$PG_USER": "$BP"
if [ ! -f "$BP/config.status" ]; then
  (cd "$BP" && as_user env CC="ccache gcc" CFLAGS="-O2 -g -fno-omit-frame-pointer" \
     "$CB/src-pristine/configure" --enable-debug --with-lz4 --with-zstd \
     --with-system-tzdata=/usr/share/zoneinfo "--prefix=$CB/inst-pristine" > configure.log 2>&1) \
    || die "configure failed in $BP"
fi
(cd "$BP" && as_user make -s -j"$PG_JOBS" > make.log 2>&1 && as_user make -s install > install.log 2>&1 \
   && as_user make -s -C contrib/pg_stat_statements install >> install.log 2>&1) \
  || die "make failed in $BP (see $BP/make.log)"
log "pristine built without assertions: $((SECONDS - t0)) s"

# --- the hook: buffile.o from the patched tree, postgres linked again -------------
F=$BP/src/backend/storage/file
cc_line=$(cd "$F" && as_user make -n -B buffile.o | grep -F -- "-c -o buffile.o" | head -1)
[ -n "$cc_line" ] || die "no compile line for buffile.o in $F"
# the patched source, its headers first (the build's generated ones after them)
hook_line=$(sed -E "s# [^ ]*/storage/file/buffile\.c# $SRC/src/backend/storage/file/buffile.c#
                    s# -I# -I$SRC/src/include -I#
                    s# -o buffile\.o # -o $CB/buffile-hook.o #" <<< "$cc_line")
(cd "$F" && as_user bash -c "$hook_line") || die "the hook's buffile.c does not compile: $hook_line"
# postgres linked with it in place of pristine's buffile.o, which is put back after
cp -p "$F/buffile.o" "$CB/buffile-pristine.o"
# pristine's object goes back whatever happens from here (the invariant above: a run
# stopped in between would otherwise leave the hook in the next pristine install)
trap 'cp -p "$CB/buffile-pristine.o" "$F/buffile.o"; touch "$F/buffile.o"' EXIT
cp "$CB/buffile-hook.o" "$F/buffile.o"
touch "$F/buffile.o"
(cd "$BP/src/backend" && as_user make -s postgres > "$CB/link.log" 2>&1) || die "postgres does not link with the hook's buffile.o"
rm -rf "$CB/inst-hook"
cp -a "$CB/inst-pristine" "$CB/inst-hook"
cp "$BP/src/backend/postgres" "$CB/inst-hook/bin/postgres"
# and the hook's header, so that a module built against inst-hook (pg-hook-wall.sh's
# --method: pg_buffile) sees the hook's declarations
cp "$SRC/src/include/storage/buffile.h" "$("$CB/inst-hook/bin/pg_config" --includedir-server)/storage/buffile.h"
cp -p "$CB/buffile-pristine.o" "$F/buffile.o"
touch "$F/buffile.o"
trap - EXIT
(cd "$BP/src/backend" && as_user make -s postgres >> "$CB/link.log" 2>&1) || die "postgres does not link again"
cmp -s "$BP/src/backend/postgres" "$CB/inst-pristine/bin/postgres" \
  || log "(the relinked pristine postgres differs from the installed one only by link order)"
# (nm's output whole before grep: grep -q quitting early would fail the pipe)
syms=$(nm "$CB/inst-hook/bin/postgres")
grep -q buffile_storage_hook <<< "$syms" || die "the hook's postgres has no buffile_storage_hook"
syms=$(nm "$CB/inst-pristine/bin/postgres")
if grep -q buffile_storage_hook <<< "$syms"; then die "the pristine postgres has the hook"; fi
log "hook's postgres linked: $((SECONDS - t0)) s"
echo "$CB"
