#!/usr/bin/env bash
# Install dependencies, build, and run every test with ctest.
#   scripts/run-tests.sh             release build in build/
#   scripts/run-tests.sh --sanitize  ASan+UBSan build with clang in build-asan/ (clang's
#                                    UBSan also flags pointer arithmetic on NULL)
#   scripts/run-tests.sh --tsan      ThreadSanitizer build in build-tsan/, the tests
#                                    labelled "threads" (threads and forked readers)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
dir=build
flags=()
select=()
case "${1:-}" in
  "") ;;
  --sanitize)
    dir=build-asan
    flags=(-DBF_SANITIZE=ON -DCMAKE_C_COMPILER=clang)
    ;;
  --tsan) dir=build-tsan flags=(-DBF_TSAN=ON) select=(-L threads) ;;
  *) echo "run-tests.sh: unknown option '$1' (--sanitize, --tsan)" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${flags[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
cd "$dir"
ctest --output-on-failure -j"$(nproc)" --timeout 1200 "${select[@]}"
