/*
 * abi.h - reading and writing the caller's public structs whatever header
 * version it was compiled with.
 *
 * The growable structs of buffile.h (bf_space_options, bf_file_options,
 * bf_auto_device) start with struct_size, the sizeof the caller's header
 * gave them; bf_stats is written through a size the header's macros pass.
 * Invariants: the library reads and writes only the first min(caller's
 * size, library's size) bytes of a caller's struct, and looks past its own
 * size only to check that a newer caller left what it does not know at zero;
 * fields a caller's struct does not reach take the library's defaults.
 */
#ifndef BF_ABI_H
#define BF_ABI_H

#include <stddef.h>
#include <stdint.h>

/*
 * Largest struct_size taken as a size at all: far more than any version of
 * these structs will have, so an uninitialised struct_size is refused rather
 * than scanned.
 */
#define BF_ABI_SIZE_MAX 4096u

/*
 * A growable struct as the library reads it: its name and the function that
 * fills it (for messages), the library's own size and alignment, and the
 * sizes released headers gave it, ascending, the last one `known`.
 */
typedef struct bf_abi_type {
    const char *name;
    const char *init;
    size_t known;
    size_t align;
    size_t nsizes;
    size_t sizes[4];
} bf_abi_type;

extern const bf_abi_type bf_abi_space_options, bf_abi_file_options, bf_abi_auto_device;

/*
 * Read the caller's struct `src` (starting with its uint32_t struct_size)
 * over `dst`, the library's layout of t->known bytes already holding the
 * defaults. A struct from an older header overwrites only its own bytes,
 * and its struct_size must be one that a released header gave (a size that
 * ends inside a field would tear it: half a pointer is a wild one); one from
 * a newer header must be a multiple of the struct's alignment, as any
 * sizeof is, and hold zeros past `known`. On BF_EINVAL `dst` is unchanged
 * and `why` says which, naming the struct and the function that fills it.
 */
int bf_abi_read(void *dst, const bf_abi_type *t, const void *src, char *why, size_t whylen);

/*
 * Write the library's struct `src` (`known` bytes) into the caller's struct
 * `dst` of `size` bytes: as much as fits, and zeros for the fields of a
 * newer header that this library does not know.
 */
void bf_abi_write(void *dst, size_t size, const void *src, size_t known);

#endif
