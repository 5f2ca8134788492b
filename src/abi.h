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
 * Read the caller's struct `src` (starting with its uint32_t struct_size) over `dst`,
 * the library's layout of `known` bytes already holding the defaults. A
 * struct from an older header overwrites only its own bytes; one from a
 * newer header must hold zeros past `known`. On BF_EINVAL (a struct_size
 * no header gives; a field this library does not know is set) `dst` is
 * unchanged and `why` says which, naming the struct as `type` and the
 * function that fills it as `init`.
 */
int bf_abi_read(void *dst, size_t known, const void *src, const char *type, const char *init,
                char *why, size_t whylen);

/*
 * Write the library's struct `src` (`known` bytes) into the caller's struct
 * `dst` of `size` bytes: as much as fits, and zeros for the fields of a
 * newer header that this library does not know.
 */
void bf_abi_write(void *dst, size_t size, const void *src, size_t known);

#endif
