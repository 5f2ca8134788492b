#!/usr/bin/env bash
# Install the built library into a scratch prefix and build and run consumers
# against it (consume.sh). usage: check.sh BUILD_DIR WORK_DIR
set -euo pipefail
build=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
bash "$(dirname "$0")/consume.sh" "$work/prefix" "$work/consumer"
