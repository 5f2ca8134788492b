#!/usr/bin/env bash
# The ABI check against deliberate changes: each case copies the library's
# sources, changes them, builds the shared library and runs scripts/abi-check
# on the copy (the unchanged tree is ctest's abi_baseline). Breaks must fail (and --update must refuse them) unless the
# soname moves; compatible additions must pass once the minor version moved
# and --update recorded them.  usage: check-selftest.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src=$(cd "$1" && pwd) work=$2
rm -rf "$work" && mkdir -p "$work/base/scripts"
cp -r "$src"/{CMakeLists.txt,cmake,include,src,bench,abi,debian} "$work/base/"
cp "$src/scripts/abi-check" "$work/base/scripts/"

# sub FILE OLD NEW: replace the one occurrence of OLD, which must be there.
sub() {
  python3 - "$@" <<'EOF'
import sys
path, old, new = sys.argv[1:]
s = open(path).read()
if s.count(old) != 1:
    sys.exit(f"check-selftest: {old!r} is not in {path} exactly once")
open(path, "w").write(s.replace(old, new))
EOF
}
fresh() { rm -rf "$work/$1" && cp -r "$work/base" "$work/$1" && cd "$work/$1"; }
failed=0
# expect CASE STATUS TEXT [--update]: run the check in the current copy.
expect() {
  local name=$1 want=$2 text=$3 got=0
  shift 3
  python3 scripts/abi-check "$@" >out.txt 2>&1 || got=$?
  if [ "$got" -ne "$want" ] || ! grep -qF -- "$text" out.txt; then
    echo "FAIL $name: exit $got (want $want), output (want '$text'):"
    sed 's/^/    /' out.txt
    failed=$((failed + 1))
  else
    echo "ok   $name: exit $got, '$text'"
  fi
}
append_field() { # a field appended to bf_space_options behind struct_size
  sub include/buffile.h '} bf_space_options;' '    void *io_hook;
} bf_space_options;'
  sed -i -E 's/BF_ENDS_AT\(bf_space_options, [a-z_]+\);/BF_ENDS_AT(bf_space_options, io_hook);/' src/abi.c
}
# The tree's version, and the next minor and major versions.
ver() { sed -nE 's/^#define BF_VERSION_(MAJOR|MINOR) ([0-9]+)$/\2/p' include/buffile.h | paste -sd' '; }
read -r MAJ MIN < <(cd "$work/base" && ver)
NEXT=$MAJ.$((MIN + 1)).0
minor() { sub include/buffile.h "#define BF_VERSION_MINOR $MIN" "#define BF_VERSION_MINOR $((MIN + 1))"; }
# unreleased VERSION: debian/changelog gets a newest entry, not released yet.
unreleased() {
  printf 'buffile (%s) UNRELEASED; urgency=medium\n\n  * Work in progress.\n\n -- t <t@example.org>  Tue, 01 Dec 2026 00:00:00 +0000\n\n' "$1" |
    cat - debian/changelog >changelog.new && mv changelog.new debian/changelog
}
reorder() {
  sub include/buffile.h '    uint32_t block_size;               /* default logical block size of files */
    bf_codec codec;                    /* default codec of files */' '    bf_codec codec;                    /* default codec of files */
    uint32_t block_size;               /* default logical block size of files */'
}

fresh reorder
reorder
expect "two fields of bf_space_options swapped" 1 "breaks the ABI of libbuffile.so.$MAJ"
cp abi/libbuffile-*.abi before.abi
expect "--update of that break" 1 "breaks the ABI" --update
if ! cmp -s before.abi abi/libbuffile-*.abi; then
  echo "FAIL --update of a break rewrote the baseline"
  failed=$((failed + 1))
fi

fresh retype
append_field
minor
sub include/buffile.h '    uint64_t temp_limit;  ' '    int64_t temp_limit;   '
expect "field appended, another retyped" 1 "type of 'uint64_t temp_limit' changed"

fresh enum
sub include/buffile.h 'BF_EBUSY = -12,' 'BF_EBUSY = -14,'
expect "status code renumbered" 1 "constant BF_EBUSY was '-12', now '-14'"

fresh frozen
sub include/buffile.h '    void (*free_fn)(void *ctx, void *ptr);
    void *ctx;
};' '    void (*free_fn)(void *ctx, void *ptr);
    void *ctx;
    void *aligned_alloc_fn;
};'
sub src/alloc.c 'libc_free, NULL}' 'libc_free, NULL, NULL}'
expect "field appended to bf_allocator (not behind a size)" 1 "breaks the ABI"

fresh grow
# The tree's own version counts as released here, whatever debian/changelog says of it.
sed -i '1s/UNRELEASED/unstable/' debian/changelog
append_field
sub include/buffile.h 'BF_API int bf_sweep(const char *parent);' 'BF_API int bf_sweep(const char *parent);
BF_API int bf_sweep_count(const char *parent);'
printf 'int bf_sweep_count(const char *parent)\n{\n    (void)parent;\n    return 0;\n}\n' >>src/sweep.c
sub include/buffile.h '#define BF_SEEK_END 2' '#define BF_SEEK_END 2
#define BF_SEEK_HOLE 3'
expect "additions without a new minor version" 1 "additions need a newer minor version"
minor
unreleased "$NEXT"
expect "additions in $NEXT not recorded" 1 "record them with --update"
expect "additions recorded" 0 "recorded the ABI of $NEXT" --update
# The record names source files relative to the tree, never by this machine's directories.
if grep -n "path='/" abi/libbuffile-*.abi | head -3 | grep .; then
  echo "FAIL the recorded ABI names source files by absolute path"
  failed=$((failed + 1))
else
  echo "ok   the recorded ABI names source files relative to the tree"
fi
expect "after --update" 0 "is the baseline's"
# Another addition to $NEXT (another branch's, merged) while it is unreleased: recorded
# without a version of its own; once it is released, the next one needs a newer minor version.
sub include/buffile.h '#define BF_SEEK_HOLE 3' '#define BF_SEEK_HOLE 3
#define BF_SEEK_DATA 4'
expect "addition to the unreleased "$NEXT"" 0 "recorded the ABI of $NEXT" --update
sed -i '1s/UNRELEASED/unstable/' debian/changelog
sub include/buffile.h '#define BF_SEEK_DATA 4' '#define BF_SEEK_DATA 4
#define BF_SEEK_NEXT 5'
expect "addition to the released $NEXT" 1 "additions need a newer minor version"

fresh soname
reorder
sub include/buffile.h "#define BF_VERSION_MAJOR $MAJ" "#define BF_VERSION_MAJOR $((MAJ + 1))"
[ "$MIN" -eq 0 ] || sub include/buffile.h "#define BF_VERSION_MINOR $MIN" "#define BF_VERSION_MINOR 0"
expect "break with a new soname, not recorded" 1 "the soname moved from libbuffile.so.$MAJ to libbuffile.so.$((MAJ + 1))"
expect "break with a new soname, recorded" 0 "recorded the ABI of $((MAJ + 1)).0.0" --update
expect "after --update" 0 "is the baseline's"

[ "$failed" -eq 0 ] && echo "abi-check self-test: every case as expected"
exit $((failed > 0))
