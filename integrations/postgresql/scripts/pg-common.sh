# Shared by every script of this folder: pg-build.sh, pg-test.sh and the
# PostgreSQL benchmarks (sourced, not run). PG_MAJOR (15, the default, or 18) picks the
# PostgreSQL major version; each has its own directory, ports and source.
#
# Where things live (all under build/pg/, which .gitignore's /build*/ covers):
#   libbuffile/     libbuffile installed (postgres links its shared library);
#   lib-build/      its CMake build; both shared by the majors
#   tpch-build/, tpch-sf0.01/  the TPC-H generator and pg-test.sh's data
#   <major>/        everything of one major ($PGB):
#     apt/            private apt configuration and lists for the deb-src entries
#     dl/             the downloaded Debian source package (cached)
#     src-<ver>/      pristine PostgreSQL source, as dpkg-source extracts it
#     patched-<ver>/  the same with the patch series (integrations/postgresql/
#                     patches/<major>/) applied; only files whose content
#                     changes are rewritten, so make rebuilds only what changed
#     build-patched/  VPATH build of patched-<ver>;  inst-patched/ its install
#     build-stock/    VPATH build of src-<ver> (when Debian's binary of that
#                     version is not installable);  inst-stock/ its install
#     run/            data directories and logs of pg-test.sh
#     pg-version      the Debian version whose source is used
#     stock-bin       bin directory of the stock reference (Debian's binary of
#                     that version, or build-stock's install)
# Invariants: the pristine tree is never modified; everything PostgreSQL runs
# or builds as the unprivileged user $PG_USER, which owns build/pg/.

# This file is integrations/postgresql/scripts/pg-common.sh: TOP is the repository,
# PGS this folder, where every script of the integration is.
PGS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$PGS/../../.." && pwd)
PGROOT=$TOP/build/pg
PG_USER=${PG_USER:-pgbuf}
PG_JOBS=${PG_JOBS:-2}
export PG_MAJOR=${PG_MAJOR:-15}
# Per major: the upstream release the series is made for (the Debian source
# package must be of it); the suites of the machine's Debian archive its
# source comes from ("": the machine's own suites); the first of the ports
# its servers listen on (patched, stock, +4 the hash join benchmark), so that
# both majors' tests can run side by side.
case $PG_MAJOR in
  15) PG_UPSTREAM=15.18 PG_SOURCE_SUITES="" PG_PORT_BASE=54391 ;;
  18) PG_UPSTREAM=18.6 PG_SOURCE_SUITES="forky sid" PG_PORT_BASE=54491 ;;
  *) printf 'error: PG_MAJOR=%s: the series exists for 15 and 18\n' "$PG_MAJOR" >&2; exit 1 ;;
esac
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

# Version of Debian's installed postgresql-<major> binary package ("" if none).
pg_version() {
  dpkg-query -W -f='${Version}' postgresql-$PG_MAJOR 2>/dev/null || true
}
