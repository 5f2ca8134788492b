#!/usr/bin/env bash
# The Debian packages, end to end: build libbuffile1, libbuffile-dev and
# buffile-tools from debian/ (dpkg-buildpackage -us -uc -b) in a copy of the
# tree, lint them (lintian: no error), remove the build tree, install the
# packages (dpkg -i), build and run a consumer against the installed
# library (tests/install/consume.sh: find_package, shared and static, and
# pkg-config), run the installed tools, then purge the packages so that the
# machine is as before.
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
pkgs=(buffile-tools libbuffile-dev "libbuffile$(sed -n 's/^#define BF_VERSION_MAJOR //p' include/buffile.h)")
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
lintian --fail-on error --display-info --pedantic "$work/buffile_${ver}_amd64.changes" | tee "$work/lintian.txt"
count() { grep -c "^$1:" "$work/lintian.txt" || true; }
echo "package-test: lintian: $(count E) errors, $(count W) warnings, $(count I) infos," \
     "$(count P) pedantic"
rm -rf "$work/buffile-$ver"

step "installing"
debs=()
for p in "${pkgs[@]}"; do debs+=("$work/${p}_${ver}_amd64.deb"); done
dpkg -i "${debs[@]}" >/dev/null
bash tests/install/consume.sh /usr "$work/consumer"
step "the installed tools"
tpchgen --sf=0.01 --out="$work/tpch-tbl" >/dev/null
test -s "$work/tpch-tbl/lineitem.tbl"
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
man -w spillbench tpchgen tpch-report >/dev/null

step "purging"
purge
trap - EXIT
for p in "${pkgs[@]}"; do
  if installed "$p"; then
    echo "package-test: $p is still installed after the purge" >&2
    exit 1
  fi
done
[ ! -e /usr/include/buffile.h ] || { echo "package-test: /usr/include/buffile.h stayed" >&2; exit 1; }
step "done: built, linted, installed, consumed and purged $ver"
