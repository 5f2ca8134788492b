#!/usr/bin/env bash
# Build and test PostgreSQL with the BufFile storage hook patch
# (integrations/postgresql/hook/<major>/, see hook/README.md), for a major
# given as the first argument: 18 (Debian's 18.6 source, fetched by
# pg-source.sh) or master (the shared tarball, its checksum verified).
#
#   integrations/postgresql/scripts/pg-hook.sh 18 [PART...]
#   integrations/postgresql/scripts/pg-hook.sh master [PART...]
#   integrations/postgresql/scripts/pg-hook.sh 18 --export
#       write the tree's commits after "pristine" back into hook/18/ (after
#       editing and committing in the tree; the cover letter is kept)
#
# PARTs, all by default, in this order:
#   build    the pristine tree as a git repository (tag "pristine"), the patch
#            series applied with git am and checked to be what git
#            format-patch makes of it; configure, make, make install
#   indent   pgindent (the tree's, with its typedefs.list) changes nothing
#            in the C files the series touches; and the docs build's check
#            (make -C doc/src/sgml check: xmllint validates the whole SGML
#            source, the hook's chapter with it, against DocBook's DTD)
#   check    core's make check in src/test/regress and src/test/isolation:
#            the hook compiled in, no module loaded
#   module   make check of src/test/modules/test_buffile_hook
#   through  core's make check in src/test/regress and src/test/isolation
#            with test_buffile_hook preloaded: every BufFile of both suites
#            goes through the hook's pass-through
#   extension libbuffile (CMake, into build/pg/libbuffile),
#            pg_buffile (integrations/postgresql/extension/) built with PGXS
#            against this install and installed (pgindent-clean with its
#            typedefs.list); then, against a server started with
#            shared_preload_libraries = 'pg_buffile' and pg_buffile.method =
#            none, lz4, zstd, auto in turn: its make installcheck and core's
#            installcheck-parallel (every BufFile of core's suite through the
#            extension), and with lz4 core's isolation suite (installcheck); then
#            core's installcheck-parallel with lz4 and pg_buffile.encryption = on;
#            after each suite, the temp files its log_temp_files lines show judged
#            by templog.py (through pg_buffile, both kinds, each with the method,
#            encrypted in the encrypted pass), and the bytes pg_buffile_stats
#            counted (reset before the suite) written into the files and stored
#            on disk: for the regression suite stored/logical at most 1.01 with
#            none and auto, lz4's at most none's (the figures in
#            build/.../pg-bytes.txt; the part fails after printing them all)
#   tap      (after extension) pg_buffile's TAP tests (extension/t/, PGXS
#            installcheck with TAP_TESTS; each test starts servers of its
#            own with pg_buffile preloaded): parallel workers, crash restart,
#            logical replication's streamed spill, cancel, ENOSPC (in a
#            tmpfs of 8 MB this part mounts, passed as PG_BUFFILE_ENOSPC_DIR)
#   memory   (after extension) 100,000 open BufFiles of 100 and
#            of 10,000 bytes (tests/buffile_memory) on the extension's server:
#            the memory of lz4's files within 1.10 times stock's (off); 256
#            files of 2 MB written in turns as a hash join's batches: none's
#            within 1.10 times stock's plus 6 bytes a block (a run of bare
#            blocks' map), lz4's plus 18 (compressed extents' map)
#   battery, tpch, aborts, tap-stream
#            (after extension) the scripts of those names in pg-test/, whose
#            headers say what they prove (lib.sh: what they share), against this
#            install with pg_buffile preloaded; battery builds contrib's
#            pg_stat_statements into the install first; tpch's stock is this
#            build with the hook unset, or with PGHOOK_TPCH_PRISTINE=1 the
#            tree's "pristine" tag built without the hook (pg-hook-pristine.sh: a
#            whole PostgreSQL build the first time, cached in bench/; then a
#            relink of the hook's postgres). See ../README.md.
#
# Directories: build/pg/hook/<major>/ ($PGHOOK_DIR/<major> if set): src/ (the
# git tree), build/ (VPATH build), inst/ (install). The master tarball is
# $PGHOOK_MASTER_TARBALL, else shared/deps/postgresql-master-*.tar.xz beside
# a clone or beside the folder of worktrees. Prints the time of each part.
set -euo pipefail
MAJOR=${1:-}
shift || true
case $MAJOR in
  18|master) ;;
  *) printf 'usage: %s 18|master [--export | PART...]\n' "$0" >&2; exit 2 ;;
esac
# shellcheck source=pg-common.sh
. "$(dirname "$0")/pg-common.sh"
[ "$(id -u)" -eq 0 ] || die "run as root: it installs packages and builds as $PG_USER"
HOOK=$TOP/integrations/postgresql/hook/$MAJOR
[ -d "$HOOK" ] || die "no patch series in $HOOK"
D=${PGHOOK_DIR:-$PGROOT/hook}/$MAJOR
SRC=$D/src
export GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0='*' \
  GIT_CONFIG_KEY_1=commit.gpgsign GIT_CONFIG_VALUE_1=false
git_() { git -C "$SRC" "$@"; }

EXPORT=0
PARTS=()
for a in "$@"; do
  case $a in
    --export) EXPORT=1 ;;
    build|indent|check|module|through|extension|tap|memory|battery|tpch|aborts|tap-stream) PARTS+=("$a") ;;
    *) die "unknown part $a (build indent check module through extension tap memory battery tpch aborts tap-stream, or --export)" ;;
  esac
done
[ ${#PARTS[@]} -gt 0 ] || PARTS=(build indent check module through extension tap memory battery tpch aborts tap-stream)
want() { local p; for p in "${PARTS[@]}"; do [ "$p" = "$1" ] && return 0; done; return 1; }

t0=$SECONDS
part_start=$SECONDS
done_part() { log "$1: $((SECONDS - part_start)) s"; part_start=$SECONDS; }

# The series as git format-patch writes it from the tree, into $1.
format_series() {
  rm -rf "$1"
  git_ format-patch -q --no-signature --zero-commit -o "$1" pristine..HEAD
}

if [ $EXPORT = 1 ]; then
  [ -d "$SRC/.git" ] || die "no tree in $SRC"
  W=$(mktemp -d)
  format_series "$W/p"
  find "$HOOK" -name '000[1-9]-*.patch' -delete
  cp "$W"/p/*.patch "$HOOK/"
  rm -rf "$W"
  n=$(find "$HOOK" -name '000[1-9]-*.patch' | wc -l)
  log "wrote $n patches into $HOOK"
  exit 0
fi

apt_install build-essential bison flex perl libreadline-dev zlib1g-dev liblz4-dev libzstd-dev \
  libicu-dev libipc-run-perl ccache pkg-config git xz-utils cmake libssl-dev \
  libxml2-utils docbook-xml
ensure_user
mkdir -p "$D"
chown "$PG_USER": "$D"
exec 9> "$D/.lock"
flock 9

# --- the pristine tree, as a git repository ---------------------------------
if [ ! -d "$SRC/.git" ]; then
  rm -rf "$SRC" "$SRC.tmp"
  if [ "$MAJOR" = 18 ]; then
    pristine=$(bash "$PGS/pg-source.sh" | tail -1)
    cp -a "$pristine" "$SRC.tmp"
  else
    tarball=${PGHOOK_MASTER_TARBALL:-}
    for dd in "$TOP/../shared/deps" "$TOP/../../shared/deps"; do
      for f in "$dd"/postgresql-master-*.tar.xz; do
        [ -z "$tarball" ] && [ -f "$f" ] && tarball=$f
      done
    done
    [ -f "$tarball" ] || die "no PostgreSQL master tarball (set PGHOOK_MASTER_TARBALL)"
    (cd "$(dirname "$tarball")" && sha256sum -c --quiet "$(basename "$tarball").sha256") \
      || die "$tarball does not match its checksum"
    mkdir -p "$SRC.tmp"
    tar -xJf "$tarball" -C "$SRC.tmp" --strip-components=1
  fi
  git -C "$SRC.tmp" init -q
  git -C "$SRC.tmp" add -A -f
  git -C "$SRC.tmp" -c user.name=pristine -c user.email=pristine@localhost \
    commit -q -m "PostgreSQL $MAJOR, pristine"
  git -C "$SRC.tmp" tag pristine
  chown -R "$PG_USER": "$SRC.tmp"
  mv "$SRC.tmp" "$SRC"
fi

# --- the series: applied unless the tree's commits are it already -----------
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/want"
cp "$HOOK"/000[1-9]-*.patch "$W/want/"
same_series() { format_series "$W/have" && diff -r "$W/have" "$W/want" > /dev/null; }
if want build; then
  if ! same_series; then
    log "applying $(find "$W/want" -name '*.patch' | wc -l) patches of $HOOK with git am"
    git_ reset -q --hard pristine
    git_ -c user.name="$PG_USER" -c user.email="$PG_USER@localhost" am -q "$W"/want/*.patch \
      || die "the series does not apply to the pristine tree"
    chown -R "$PG_USER": "$SRC"
    same_series || { diff -r "$W/have" "$W/want" | head -20;
                      die "$HOOK is not what git format-patch makes of it"; }
  fi
  log "tree $SRC: $(git_ log --oneline pristine..HEAD | wc -l) commits on pristine"
fi

# --- build -------------------------------------------------------------------
B=$D/build
INST=$D/inst
CFLAGS_PG="-O2 -g -fno-omit-frame-pointer"
ccache_relative "$D"
CONF=(--enable-debug --enable-depend --enable-cassert --enable-tap-tests --with-lz4 --with-zstd
      --with-system-tzdata=/usr/share/zoneinfo "--prefix=$INST")
if want build; then
  mkdir -p "$B" "$INST"
  chown "$PG_USER": "$B" "$INST"
  wanted="${CONF[*]} CFLAGS=$CFLAGS_PG"
  if [ ! -f "$B/config.status" ] || [ "$(cat "$B/.configured" 2>/dev/null)" != "$wanted" ]; then
    (cd "$B" && as_user env CC="ccache gcc" CFLAGS="$CFLAGS_PG" "$SRC/configure" "${CONF[@]}" \
       > configure.log 2>&1) || { tail -20 "$B/configure.log"; die "configure failed in $B"; }
    echo "$wanted" > "$B/.configured"
  fi
  (cd "$B" && as_user make -s -j"$PG_JOBS" > make.log 2>&1 && as_user make -s install > install.log 2>&1) \
    || { grep -E 'error|warning' "$B/make.log" | head -20; die "make failed in $B (see $B/make.log)"; }
  if grep -E 'warning:' "$B/make.log" | grep -E 'buffile|test_buffile_hook' ; then
    die "the series' files compile with warnings"
  fi
  done_part "build ($MAJOR, installed in $INST)"
fi
[ -f "$B/config.status" ] || die "not built yet: run $0 $MAJOR build"

# --- pgindent --------------------------------------------------------------------
if want indent; then
  (cd "$B" && as_user make -s -C src/tools/pg_bsd_indent > indent.log 2>&1) \
    || die "could not build pg_bsd_indent (see $B/indent.log)"
  mapfile -t files < <(git_ diff --name-only pristine..HEAD -- '*.c' '*.h')
  rm -rf "$W/ind"
  for f in "${files[@]}"; do
    mkdir -p "$W/ind/$(dirname "$f")"
    cp "$SRC/$f" "$W/ind/$f"
  done
  (cd "$W/ind" && perl "$SRC/src/tools/pgindent/pgindent" \
     --indent="$B/src/tools/pg_bsd_indent/pg_bsd_indent" \
     --typedefs="$SRC/src/tools/pgindent/typedefs.list" "${files[@]}")
  bad=0
  for f in "${files[@]}"; do
    cmp -s "$SRC/$f" "$W/ind/$f" || { diff -u "$SRC/$f" "$W/ind/$f" || true; bad=1; }
  done
  [ $bad = 0 ] || die "pgindent changes the files above"
  # The docs: XMLLINT given, as a build configured before libxml2-utils was installed
  # has none in Makefile.global.
  (cd "$B" && as_user make -s -C doc/src/sgml check XMLLINT=xmllint > doc-check.log 2>&1) \
    || { tail -20 "$B/doc-check.log"; die "the docs do not validate (see $B/doc-check.log)"; }
  done_part "indent (${#files[@]} files unchanged by pgindent; the docs checked by make -C doc/src/sgml check)"
fi

# run_check NAME DIR [MAKEARG...]: make check in DIR, its output in NAME.log; logs the
# summary line pg_regress printed and the time it took
run_check() {
  local name=$1 dir=$2 t=$SECONDS
  shift 2
  if (cd "$B/$dir" && as_user make -s check "$@" > "$B/$name.log" 2>&1); then
    log "$name: $(grep -E 'tests passed|All [0-9]+ tests' "$B/$name.log" | tail -1 | tr -s ' #') ($((SECONDS - t)) s)"
  else
    tail -30 "$B/$name.log"
    die "$name failed (see $B/$name.log and $B/$dir)"
  fi
}

if want check; then
  run_check check-core src/test/regress
  run_check check-isolation src/test/isolation
  done_part "check (core's regress and isolation, hook unset)"
fi
if want module; then
  run_check check-module src/test/modules/test_buffile_hook
  done_part "module (test_buffile_hook)"
fi
if want through; then
  # EXTRA_INSTALL puts the module into the temporary installation.
  for dir in src/test/regress src/test/isolation; do
    name=check-through
    [ "$dir" = src/test/regress ] || name=check-through-isolation
    run_check "$name" "$dir" \
      EXTRA_INSTALL=src/test/modules/test_buffile_hook \
      TEMP_CONFIG="$SRC/src/test/modules/test_buffile_hook/test_buffile_hook.conf"
  done
  done_part "through (core's regress and isolation, every BufFile through test_buffile_hook)"
fi

# --- the extension ------------------------------------------------------------
if want extension; then
  LIB=$PGROOT/libbuffile
  # libbuffile, then the extension in a copy (PGXS builds where its Makefile is)
  E=$D/ext
  pg_buffile_install "$INST/bin/pg_config" "$E" || { cat "$E/make.log" 2>/dev/null || true; die "pg_buffile does not build"; }
  PGX=(env "PKG_CONFIG_PATH=$LIB/lib/pkgconfig" make -s -C "$E" "PG_CONFIG=$INST/bin/pg_config")
  if grep -E 'warning:' "$E/make.log"; then die "pg_buffile compiles with warnings"; fi
  if want indent; then
    mkdir -p "$W/ext"
    cp "$E/pg_buffile.c" "$W/ext/"
    cat "$SRC/src/tools/pgindent/typedefs.list" "$E/typedefs.list" > "$W/ext/typedefs.list"
    (cd "$W/ext" && perl "$SRC/src/tools/pgindent/pgindent" \
       --indent="$B/src/tools/pg_bsd_indent/pg_bsd_indent" --typedefs=typedefs.list pg_buffile.c)
    cmp -s "$E/pg_buffile.c" "$W/ext/pg_buffile.c" \
      || { diff -u "$E/pg_buffile.c" "$W/ext/pg_buffile.c"; die "pgindent changes pg_buffile.c"; }
  fi
  linked=$(ldd "$INST/lib/postgresql/pg_buffile.so")
  grep -q "libbuffile.so.*$LIB/lib" <<< "$linked" || die "pg_buffile.so is not linked with $LIB's libbuffile"
  # libbuffile (and libcrypto with it) is the extension's, never the server's
  linked=$(ldd "$INST/bin/postgres")
  if grep libbuffile <<< "$linked"; then die "the server is linked with libbuffile"; fi
  done_part "extension built (libbuffile in $LIB, pg_buffile in $INST)"

  # A server of its own: 18 listens on 54591, master on 54691.
  R=$D/run
  case $MAJOR in 18) port=54591 ;; *) port=54691 ;; esac
  stop_server() { as_user "$INST/bin/pg_ctl" -D "$R/data" stop -m fast > /dev/null 2>&1 || true; }
  stop_server
  rm -rf "$R"
  mkdir -p "$R"
  chown "$PG_USER": "$R"
  as_user "$INST/bin/initdb" -D "$R/data" -A trust --no-sync > "$R/initdb.log" 2>&1 \
    || { cat "$R/initdb.log"; die "initdb failed"; }
  cat >> "$R/data/postgresql.conf" <<CONF
port = $port
unix_socket_directories = '$R'
listen_addresses = ''
shared_preload_libraries = 'pg_buffile'
fsync = off
log_temp_files = 0
max_prepared_transactions = 10
CONF
  trap 'stop_server; rm -rf "$W"' EXIT
  psql_x() {
    as_user env PGOPTIONS="-c client_min_messages=warning" \
      "$INST/bin/psql" -h "$R" -p "$port" -X -v ON_ERROR_STOP=1 -d postgres "$@"
  }
  # The bytes of core's suites as pg_buffile_stats counts them (every process's files,
  # FileSet files and parallel workers' included, which the log cannot show): what was
  # written into the files (logical) and what their blocks took on disk, rewrites
  # included (stored). Issue 46: stored/logical at most 1.01 for none and auto in the
  # regression suite, and lz4's at most none's. The figures go to $BYTES, the failures
  # into bytes_bad, judged once every pass has printed its figures.
  BYTES=$B/pg-bytes.txt
  printf '# suite pass method files logical_bytes stored_bytes stored/logical\n' > "$BYTES"
  bytes_bad=()
  none_bytes=""    # "STORED LOGICAL" of none's pass
  # bytes_read SUITE PASS METHOD: the counters since the reset, judged
  bytes_read() {
    local suite=$1 pass=$2 method=$3 n row files logical stored ratio
    # the suite's last backends may still be exiting (they add their files then)
    for _ in $(seq 100); do
      n=$(psql_x -At -c "select count(*) from pg_stat_activity where pid <> pg_backend_pid()
                         and backend_type in ('client backend', 'parallel worker')")
      [ "$n" = 0 ] && break
      sleep 0.1
    done
    row=$(psql_x -At -F' ' -c "select coalesce(sum(files), 0), coalesce(sum(logical_bytes), 0),
                                 coalesce(sum(stored_bytes), 0) from pg_buffile_stats
                               where method = '$method'")
    read -r files logical stored <<< "$row"
    ratio=$(awk -v s="$stored" -v l="$logical" 'BEGIN { if (l > 0) printf "%.4f", s / l; else print "-" }')
    echo "$suite $pass $method $files $logical $stored $ratio" >> "$BYTES"
    log "  pg_buffile_stats, $method: $files files, logical $logical B, stored $stored B, stored/logical $ratio"
    # other methods' rows: none expected
    row=$(psql_x -At -F' ' -c "select method, sum(files) from pg_buffile_stats
                               where method <> '$method' group by method")
    [ -z "$row" ] || bytes_bad+=("$suite $pass: files counted under other methods: $row")
    [ "$suite" = regress ] || return 0
    if [ "$ratio" = - ]; then
      bytes_bad+=("$suite $pass: pg_buffile_stats counted no bytes under $method")
      return 0
    fi
    # judged on the counts, not on the rounded ratio
    case $pass in
      none|auto)
        awk -v s="$stored" -v l="$logical" 'BEGIN { exit !(s <= 1.01 * l) }' \
          || bytes_bad+=("$suite $pass: stored/logical $ratio > 1.01")
        if [ "$pass" = none ]; then none_bytes="$stored $logical"; fi ;;
      lz4)
        if [ -n "$none_bytes" ]; then
          awk -v s="$stored" -v l="$logical" -v n="$none_bytes" \
            'BEGIN { split(n, b, " "); exit !(s * b[2] <= b[1] * l) }' \
            || bytes_bad+=("$suite $pass: stored/logical $ratio > none's")
        fi ;;
    esac
    return 0
  }
  # Passes: each method (none first: lz4's bytes are judged against its), then lz4
  # with pg_buffile.encryption (core's suite only: the regression test seals files of
  # its own).
  for pass in none lz4 zstd auto lz4+encryption; do
    pass_start=$SECONDS
    method=${pass%+encryption} enc=off
    [ "$pass" = "$method" ] || enc=on
    sed -i "/^pg_buffile.method/d; /^pg_buffile.encryption/d" "$R/data/postgresql.conf"
    printf "pg_buffile.method = '%s'\npg_buffile.encryption = %s\n" "$method" "$enc" >> "$R/data/postgresql.conf"
    as_user "$INST/bin/pg_ctl" -D "$R/data" -l "$R/server.log" -w restart > /dev/null 2>&1 \
      || as_user "$INST/bin/pg_ctl" -D "$R/data" -l "$R/server.log" -w start > /dev/null \
      || { tail -20 "$R/server.log"; die "the server with pg_buffile does not start"; }
    psql_x -q -c "create extension if not exists pg_buffile"
    # TAP_TESTS= : the regression test only (the tap part runs the TAP tests, once)
    if [ $enc = on ]; then
      :
    elif as_user env PGHOST="$R" PGPORT=$port "${PGX[@]}" installcheck TAP_TESTS= > "$E/installcheck-$method.log" 2>&1; then
      log "installcheck, pg_buffile.method = $method: $(grep -E 'tests passed' "$E/installcheck-$method.log" | tr -s ' #')"
    else
      cat "$E/installcheck-$method.log"; head -40 "$E/regression.diffs" 2>/dev/null
      die "pg_buffile's installcheck failed with pg_buffile.method = $method"
    fi
    # core's suites against this server: PGHOST/PGPORT as any installcheck; then the
    # temp-file lines the suite's processes logged, judged by templog.py: the regression
    # suite spills
    # private and FileSet files (of parallel hash joins and sorts) through pg_buffile,
    # every file with the method (and sealed in the encrypted pass), lz4 and zstd
    # storing fewer bytes than they were given; every file of the isolation suite too.
    suites=(src/test/regress installcheck-parallel)
    [ "$pass" = lz4 ] && suites+=(src/test/isolation installcheck)
    for ((i = 0; i < ${#suites[@]}; i += 2)); do
      dir=${suites[i]} target=${suites[i + 1]}
      logf=$B/${dir##*/}-${pass/+/-}.log
      before=$(wc -l < "$R/server.log")
      psql_x -qAt -c "select pg_buffile_stats_reset()" > /dev/null
      if (cd "$B/$dir" && as_user env PGHOST="$R" PGPORT=$port make -s "$target" > "$logf" 2>&1); then
        log "core $dir $target, pg_buffile.method = $method, encryption $enc: $(grep -E 'tests passed' "$logf" | tr -s ' #')"
      else
        tail -30 "$logf"
        die "core's $dir $target failed with pg_buffile.method = $method, encryption $enc (see $logf)"
      fi
      tail -n +"$((before + 1))" "$R/server.log" > "$logf.temp"
      judge=(--codec="$method")
      [ "$dir" = src/test/regress ] && judge+=(--both "--kinds=hash,sort")
      # none stores blocks as they are, auto may
      case $method in none|auto) ;; *) judge+=(--smaller) ;; esac
      [ $enc = off ] || judge+=(--encrypted)
      if ! python3 "$PGS/templog.py" check "${judge[@]}" "$logf.temp" > "$logf.judged"; then
        cat "$logf.judged"
        die "the temp files of core's $dir under pg_buffile.method = $method, encryption $enc (see $logf.temp)"
      fi
      while read -r line; do log "  $line"; done < "$logf.judged"
      bytes_read "${dir##*/}" "$pass" "$method"
    done
    log "pass $pass: $((SECONDS - pass_start)) s"
  done
  stop_server
  # the memory part restarts this server: not with the encrypted pass's setting
  sed -i "/^pg_buffile.encryption/d" "$R/data/postgresql.conf"
  if grep -E 'TRAP|terminated by signal|PANIC' "$R/server.log"; then die "the server crashed (see $R/server.log)"; fi
  if [ ${#bytes_bad[@]} -gt 0 ]; then
    printf '%s\n' "${bytes_bad[@]}" >&2
    die "the bytes pg_buffile stored for core's suites (see $BYTES)"
  fi
  done_part "extension: installcheck and core's suites (none, lz4, zstd, auto, lz4 encrypted)"
fi

# --- the extension's TAP tests ---------------------------------------------------
if want tap; then
  LIB=$PGROOT/libbuffile
  [ -f "$LIB/lib/pkgconfig/buffile.pc" ] || die "no libbuffile in $LIB: run $0 $MAJOR extension first"
  # A copy of the extension as it is in the tree, built and installed again (one file),
  # so that the tests run against the module of their own source.
  T=$D/ext-tap
  rm -rf "$T"
  cp -r "$TOP/integrations/postgresql/extension" "$T"
  chown -R "$PG_USER": "$T"
  PGT=(env "PKG_CONFIG_PATH=$LIB/lib/pkgconfig" make -s -C "$T" "PG_CONFIG=$INST/bin/pg_config")
  (as_user "${PGT[@]}" > "$T/make.log" 2>&1 && as_user "${PGT[@]}" install >> "$T/make.log" 2>&1) \
    || { cat "$T/make.log"; die "pg_buffile does not build"; }
  # ENOSPC: a tmpfs small enough to fill, the tablespace directories of 005_enospc.pl
  FS=$D/enospc
  if mountpoint -q "$FS"; then umount "$FS"; fi
  mkdir -p "$FS"
  mount -t tmpfs -o size=8m,mode=0755 tmpfs "$FS" \
    || die "could not mount a tmpfs on $FS for the ENOSPC test"
  trap 'umount "$FS" 2>/dev/null || true; rm -rf "$W"' EXIT
  chown "$PG_USER": "$FS"
  if as_user env PG_BUFFILE_ENOSPC_DIR="$FS" "${PGT[@]}" installcheck REGRESS= PROVE_FLAGS=--timer \
       > "$T/tap.log" 2>&1; then
    while read -r line; do log "tap: $line"; done \
      < <(grep -E '^\[[0-9:]+\] t/[0-9]+_' "$T/tap.log" | sed -E 's/^\[[0-9:]+\] //; s/ \(.*//; s/\.{2,}/:/')
    log "tap: $(grep -E '^Files=' "$T/tap.log")"
  else
    cat "$T/tap.log"
    for f in "$T"/tmp_check/log/regress_log_*; do
      grep -qE '^\[[0-9:.]+\]\([0-9.]+s\) not ok' "$f" && { echo "== $f"; tail -40 "$f"; }
    done
    die "pg_buffile's TAP tests failed (see $T/tap.log and $T/tmp_check/log)"
  fi
  umount "$FS"
  done_part "tap (pg_buffile's TAP tests)"
fi

# --- memory of 100,000 open files ----------------------------------------------
if want memory; then
  R=$D/run
  case $MAJOR in 18) port=54591 ;; *) port=54691 ;; esac
  [ -f "$R/data/postgresql.conf" ] || die "no server of the extension part in $R: run $0 $MAJOR extension first"
  M=$D/memory
  rm -rf "$M"
  cp -r "$TOP/integrations/postgresql/tests/buffile_memory" "$M"
  chown -R "$PG_USER": "$M"
  (cd "$M" && as_user make -s PG_CONFIG="$INST/bin/pg_config" install > build.log 2>&1) \
    || { tail -20 "$M/build.log"; die "buffile_memory does not build"; }
  stop_server() { as_user "$INST/bin/pg_ctl" -D "$R/data" stop -m fast > /dev/null 2>&1 || true; }
  trap 'stop_server; rm -rf "$W"' EXIT
  as_user "$INST/bin/pg_ctl" -D "$R/data" -l "$R/server.log" -w restart > /dev/null 2>&1 \
    || die "the server of $R does not start"
  psql_() {
    as_user env PGOPTIONS="-c client_min_messages=warning" \
      "$INST/bin/psql" -h "$R" -p "$port" -X -v ON_ERROR_STOP=1 "$@"
  }
  db=postgres ts=""
  # The files in a tablespace on a tmpfs when there is one (creating 100,000 files on a
  # disk's file system takes a minute).
  if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then
    ts=/dev/shm/pgbuf-hook-memory-$MAJOR
    rm -rf "$ts"; mkdir -p "$ts"; chown "$PG_USER": "$ts"
    psql_ -d postgres -q -c "drop database if exists memory" -c "drop tablespace if exists memory_ts" \
      -c "create tablespace memory_ts location '$ts'" -c "create database memory tablespace memory_ts"
    db=memory
  fi
  psql_ -d $db -q -c "create extension if not exists buffile_memory"
  n=100000
  # measure METHOD BYTES [PIECE]: the bytes of the contexts holding n open files (the
  # files' own memory is in "pg_buffile files", a child of the test's context)
  measure() {
    psql_ -d $db -At -c "set log_temp_files = -1" -c "set pg_buffile.method = $1" \
      -c "select buffile_memory_open($n, $2, ${3:-0})" \
      -c "select sum(total_bytes) from pg_backend_memory_contexts
          where name in ('BufFile memory test', 'pg_buffile files', 'pg_buffile')" \
      -c "select buffile_memory_close()" | grep -E '^[0-9]+$'
  }
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
  for bytes in 100 10000; do
    off_b=$(measure off $bytes) || die "the memory measure failed (off)"
    lz4_b=$(measure lz4 $bytes) || die "the memory measure failed (lz4)"
    log "$n files of $bytes bytes: stock $((off_b / n)) bytes a file, lz4 $((lz4_b / n)) ($(ratio "$lz4_b" "$off_b")x)"
    awk -v a="$lz4_b" -v b="$off_b" 'BEGIN { exit !(b > 0 && a <= 1.10 * b) }' \
      || die "lz4's files take more than 1.10 times stock's memory"
  done
  # A hash join's batch files: 256 files of 2 MB written 100 bytes at a time in turns, so
  # that their block maps grow in step. Beyond stock's memory a file holds its map, which
  # buffile.h bounds at 16 bytes a block in runs of compressed blocks (18 with a leaf's
  # growth step of an eighth: lz4) and about 4.5 in runs of bare ones (none: 6 allowed):
  # the files within 1.10 times stock's plus that.
  n=256 bytes=$((2 * 1024 * 1024))
  blcksz=$(psql_ -d $db -At -c "show block_size") || die "the server's block size is unknown"
  blocks=$((n * bytes / blcksz))
  off_b=$(measure off $bytes 100) || die "the memory measure failed (off, in turns)"
  for m in none:6 lz4:18; do
    per=${m#*:} m=${m%:*}
    m_b=$(measure $m $bytes 100) || die "the memory measure failed ($m, in turns)"
    log "$n files of $bytes bytes written in turns: stock $((off_b / n)) bytes a file, $m $((m_b / n)) ($(ratio "$m_b" "$off_b")x; $(( (m_b - off_b) / blocks )) bytes more a block)"
    awk -v a="$m_b" -v b="$off_b" -v k="$blocks" -v p="$per" 'BEGIN { exit !(b > 0 && a <= 1.10 * (b + p * k)) }' \
      || die "$m's files written in turns take more than 1.10 times stock's memory plus $per bytes a block"
  done
  stop_server
  if [ -n "$ts" ]; then rm -rf "$ts"; fi
  done_part "memory (100,000 files; 256 written in turns)"
fi
# --- the parts of pg-test/, through the hook ----------------------------------------
# test_part NAME [VAR=VALUE...]: pg-test/NAME.sh against this install with pg_buffile
# (its servers on the extension part's port + 2 and + 3, in $D/test-run).
test_part() {
  local name=$1
  shift
  [ -f "$INST/lib/postgresql/pg_buffile.so" ] || die "no pg_buffile in $INST: run $0 $MAJOR extension first"
  env PGHOOK_INST="$INST" PGHOOK_PORT=$(( $([ "$MAJOR" = 18 ] && echo 54591 || echo 54691) + 2 )) \
    "$@" bash "$PGS/pg-test/$name.sh" || die "pg-test/$name.sh failed through the hook"
}
if want battery; then
  (cd "$B/contrib/pg_stat_statements" && as_user make -s install > "$B/pgss.log" 2>&1) \
    || { tail -20 "$B/pgss.log"; die "contrib's pg_stat_statements does not build"; }
  test_part battery
  done_part "battery (pg-test/battery.sh through pg_buffile)"
fi
if want tpch; then
  # stock: this build with the hook unset (core's own BufFile code, which the part check
  # runs core's suites on); PGHOOK_TPCH_PRISTINE=1: the pristine tree (tag "pristine")
  # built without the hook, a second whole build (451 s on a CI machine of AMD EPYC vCPUs)
  if [ "${PGHOOK_TPCH_PRISTINE:-0}" = 1 ]; then
    built=$(bash "$PGS/pg-hook-pristine.sh" "$MAJOR") || die "the pristine build failed"
    sed '$d' <<< "$built"
    test_part tpch "PG_STOCK_BIN=${built##*$'\n'}/inst-pristine/bin"
  else
    test_part tpch
  fi
  done_part "tpch (pg-test/tpch.sh through pg_buffile)"
fi
if want aborts; then
  test_part aborts
  done_part "aborts (pg-test/aborts.sh through pg_buffile)"
fi
if want tap-stream; then
  test_part tap-stream
  done_part "tap-stream (pg-test/tap-stream.sh through pg_buffile)"
fi
log "pg-hook.sh $MAJOR done in $((SECONDS - t0)) s"
