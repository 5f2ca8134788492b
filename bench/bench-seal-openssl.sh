#!/usr/bin/env bash
# bench-seal-openssl.sh - what sealing costs with the machine's libcrypto and
# with a newer OpenSSL's, side by side. A benchmark, not a test.
#
#   bench/bench-seal-openssl.sh [--suites="forky sid"] [--mib=256] [--rounds=15]
#       [--temp-dir=DIR]
#
# Debian 12's OpenSSL 3.0 has no AES-GCM path for VAES/AVX-512 (it came in
# 3.1), so on such a CPU the cipher, not the library, decides what sealing
# costs. This fetches the newest source of Debian's `openssl` package in the
# archive's SUITES (its own lists, no host apt file written: see
# scripts/debian-source.sh), builds its libcrypto only (upstream source,
# build/openssl/), and runs bench_seal twice: with the machine's libcrypto,
# then with the new one through LD_LIBRARY_PATH (the same soname,
# libcrypto.so.3, so the same binary). Each run names the libcrypto it ran
# with. The library is built and linked against the machine's OpenSSL as
# always; nothing is installed.
#   --suites    suites to take the source from (default "forky sid")
#   --mib, --rounds, --temp-dir   bench_seal's (defaults 256, 15, build-rel/bench-tmp)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/scripts/debian-source.sh"
SUITES="forky sid" MIB=256 ROUNDS=15 TMPD=$TOP/build-rel/bench-tmp
for a in "$@"; do
  case $a in
    --suites=*) SUITES=${a#*=} ;;
    --mib=*) MIB=${a#*=} ;;
    --rounds=*) ROUNDS=${a#*=} ;;
    --temp-dir=*) TMPD=${a#*=} ;;
    *) echo "bench-seal-openssl.sh: unknown argument $a (see the header of the script)" >&2; exit 2 ;;
  esac
done
OB=$TOP/build/openssl
t0=$SECONDS
phase() { echo "[$(date +%H:%M:%S)] $1 ($((SECONDS - t0)) s so far)"; }

if [ "$(id -u)" -eq 0 ]; then
  dpkg -s build-essential dpkg-dev perl libssl-dev cmake pkg-config > /dev/null 2>&1 ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential dpkg-dev perl libssl-dev \
      cmake pkg-config > /dev/null
fi
phase "fetching the source of openssl from $SUITES"
VER=$(DEBIAN_SOURCE_SUITES=$SUITES debian_source_fetch "$OB/apt" "$OB/dl" openssl) ||
  { echo "bench-seal-openssl.sh: no source of openssl in $SUITES can be fetched" >&2; exit 1; }
SRC=$OB/src-${VER#*:}
if [ ! -f "$SRC/libcrypto.so.3" ]; then
  rm -rf "$SRC"
  dpkg-source -x --skip-patches "$OB/dl/openssl_${VER#*:}.dsc" "$SRC" > /dev/null
  phase "building libcrypto of openssl $VER in $SRC"
  (cd "$SRC" && ./Configure linux-x86_64 shared no-tests no-docs > "$OB/configure.log" 2>&1 &&
     make -j"$(nproc)" build_libs > "$OB/make.log" 2>&1) ||
    { echo "bench-seal-openssl.sh: building openssl $VER failed (see $OB/*.log)" >&2; exit 1; }
fi
phase "building bench_seal (build-rel)"
cmake -S "$TOP" -B "$TOP/build-rel" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$TOP/build-rel" -j"$(nproc)" --target bench_seal > /dev/null
mkdir -p "$TMPD"
BENCH=("$TOP/build-rel/bench/bench_seal" --mib="$MIB" --rounds="$ROUNDS" --temp-dir="$TMPD")
phase "bench_seal, the machine's libcrypto"
"${BENCH[@]}"
phase "bench_seal, openssl $VER's libcrypto"
LD_LIBRARY_PATH=$SRC "${BENCH[@]}"
phase "done"
