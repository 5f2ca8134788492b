#!/usr/bin/env bash
# Build tests/install/consumer.c against an installed libbuffile - with
# find_package(buffile) (shared and static targets) and with pkg-config - and
# run each build, checking that the shared ones load the library under
# PREFIX.  usage: consume.sh PREFIX WORK_DIR   (PREFIX /usr: the system's,
# as the Debian packages install it)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=$1 work=$2
rm -rf "$work" && mkdir -p "$work/project"
cp "$here/consumer.c" "$work/project/"
cp "$here/CMakeLists.txt.in" "$work/project/CMakeLists.txt"
cmake_args=() run_env=()
if [ "$prefix" != /usr ]; then
  cmake_args=(-DCMAKE_PREFIX_PATH="$prefix")
  export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
  run_env=(env LD_LIBRARY_PATH="$prefix/lib")
fi
cmake -S "$work/project" -B "$work/cmake-build" "${cmake_args[@]}" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
cc "$work/project/consumer.c" $(pkg-config --cflags --libs buffile) -o "$work/pc-consumer"
for exe in "$work/cmake-build/consumer" "$work/pc-consumer"; do
  lib=$("${run_env[@]}" ldd "$exe" | awk '$1 == "libbuffile.so.1" {print $3}')
  case "$(readlink -f "$lib")" in
    "$(readlink -f "$prefix")"/lib/*) ;;
    *) echo "consume.sh: $exe loads libbuffile.so.1 from '$lib', not from $prefix"; exit 1 ;;
  esac
  "${run_env[@]}" "$exe"
done
if grep -q libbuffile <<< "$(ldd "$work/cmake-build/consumer_static")"; then
  echo "consume.sh: consumer_static links libbuffile.so"; exit 1
fi
"$work/cmake-build/consumer_static"
echo "consume.sh: find_package (shared, static) and pkg-config consumers built against $prefix and ran"
