#!/usr/bin/env bash
# Install dependencies, build, and run the main job: spillbench on a small
# TPC-H scale (data generated on first run into tpch-data/). Extra
# arguments go to spillbench, e.g. scripts/run-main.sh --codec=zstd --sf=1
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
exec ./build/tpch/exec/spillbench --codec=lz4 --work-mem=4MB "$@"
