#!/usr/bin/env bash
# The shared library exports exactly the functions buffile.h declares with
# BF_API, each in the version node of its soname (BUFFILE_<major>), and
# nothing else.  usage: exports.sh LIBRARY HEADER
set -euo pipefail
lib=$1 header=$2
major=$(sed -n 's/^#define BF_VERSION_MAJOR \([0-9]*\)$/\1/p' "$header")
node=BUFFILE_$major
declared=$(grep -oP '^BF_API[^(]*?\K\bbf_\w+(?=\()' "$header" | sort)
dynsyms=$(nm -D --defined-only "$lib" | awk '{print $3}')
bad=$(grep -vxE "bf_[a-z0-9_]+@@$node|$node" <<<"$dynsyms" || true)
if [ -n "$bad" ]; then
  echo "exports.sh: $lib exports symbols other than bf_*@@$node:"
  echo "$bad"
  exit 1
fi
exported=$(grep -oE '^bf_[a-z0-9_]+' <<<"$dynsyms" | sort)
if [ "$declared" != "$exported" ]; then
  echo "exports.sh: declared (<) and exported (>) functions differ:"
  diff <(echo "$declared") <(echo "$exported") || true
  exit 1
fi
echo "exports.sh: $(wc -l <<<"$exported") functions, all declared BF_API, all bf_*@@$node"
