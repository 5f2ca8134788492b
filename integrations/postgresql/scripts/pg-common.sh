# shellcheck shell=bash
# Shared by every script of this folder (sourced, not run): the paths, the user
# PostgreSQL builds and runs as, and the helpers.
#
# Where things live (all under build/pg/, which .gitignore's /build*/ covers):
#   libbuffile/     libbuffile installed (pg_buffile links its shared library);
#   lib-build/      its CMake build
#   tpch-build/, tpch-sf0.01/  the tree's tools (tpchgen, paired) and the tpch part's data
#   18/             PostgreSQL 18's source ($PGB): apt/ (private apt configuration and
#                   lists for the deb-src entries), dl/ (the Debian source package),
#                   src-18.6/ (pristine, as dpkg-source extracts it), pg-version (the
#                   Debian version used): pg-source.sh's
#   hook/<major>/   pg-hook.sh's tree, builds and runs (see there)
# Invariants: the pristine tree is never modified; everything PostgreSQL runs
# or builds as the unprivileged user $PG_USER, which owns build/pg/.

# This file is integrations/postgresql/scripts/pg-common.sh: TOP is the repository,
# PGS this folder, where every script of the integration is.
PGS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$PGS/../../.." && pwd)
PGROOT=$TOP/build/pg
PG_USER=${PG_USER:-pgbuf}
PG_JOBS=${PG_JOBS:-2}
# PostgreSQL 18, whose Debian source pg-source.sh fetches: the upstream release (the
# Debian source package must be of it) and the suites of the machine's Debian archive
# it comes from (Debian 12 has no PostgreSQL 18). The retired series also had 15.
export PG_MAJOR=18
# shellcheck disable=SC2034 # pg-source.sh uses them
PG_UPSTREAM=18.6 PG_SOURCE_SUITES="forky sid"
PGB=$PGROOT/$PG_MAJOR

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Install Debian packages that are missing (apt-get update first, once).
apt_install() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# The unprivileged user PostgreSQL runs as (it refuses root). Idempotent.
ensure_user() {
  id -u "$PG_USER" >/dev/null 2>&1 || useradd --system --create-home --shell /bin/bash "$PG_USER"
  mkdir -p "$PGB"
  # Only what is not ours yet: a second run does not walk the whole tree.
  find "$PGROOT" ! -user "$PG_USER" -exec chown -h "$PG_USER": {} + 2>/dev/null || true
  # The user must reach build/pg through the directories above it.
  local d=$PGROOT
  while [ "$d" != / ]; do
    d=$(dirname "$d")
    [ -x "$d" ] || die "$PG_USER cannot enter $d"
    runuser -u "$PG_USER" -- test -x "$d" || chmod o+x "$d"
  done
}

# Run a command as $PG_USER, in the current directory, with a sane environment.
as_user() {
  runuser -u "$PG_USER" -- env HOME="$(getent passwd "$PG_USER" | cut -d: -f6)" \
    PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 "$@"
}

# ccache_relative DIR: PostgreSQL's builds under DIR through ccache keyed on paths relative
# to DIR, the build directory not hashed: a clone elsewhere (each CI run's) reuses the
# objects of the last build of the same tree (a build of 420-470 s on a machine of AMD EPYC
# vCPUs; from a second clone 196 s with 98% hits). The objects' debug info may name the
# other clone's build directory; the sources' paths in it are relative.
ccache_relative() {
  export CCACHE_BASEDIR=$1 CCACHE_NOHASHDIR=true
}

# tools_build TARGET...: the tree's TARGETs (tpchgen, slowfs, paired) in a release
# build of the tree beside PostgreSQL's, build/pg/tpch-build.
tools_build() {
  cmake -S "$TOP" -B "$PGROOT/tpch-build" -DCMAKE_BUILD_TYPE=Release -DBF_BUILD_TESTS=OFF > /dev/null \
    && cmake --build "$PGROOT/tpch-build" --target "$@" -j"$PG_JOBS" > /dev/null
}

# tpch_queries: the folder of the TPC-H queries 1.sql .. 22.sql: $TPCH_QUERIES, else
# shared/tpch/queries beside a clone (CI) or beside the folder of worktrees; returns 1
# when there is none.
tpch_queries() {
  local q=${TPCH_QUERIES:-} d
  for d in "$TOP/../shared" "$TOP/../../shared"; do
    [ -z "$q" ] && [ -f "$d/tpch/queries/1.sql" ] && q=$(cd "$d/tpch/queries" && pwd)
  done
  [ -f "$q/1.sql" ] || return 1
  echo "$q"
}

# pg_buffile_install PG_CONFIG DIR: libbuffile (Release, tests and tools off) built
# into build/pg/libbuffile, then pg_buffile built with PGXS in DIR (a fresh copy of
# extension/: PGXS builds where its Makefile is) against PG_CONFIG's server and
# installed into it. Its make output is DIR/make.log; returns 1 if it does not build.
pg_buffile_install() {
  local pgc=$1 e=$2 lib=$PGROOT/libbuffile
  cmake -S "$TOP" -B "$PGROOT/lib-build" -DCMAKE_BUILD_TYPE=Release -DBF_BUILD_TPCH=OFF \
    -DBF_BUILD_TESTS=OFF -DBF_BUILD_SQLITE=OFF > /dev/null || return 1
  cmake --build "$PGROOT/lib-build" -j"$PG_JOBS" > /dev/null || return 1
  cmake --install "$PGROOT/lib-build" --prefix "$lib" > /dev/null || return 1
  chown -R "$PG_USER": "$lib"
  rm -rf "$e"
  cp -r "$TOP/integrations/postgresql/extension" "$e"
  chown -R "$PG_USER": "$e"
  local mk=(env "PKG_CONFIG_PATH=$lib/lib/pkgconfig" make -s -C "$e" "PG_CONFIG=$pgc")
  as_user "${mk[@]}" > "$e/make.log" 2>&1 && as_user "${mk[@]}" install >> "$e/make.log" 2>&1
}
