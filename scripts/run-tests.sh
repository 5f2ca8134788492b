#!/usr/bin/env bash
# Install dependencies, build, and run every test with ctest.
#   scripts/run-tests.sh             release build in build/
#   scripts/run-tests.sh --sanitize  ASan+UBSan build with clang in build-asan/ (clang's
#                                    UBSan also flags pointer arithmetic on NULL)
#   scripts/run-tests.sh --tsan      ThreadSanitizer build in build-tsan/, the tests
#                                    labelled "threads" (threads and forked readers)
#   scripts/run-tests.sh --deep      release build in build/, then the model tests run
#                                    longer than ctest runs them: the file model's 4 and
#                                    8 KiB cases at 1,000 sequences (ctest: 12), the
#                                    file-set model at 1,500 more (ctest: 120), then the
#                                    4 KiB cases and the file-set model with 2 workers at
#                                    500; ~4 min.
#                                    Seeded as ever: a failure prints the seed that
#                                    replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
dir=build
flags=()
select=()
deep=0
case "${1:-}" in
  "") ;;
  --deep) deep=1 ;;
  --sanitize)
    dir=build-asan
    flags=(-DBF_SANITIZE=ON -DCMAKE_C_COMPILER=clang)
    ;;
  --tsan) dir=build-tsan flags=(-DBF_TSAN=ON) select=(-L threads) ;;
  *) echo "run-tests.sh: unknown option '$1' (--sanitize, --tsan, --deep)" >&2; exit 2 ;;
esac
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${flags[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
cd "$dir"
if [ "$deep" = 1 ]; then
  # The 4 and 8 KiB cases run fastest (64 KiB blocks take most of the model's time), and
  # there a page's room after a short tail is much of a block: a room ending at its
  # segment's end read back as "segment truncated" in 2 of the 4 KiB cases' 7,200
  # sequences at 400, none in the 216 that ctest runs (tests/test_file.c,
  # test_tail_room_at_a_segment_end).
  BF_TEST='model_*_4k' BF_MODEL_SEQS=1000 tests/test_model
  BF_TEST='model_*_8k' BF_MODEL_SEQS=1000 tests/test_model
  BF_TEST=test_model BF_FSMODEL_SEQS=1500 BF_FSMODEL_FIRST=120 tests/test_fsmodel
  # With two of the space's workers: blocks commit later, in batches (ctest: 3 sequences
  # of the file model and 25 of the file-set model a worker count).
  BF_TEST_WORKERS=2 BF_TEST='model_*_4k' BF_MODEL_SEQS=500 tests/test_model
  BF_TEST_WORKERS=2 BF_TEST=test_model BF_FSMODEL_SEQS=500 BF_FSMODEL_FIRST=2000 \
    tests/test_fsmodel
  exit 0
fi
ctest --output-on-failure -j"$(nproc)" --timeout 1200 "${select[@]}"
