/*
 * abi.c - what keeps callers built against other headers working: the
 * library's version and the size mechanism of the growable structs (abi.h).
 *
 * Why struct_size and not a version number: the size alone tells which
 * fields a caller's struct holds, because fields are only ever appended,
 * and no table of versions has to be kept in step with the header.
 */
#include "abi.h"

#include <stdio.h>
#include <string.h>

#include "buffile.h"

/*
 * Each growable struct ends exactly at its last field, so that a field
 * appended later starts at or past every older sizeof and never in an older
 * caller's tail padding, which a struct copy need not have kept at zero.
 * Appending a field: name it here (and pad the struct if it then has a tail).
 */
#define BF_ENDS_AT(type, last)                                                                     \
    _Static_assert(sizeof(type) == offsetof(type, last) + sizeof(((type *)0)->last),               \
                   #type " must end at its last field, " #last)
BF_ENDS_AT(bf_space_options, key);
BF_ENDS_AT(bf_file_options, seal);
BF_ENDS_AT(bf_auto_device, transfer_windows);
BF_ENDS_AT(bf_stats, blocks_sealed);

unsigned bf_version_number(void)
{
    return BF_VERSION_NUMBER;
}

int bf_abi_read(void *dst, size_t known, const void *src, const char *type, const char *init,
                char *why, size_t whylen)
{
    uint32_t size;
    memcpy(&size, src, sizeof(size));
    if (size < sizeof(size) || size > BF_ABI_SIZE_MAX) {
        snprintf(why, whylen,
                 "%s.struct_size is %u, not a size any buffile.h gives it (fill the struct "
                 "with %s)",
                 type, (unsigned)size, init);
        return BF_EINVAL;
    }
    const unsigned char *p = src;
    for (size_t i = known; i < size; i++)
        if (p[i] != 0) {
            snprintf(why, whylen,
                     "%s of %u bytes sets a field past the %zu bytes this library (%d.%d.%d) "
                     "knows: built against a newer buffile.h",
                     type, (unsigned)size, known, BF_VERSION_MAJOR, BF_VERSION_MINOR,
                     BF_VERSION_PATCH);
            return BF_EINVAL;
        }
    memcpy(dst, src, size < known ? size : known);
    /* The size read is the caller's; what the library holds now is its own layout. */
    uint32_t own = (uint32_t)known;
    memcpy(dst, &own, sizeof(own));
    return BF_OK;
}

void bf_abi_write(void *dst, size_t size, const void *src, size_t known)
{
    if (size <= known) {
        memcpy(dst, src, size);
    } else {
        memcpy(dst, src, known);
        memset((unsigned char *)dst + known, 0, size - known);
    }
}
