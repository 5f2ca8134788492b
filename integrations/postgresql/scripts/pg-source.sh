#!/usr/bin/env bash
# Fetch and extract the pristine source of PostgreSQL 18.6 (pg-hook.sh's 18 starts from
# it); prints its directory as the last line.
#
#   integrations/postgresql/scripts/pg-source.sh
#
# Source: `apt-get source postgresql-18` of the upstream release PG_UPSTREAM (18.6,
# pg-common.sh), through deb-src entries derived from the machine's own apt sources
# into a private directory: no host file is written, and apt checks the signed
# Sources and the dsc's checksums as it always does. Debian 12 has no PostgreSQL 18,
# so the entries are the same archive's newer suites (PG_SOURCE_SUITES). The upstream
# source of the package is used without Debian's packaging patches (paths of Debian's
# layout). Cached under build/pg/18/ (see pg-common.sh): a second run fetches and
# extracts nothing.
set -euo pipefail
. "$(dirname "$0")/pg-common.sh"
. "$TOP/scripts/debian-source.sh"
[ "$(id -u)" -eq 0 ] || die "run as root: it installs packages and creates user $PG_USER"
[ $# -eq 0 ] || die "no arguments (it prints the pristine source's directory)"

# --- packages --------------------------------------------------------------
apt_install dpkg-dev
ensure_user
# One at a time: a second run waits, then finds the source there.
exec 9> "$PGB/.build.lock"
flock 9

# --- version and source ------------------------------------------------------
# The newest version of the upstream release PG_UPSTREAM whose source can be
# fetched. Remembered in build/pg/18/pg-version.
APT=$PGB/apt
APTOPT=(-o "Dir::Etc::SourceList=$APT/sources.list" -o "Dir::Etc::SourceParts=$APT/sources.list.d"
        -o "Dir::State::Lists=$APT/lists" -o "Dir::Cache=$APT/cache" -o "APT::Sandbox::User=root")
dsc_of() { echo "$PGB/dl/postgresql-${PG_MAJOR}_${1#*:}.dsc"; }

VER=$(cat "$PGB/pg-version" 2>/dev/null || true)
if [ -z "$VER" ] || [ ! -f "$(dsc_of "$VER")" ]; then
  mkdir -p "$APT/sources.list.d" "$APT/lists/partial" "$APT/cache/archives/partial" "$PGB/dl"
  debian_source_lists "$APT" "$PG_SOURCE_SUITES"
  log "private deb-src lists in $APT${PG_SOURCE_SUITES:+ (suites $PG_SOURCE_SUITES)}"
  apt-get "${APTOPT[@]}" update -qq
  VER=""
  for v in $(apt-cache "${APTOPT[@]}" showsrc "postgresql-$PG_MAJOR" \
               | sed -n 's/^Version: //p' | sort -rV); do
    case ${v#*:} in "$PG_UPSTREAM"-*) ;; *) continue ;; esac
    if (cd "$PGB/dl" && apt-get "${APTOPT[@]}" source --download-only -qq "postgresql-$PG_MAJOR=$v" \
          > /dev/null 2>&1) && [ -f "$(dsc_of "$v")" ]; then
      VER=$v
      break
    fi
    log "the source of postgresql-$PG_MAJOR $v cannot be fetched"
  done
  [ -n "$VER" ] || die "no source of postgresql-$PG_MAJOR $PG_UPSTREAM can be fetched"
  echo "$VER" > "$PGB/pg-version"
  log "apt-get source postgresql-$PG_MAJOR=$VER: $(dsc_of "$VER")"
fi
SRC=$PGB/src-$PG_UPSTREAM
if [ ! -f "$SRC/configure" ]; then
  rm -rf "$SRC.tmp"
  # Upstream source only: Debian's patches are packaging (they hard-wire
  # /usr/lib/postgresql/<major> into `make install`, over the installed package).
  dpkg-source -x --skip-patches "$(dsc_of "$VER")" "$SRC.tmp" > /dev/null 2>&1
  # (dpkg-source leaves a copy of the upstream tarball beside the tree)
  rm -f "$PGB/postgresql-${PG_MAJOR}_$PG_UPSTREAM.orig.tar."*
  mv "$SRC.tmp" "$SRC"
  chown -R "$PG_USER": "$SRC"
fi
echo "$SRC"
