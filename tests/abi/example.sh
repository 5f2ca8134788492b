#!/usr/bin/env bash
# The example at the top of buffile.h is a whole program: cut it out of the
# header's comment, build it against the tree's shared library with every
# warning an error (C11, as the header says), run it and check what it prints.
#   usage: example.sh HEADER LIBRARY WORK_DIR
set -euo pipefail
header=$1 lib=$2 work=$3
rm -rf "$work" && mkdir -p "$work/tmp"
# Its lines are the comment's, " *" and four spaces of indent, from its first
# "#include" to main's closing brace.
sed -n '/^ \*     #include <buffile.h>$/,/^ \*     }$/p' "$header" | sed -E 's/^ \*( {5})?//' \
  >"$work/example.c"
if ! grep -q '^int main(void)$' "$work/example.c"; then
  echo "example.sh: no example program found in $header"
  exit 1
fi
"${CC:-cc}" -std=c11 -Wall -Wextra -pedantic -Werror -I "$(dirname "$header")" \
  "$work/example.c" -o "$work/example" "$lib" -Wl,-rpath,"$(dirname "$lib")"
out=$(TMPDIR=$work/tmp "$work/example")
if [ "$out" != "read back: hello" ]; then
  echo "example.sh: the example printed '$out', not 'read back: hello'"
  exit 1
fi
if [ -n "$(ls -A "$work/tmp")" ]; then
  echo "example.sh: the example left $(ls -A "$work/tmp") in its temp directory"
  exit 1
fi
echo "example.sh: the header's example builds without a warning and prints '$out'"
