#!/usr/bin/env bash
# Build PostgreSQL with the patch series of integrations/postgresql/
# (temp_file_compression over libbuffile, configured --with-buffile), for
# the major PG_MAJOR (15, the default, or 18; see pg-common.sh).
#
#   integrations/postgresql/scripts/pg-build.sh
#       patched build into build/pg/15/inst-patched
#   PG_MAJOR=18 integrations/postgresql/scripts/pg-build.sh
#       the same for 18, in build/pg/18/
#   PG_BUILD_STOCK=1 integrations/postgresql/scripts/pg-build.sh
#       also stock PostgreSQL from the same source into build/pg/<major>/inst-stock
#   integrations/postgresql/scripts/pg-build.sh --source
#       only fetch and extract the pristine source; prints its directory
#
# Source: `apt-get source postgresql-<major>` of the upstream release the
# series is made for (PG_UPSTREAM: 15.18, 18.6), through deb-src entries
# derived from the machine's own apt sources into a private directory: no
# host file is written, and apt checks the signed Sources and the dsc's
# checksums as it always does. For 15 the entries are the machine's own
# suites, and the version of Debian's installed binary package is preferred
# (the stock reference); Debian 12 has no PostgreSQL 18, so for 18 they are
# the same archive's newer suites (PG_SOURCE_SUITES). When Debian's binary of
# the chosen version is neither installed nor installable, stock is built
# from the same source as the reference. The upstream source of the
# package is used without Debian's packaging patches (paths of Debian's
# layout). Cached under build/pg/ (see pg-common.sh): a second run
# re-extracts nothing, rewrites only the files whose patched content changed
# and lets make rebuild what depends on them (configured with
# --enable-depend; ccache also keeps objects).
# Configure: --with-lz4 --with-zstd --enable-tap-tests and, where it matters
# for temp files and tests, as Debian does (-O2 -g, system tzdata); no
# --enable-cassert. Prints the time of each step.
set -euo pipefail
. "$(dirname "$0")/pg-common.sh"
. "$TOP/scripts/debian-source.sh"
[ "$(id -u)" -eq 0 ] || die "run as root: it installs packages and creates user $PG_USER"
SOURCE_ONLY=0
case "${1:-}" in
  "") ;;
  --source) SOURCE_ONLY=1 ;;
  *) die "unknown argument $1 (--source)" ;;
esac

step_start=$SECONDS
step() { log "$1 ($((SECONDS - step_start)) s so far)"; }

# --- packages --------------------------------------------------------------
# (libicu-dev: 16 and later build with ICU unless told otherwise.)
apt_install build-essential cmake pkg-config bison flex libreadline-dev zlib1g-dev \
  liblz4-dev libzstd-dev libicu-dev libipc-run-perl ccache dpkg-dev patch
ensure_user
# One build at a time: two benchmarks started together must not install over
# each other (the second waits, then finds everything built).
exec 9> "$PGB/.build.lock"
flock 9

# --- version and source ------------------------------------------------------
# The newest version of the upstream release PG_UPSTREAM whose source can be
# fetched, Debian's installed binary's first. Remembered in
# build/pg/<major>/pg-version.
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
  for v in $(pg_version) $(apt-cache "${APTOPT[@]}" showsrc "postgresql-$PG_MAJOR" \
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
if [ $SOURCE_ONLY = 1 ]; then
  echo "$SRC"
  exit 0
fi
# The stock reference: Debian's binary of this version, installed if the
# machine's apt offers it and none is; else stock built from this source.
if [ -z "$(pg_version)" ] && apt-cache show "postgresql-$PG_MAJOR=$VER" > /dev/null 2>&1; then
  log "apt-get install postgresql-$PG_MAJOR=$VER (the stock reference)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "postgresql-$PG_MAJOR=$VER" > /dev/null
fi
installed=$(pg_version)
if [ "$installed" = "$VER" ]; then
  echo "/usr/lib/postgresql/$PG_MAJOR/bin" > "$PGB/stock-bin"
else
  log "Debian's postgresql-$PG_MAJOR $VER is not installed (installed: ${installed:-none}): stock is built from source"
  PG_BUILD_STOCK=1
  echo "$PGB/inst-stock/bin" > "$PGB/stock-bin"
fi
log "PostgreSQL $VER; stock reference: $(cat "$PGB/stock-bin")"
step "source ready in $SRC"

# --- libbuffile --------------------------------------------------------------
LIB=$PGROOT/libbuffile
cmake -S "$TOP" -B "$PGROOT/lib-build" -DCMAKE_BUILD_TYPE=Release -DBF_BUILD_TPCH=OFF \
  -DBF_BUILD_TESTS=OFF -DBF_BUILD_SQLITE=OFF >/dev/null
cmake --build "$PGROOT/lib-build" -j"$PG_JOBS" >/dev/null
cmake --install "$PGROOT/lib-build" --prefix "$LIB" >/dev/null
step "libbuffile built and installed in $LIB"

# --- configure and build --------------------------------------------------------
CONFIGURE_FLAGS=(--enable-debug --enable-depend --enable-tap-tests --with-lz4 --with-zstd
                 --with-system-tzdata=/usr/share/zoneinfo)
# The patched tree adds --with-buffile; libbuffile is found by pkg-config in
# its private prefix, and the server finds its shared library by rpath.
BUFFILE_FLAGS=(--with-buffile "PKG_CONFIG_PATH=$LIB/lib/pkgconfig" "LDFLAGS=-Wl,-rpath,$LIB/lib")
CFLAGS_PG="-O2 -g -fno-omit-frame-pointer"

# build <source tree> <build dir> <install dir> [extra configure arguments...]
build_pg() {
  local src=$1 b=$2 inst=$3
  shift 3
  local want="$src ${CONFIGURE_FLAGS[*]} $* --prefix=$inst CFLAGS=$CFLAGS_PG"
  mkdir -p "$b"
  chown "$PG_USER": "$b"
  if [ ! -f "$b/config.status" ] || [ "$(cat "$b/.configured" 2>/dev/null)" != "$want" ]; then
    log "configure $b"
    (cd "$b" && as_user env CC="ccache gcc" CFLAGS="$CFLAGS_PG" "$src/configure" \
      "${CONFIGURE_FLAGS[@]}" "$@" --prefix="$inst" > configure.log 2>&1) \
      || { tail -20 "$b/configure.log"; die "configure failed in $b"; }
    echo "$want" > "$b/.configured"
  fi
  # pg_stat_statements: pg-test.sh's battery reads temp_blks_* from it
  (cd "$b" && as_user make -s -j"$PG_JOBS" > make.log 2>&1 && as_user make -s install > install.log 2>&1 \
     && as_user make -s -C contrib/pg_stat_statements install >> install.log 2>&1) \
    || { grep -E 'error|Error' "$b/make.log" | head -20; die "make failed in $b (see $b/make.log)"; }
}

# Stock first: it needs no series.
if [ "${PG_BUILD_STOCK:-0}" = 1 ]; then
  mkdir -p "$PGB/inst-stock" && chown "$PG_USER": "$PGB/inst-stock"
  build_pg "$SRC" "$PGB/build-stock" "$PGB/inst-stock"
  step "stock PostgreSQL built and installed in $PGB/inst-stock"
fi

# --- the patch series ------------------------------------------------------------
# integrations/postgresql/patches/$PG_MAJOR/ must be what pg-patches.sh makes
# of the series' sources; then it is applied as a hacker would, with patch -p1.
INT=$TOP/integrations/postgresql
SERIES=$INT/patches/$PG_MAJOR
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE" "$STAGE.list" "$STAGE.made"' EXIT
bash "$PGS/pg-patches.sh" "$PG_MAJOR" "$SRC" "$STAGE.made" \
  || die "the patch series cannot be made from integrations/postgresql/"
diff -r "$STAGE.made" "$SERIES" > /dev/null \
  || die "$SERIES is stale: run integrations/postgresql/scripts/pg-patches.sh $PG_MAJOR $SRC $SERIES"

# --- patched tree -------------------------------------------------------------
PAT=$PGB/patched-$PG_UPSTREAM
if [ ! -d "$PAT" ]; then
  cp -a "$SRC" "$PAT.tmp"
  chown -R "$PG_USER": "$PAT.tmp"
  mv "$PAT.tmp" "$PAT"
fi
# Build the wanted content of every file the series changes or adds in a
# scratch tree, then copy only the files whose content differs (mtimes of the
# rest stay, so make rebuilds only what depends on them).
mapfile -t touched < <(sed -nE 's|^\+\+\+ b/([^[:space:]]+).*|\1|p' "$SERIES"/*.patch | sort -u)
for f in "${touched[@]}"; do
  mkdir -p "$STAGE/$(dirname "$f")"
  [ -f "$SRC/$f" ] && cp "$SRC/$f" "$STAGE/$f"
done
for p in "$SERIES"/*.patch; do
  (cd "$STAGE" && patch -p1 --quiet --no-backup-if-mismatch < "$p") \
    || die "$p does not apply to PostgreSQL $PG_UPSTREAM"
done
changed=0
(cd "$STAGE" && find . -type f | sed 's|^\./||' | sort) > "$STAGE.list"
while IFS= read -r f; do
  if ! cmp -s "$STAGE/$f" "$PAT/$f"; then
    cp "$STAGE/$f" "$PAT/$f"
    chown "$PG_USER": "$PAT/$f"
    log "updated $f"
    changed=$((changed + 1))
  fi
done < "$STAGE.list"
# A file an earlier series changed and this one does not: back to pristine.
if [ -f "$PAT/.buffile-files" ]; then
  while IFS= read -r f; do
    if [ -f "$SRC/$f" ]; then cp -p "$SRC/$f" "$PAT/$f"; touch "$PAT/$f"; else rm -f "$PAT/$f"; fi
    log "restored $f"
    changed=$((changed + 1))
  done < <(comm -23 "$PAT/.buffile-files" "$STAGE.list")
fi
cp "$STAGE.list" "$PAT/.buffile-files"
rm -f "$STAGE.list"
step "patched tree $PAT ($changed files changed by $(ls "$SERIES" | wc -l) patches)"

# --- the patched build ----------------------------------------------------------
mkdir -p "$PGB/inst-patched" && chown "$PG_USER": "$PGB/inst-patched"
build_pg "$PAT" "$PGB/build-patched" "$PGB/inst-patched" "${BUFFILE_FLAGS[@]}"
# ldd's output is kept whole before it is searched: grep -q quitting at the
# first match would kill ldd by SIGPIPE, and pipefail would report that.
linked=$(ldd "$PGB/inst-patched/bin/postgres")
grep -q "libbuffile.so.*$LIB/lib" <<< "$linked" \
  || die "the patched postgres is not linked with libbuffile: $(grep libbuffile <<< "$linked" || echo none)"
step "patched PostgreSQL built and installed in $PGB/inst-patched"

log "pg-build.sh done in $((SECONDS - step_start)) s"
