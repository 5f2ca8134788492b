#!/usr/bin/env bash
# Install the built library into a scratch prefix, then build a consumer
# against it twice - with find_package(buffile) and with pkg-config - and
# run both. usage: check.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work/project"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cp "$src/consumer.c" "$work/project/"
cp "$src/CMakeLists.txt.in" "$work/project/CMakeLists.txt"
cmake -S "$work/project" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib" "$work/cmake-build/consumer"
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
cc "$work/project/consumer.c" $(pkg-config --cflags --libs buffile) -o "$work/pc-consumer"
LD_LIBRARY_PATH="$work/prefix/lib" "$work/pc-consumer"
echo "find_package and pkg-config consumers built and ran"
