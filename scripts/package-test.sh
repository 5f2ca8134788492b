#!/usr/bin/env bash
# The Debian packages, end to end: build every package of debian/control
# (dpkg-buildpackage -us -uc -b) in a copy of the tree, lint them (lintian: no
# error and no warning), remove the build tree, install the packages (dpkg -i),
# build and run consumers against the installed library
# (tests/install/consume.sh: find_package, shared and static, without
# pkg-config; pkg-config; bfsqlite.h; .load bfsqlite in the sqlite3 shell),
# run README's SQLite example in the sqlite3 shell, run the installed tools,
# check the documentation, then purge the packages so that the machine is as
# before.
#   scripts/package-test.sh [WORK_DIR]    (default build-deb/; the .debs stay there)
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
work=$(realpath -m "${1:-build-deb}")
bash scripts/install-deps.sh --packaging
# debian/control is the list of build dependencies; install-deps.sh should cover it.
dpkg-checkbuilddeps || DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -qq "$top"

step() { printf 'package-test: %s (%ds)\n' "$1" "$SECONDS"; }
ver=$(dpkg-parsechangelog -l debian/changelog -S Version)
# Every binary package of debian/control, and where its .deb is.
mapfile -t pkgs < <(sed -n 's/^Package: //p' debian/control)
deb_of() {
  local arch
  arch=$(awk -v p="$1" '$1 == "Package:" {cur = $2} $1 == "Architecture:" && cur == p {print $2}' \
         debian/control)
  [ "$arch" = all ] || arch=$(dpkg --print-architecture)
  echo "$work/${1}_${ver}_${arch}.deb"
}
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }
purge() { dpkg --purge "${pkgs[@]}" >/dev/null 2>&1 || true; }
for p in "${pkgs[@]}"; do
  if installed "$p"; then
    echo "package-test: $p is installed (left by an interrupted run?): purging it first"
    purge
  fi
done
trap purge EXIT

rm -rf "$work" && mkdir -p "$work/buffile-$ver"
# The tree as it is (committed or not, ignored files aside), without build directories.
git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$work/buffile-$ver"
step "building the packages of $ver"
if ! (cd "$work/buffile-$ver" && dpkg-buildpackage -us -uc -b -j2) >"$work/build.log" 2>&1; then
  tail -40 "$work/build.log"
  echo "package-test: dpkg-buildpackage failed (all of it in $work/build.log)" >&2
  exit 1
fi
step "lintian"
lintian --fail-on error,warning --display-info --pedantic \
  "$work/buffile_${ver}_$(dpkg --print-architecture).changes" | tee "$work/lintian.txt"
count() { grep -c "^$1:" "$work/lintian.txt" || true; }
echo "package-test: lintian: $(count E) errors, $(count W) warnings, $(count I) infos," \
     "$(count P) pedantic"
rm -rf "$work/buffile-$ver"

step "installing"
debs=()
for p in "${pkgs[@]}"; do debs+=("$(deb_of "$p")"); done
dpkg -i "${debs[@]}" >/dev/null
bash tests/install/consume.sh /usr "$work/consumer"

step "README's SQLite example in the sqlite3 shell"
# The sh block after the marker line in README.md, run as written in a scratch directory.
mkdir -p "$work/readme"
awk '/<!-- package-test: sqlite example -->/ {on = 1; next}
     on && /^```sh/ {inside = 1; next}
     inside && /^```/ {exit}
     inside {print}' README.md >"$work/readme/example.sh"
[ -s "$work/readme/example.sh" ] || { echo "package-test: no SQLite example in README.md" >&2; exit 1; }
(cd "$work/readme" && bash -e example.sh) | tee "$work/readme/out.txt"
if ! grep -Eq '^zstd\|[1-9][0-9]*\|[0-9]+\|[0-9]+$' "$work/readme/out.txt"; then
  echo "package-test: README's SQLite example did not print zstd's temp files and bytes" >&2
  exit 1
fi

step "the installed tools"
# (Each output is kept whole before it is searched: grep -q in a pipe would end the writer.)
for tool in spillbench tpchgen buffile-sweep; do
  version=$("$tool" --version)
  if [[ "$version" != "$tool (buffile) ${ver%%-*}"$'\n'* ]]; then
    echo "package-test: $tool --version says '$version'" >&2
    exit 1
  fi
done
tpchgen --sf=0.01 --out="$work/tpch-tbl" >/dev/null
test -s "$work/tpch-tbl/lineitem.tbl"
# A tbl directory is refused with the command that writes what spillbench reads.
if spillbench --data-dir="$work/tpch-tbl" 2>"$work/refused.txt"; then
  echo "package-test: spillbench ran on a tbl directory" >&2
  exit 1
fi
grep -q -- "--format=bin" "$work/refused.txt"
# Two queries that spill at 64 KiB, each checked against an unlimited run.
spillbench --sf=0.01 --data-dir="$work/tpch-bin" --queries=3,18 --work-mem=64K --codec=lz4 \
  --temp-dir="$work" --verify --format=csv >"$work/spillbench.csv"
if [ "$(awk -F, '$1 ~ /^Q/ && $4 > 0 && $23 == "ok"' "$work/spillbench.csv" | wc -l)" -ne 2 ]; then
  cat "$work/spillbench.csv"
  echo "package-test: the installed spillbench did not spill and verify Q3 and Q18" >&2
  exit 1
fi
tpch-report --help >/dev/null
# Its statistics are paired.c's, in a private library the package finds from where it is.
env -u BUFFILE_PAIRED_LIB PYTHONPATH=/usr/share/buffile /usr/bin/python3 -c \
  'from tpch_report import stats; assert stats.ratio([11, 22], [10, 20]).n == 2' \
  || { echo "package-test: the installed tpch-report cannot load libpaired.so" >&2; exit 1; }
man -w spillbench tpchgen tpch-report buffile-sweep >/dev/null
# buffile-sweep lists a parent (its header line, at least) and says nothing is left.
buffile-sweep --dir="$work" >"$work/sweep.txt" 2>"$work/sweep.err"
grep -q $'^directory\tpid\tstate\tbytes\tfiles\tage$' "$work/sweep.txt"
grep -q "space director" "$work/sweep.err"
# The man pages explain the columns (help2man made them from --help).
if ! grep -q "phys/log" <<< "$(man spillbench 2>/dev/null)"; then
  echo "package-test: man spillbench does not describe paired mode's columns" >&2
  exit 1
fi
# buffile-tools needs no plotting library; buffile-report does.
if grep -q matplotlib <<< "$(dpkg-query -W -f='${Depends}' buffile-tools)"; then
  echo "package-test: buffile-tools depends on matplotlib" >&2
  exit 1
fi
for doc in README.md.gz NEWS.md.gz docs/design.md.gz docs/format.md.gz \
           integrations/sqlite/README.md.gz; do
  [ -e "/usr/share/doc/buffile-doc/$doc" ] || { echo "package-test: no $doc in buffile-doc" >&2; exit 1; }
done

step "purging"
purge
trap - EXIT
for p in "${pkgs[@]}"; do
  if installed "$p"; then
    echo "package-test: $p is still installed after the purge" >&2
    exit 1
  fi
done
for f in /usr/include/buffile.h /usr/include/bfsqlite.h \
         "/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/bfsqlite.so"; do
  [ ! -e "$f" ] || { echo "package-test: $f stayed" >&2; exit 1; }
done
step "done: built, linted, installed, consumed and purged $ver"
