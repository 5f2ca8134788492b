#!/usr/bin/env bash
# The version is buffile.h's BF_VERSION_* alone: everything that states it
# must agree - debian/changelog's newest entry and NEWS.md's newest heading
# (both also on whether it is released yet), the ABI baseline (no newer than
# the version, same major), the built library's file name and soname, its
# pkg-config file, and the Debian package that carries the soname.
#   usage: version.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
part() { sed -n "s/^#define BF_VERSION_$1 \([0-9]*\)$/\1/p" "$src/include/buffile.h"; }
major=$(part MAJOR) v=$(part MAJOR).$(part MINOR).$(part PATCH)
bad=0
check() { # what found wanted
  if [ "$2" != "$3" ]; then echo "version.sh: $1: '$2', wanted '$3'"; bad=1; fi
}
check "debian/changelog" "$(sed -n '1s/^buffile (\([^)]*\)).*/\1/p' "$src/debian/changelog")" "$v"
check "NEWS.md" "$(sed -n 's/^## \([0-9][0-9.]*\) .*/\1/p' "$src/NEWS.md" | head -1)" "$v"
# A version in the works is UNRELEASED in debian/changelog and "(unreleased)" in NEWS.md.
released() { if grep -q "$2" <<<"$1"; then echo no; else echo yes; fi; }
check "NEWS.md, is $v released?" "$(released "$(grep -m1 '^## ' "$src/NEWS.md")" '(unreleased)')" \
  "$(released "$(head -1 "$src/debian/changelog")" ') UNRELEASED;')"
lib=$(readlink -f "$build/src/libbuffile.so")
check "the built library's name" "${lib##*/}" "libbuffile.so.$v"
check "its soname" "$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')" \
  "libbuffile.so.$major"
check "buffile.pc" "$(sed -n 's/^Version: //p' "$build/src/buffile.pc")" "$v"
check "debian/control's library package" \
  "$(sed -n 's/^Package: \(libbuffile[0-9]*\)$/\1/p' "$src/debian/control")" "libbuffile$major"
check "debian/libbuffile$major.symbols" \
  "$(head -1 "$src/debian/libbuffile$major.symbols" 2>/dev/null | cut -d' ' -f1-2)" \
  "libbuffile.so.$major libbuffile$major"
base=$(ls "$src"/abi/libbuffile-*.abi)
bv=$(basename "$base" .abi) bv=${bv#libbuffile-}
check "the ABI baseline's major version" "${bv%%.*}" "$major"
if [ "$(printf '%s\n%s\n' "$bv" "$v" | sort -V | tail -1)" != "$v" ]; then
  echo "version.sh: the ABI baseline is of $bv, newer than buffile.h's $v"
  bad=1
fi
[ "$bad" -eq 0 ] && echo "version.sh: $v everywhere (ABI baseline of $bv)"
exit "$bad"
